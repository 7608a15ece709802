"""The switch for compiled twins: numba present and EVALSTOP_JIT not 0."""

from __future__ import annotations

import sys
import warnings

import pytest

from evalstop import jit


def test_env_zero_turns_twins_off(monkeypatch):
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    assert not jit.enabled()
    assert jit.twin("evalstop.no_such_module", 10**9) is None  # not even imported


def test_by_default_only_big_workloads_get_a_twin(monkeypatch):
    monkeypatch.delenv("EVALSTOP_JIT", raising=False)
    monkeypatch.setattr(jit, "_installed", lambda: True)
    monkeypatch.setattr(jit, "_loaded", {})
    assert jit.mode() == "auto"
    assert jit.twin("evalstop.no_such_module", jit.MIN_JOBS - 1) is None
    assert jit.twin("evalstop.errors", jit.MIN_JOBS) is sys.modules["evalstop.errors"]
    monkeypatch.setenv("EVALSTOP_JIT", "1")  # any size
    assert jit.twin("evalstop.errors", 1) is sys.modules["evalstop.errors"]


def test_without_numba_there_is_no_twin(monkeypatch):
    monkeypatch.delenv("EVALSTOP_JIT", raising=False)
    monkeypatch.setattr(jit, "_installed", lambda: False)
    assert not jit.enabled()
    assert jit.twin("evalstop.no_such_module", 10**9) is None


def test_a_twin_is_imported_once(monkeypatch):
    monkeypatch.setenv("EVALSTOP_JIT", "1")
    monkeypatch.setattr(jit, "_installed", lambda: True)
    monkeypatch.setattr(jit, "_loaded", {})
    # any importable module stands in for a twin: the switch does not care what it holds
    assert jit.twin("evalstop.errors", 1) is sys.modules["evalstop.errors"]
    assert jit.twin("evalstop.errors", 1) is sys.modules["evalstop.errors"]
    assert list(jit._loaded) == ["evalstop.errors"]


def test_importing_the_package_does_not_import_numba():
    import subprocess

    code = ("import sys, evalstop.sim.engine, evalstop.detectors; "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_twin_that_cannot_import_warns_once_and_the_python_version_runs(monkeypatch):
    monkeypatch.setenv("EVALSTOP_JIT", "1")
    monkeypatch.setattr(jit, "_installed", lambda: True)
    monkeypatch.setattr(jit, "_loaded", {})
    with pytest.warns(RuntimeWarning, match="evalstop.no_such_twin unavailable"):
        assert jit.twin("evalstop.no_such_twin", 1) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jit.twin("evalstop.no_such_twin", 1) is None  # said once
