"""The switch for compiled twins: numba present and EVALSTOP_JIT not 0."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

from evalstop import jit


def test_env_zero_turns_twins_off(monkeypatch):
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    assert not jit.enabled()
    assert jit.twin("evalstop.no_such_module", 10**9) is None  # not even imported


SRTF, PLAN = "evalstop.sim.planned_jit", "evalstop.detectors.cusum_drop_jit"
LONG = "evalstop.detectors.block_cusum_jit"
LOSS, FIXED = "evalstop.sim.planned_jit:loss", "evalstop.sim.planned_jit:fixed"


def _break_even(module: str, n_evals: int, numba_loaded: bool) -> float:
    """Jobs at which twin ``module`` saves exactly what loading it costs."""
    c = jit.COSTS.get(module, jit.UNMEASURED)
    return (c.load_s + (0.0 if numba_loaded else jit.NUMBA_S)) / (c.job_s + n_evals * c.eval_s)


@pytest.fixture
def fresh(monkeypatch):
    """numba "installed", no twin loaded yet, EVALSTOP_JIT unset; twins stand in as the
    harmless module ``evalstop.errors`` so nothing compiles."""
    monkeypatch.delenv("EVALSTOP_JIT", raising=False)
    monkeypatch.setattr(jit, "_installed", lambda: True)
    monkeypatch.setattr(jit, "_loaded", {})
    real = jit.importlib.import_module
    monkeypatch.setattr(jit.importlib, "import_module", lambda name: real("evalstop.errors"))
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    return monkeypatch


@pytest.mark.parametrize("module,n_evals", [(SRTF, 0), (SRTF, 20), (PLAN, 20), (PLAN, 100),
                                            (LONG, 40), (LONG, 100), (LOSS, 0),
                                            (FIXED, 0), ("evalstop.not_measured_jit", 0)])
@pytest.mark.parametrize("numba_loaded", [False, True])
def test_by_default_a_twin_runs_only_above_its_break_even(fresh, module, n_evals,
                                                          numba_loaded):
    if numba_loaded:
        fresh.setitem(sys.modules, "numba", sys.modules["evalstop.errors"])
    assert jit.mode() == "auto"
    n = _break_even(module, n_evals, numba_loaded)
    assert jit.twin(module, int(n * 0.99), n_evals) is None
    assert not jit._loaded  # below: not even imported
    assert jit.twin(module, int(n * 1.01) + 1, n_evals) is sys.modules["evalstop.errors"]
    assert jit.twin(module, 1, n_evals) is not None  # once loaded, it has been paid for


def test_the_measured_thresholds(fresh):
    """The switch's decisions on the sizes that were measured: 1x Philly (82,247 jobs, 20
    evals each) stays in Python, since no twin repaid its load there; SRTF-Est's loop pays
    from about 2.6x (measured faster at 4x), the default rule's plan only past 8x."""
    philly = 82_247
    assert not jit.pays(SRTF, philly, 20) and not jit.pays(PLAN, philly, 20)
    assert jit.pays(SRTF, 4 * philly, 20) and not jit.pays(PLAN, 8 * philly, 20)
    assert jit.pays(PLAN, 20 * philly, 20)
    assert jit.pays(PLAN, philly, 400)  # twenty times the evals per job: the same work
    # the default rule past its first merge (the rows it leaves there, 100 evals each):
    # slower with the twin at 200 jobs, faster from 2,000
    assert not jit.pays(LONG, 200, 100) and jit.pays(LONG, 2_000, 100)
    # SJF-Est on the planned loop's twin: slower at 1x (1.44-1.61x), at 4x 0.87-0.93x;
    # counted at less than the least saving seen, it pays from about 5.2x, or at 1x once
    # numba is in
    assert not jit.pays(FIXED, philly) and not jit.pays(FIXED, 5 * philly)
    assert jit.pays(FIXED, 6 * philly)
    fresh.setitem(sys.modules, "numba", sys.modules["evalstop.errors"])
    assert not jit.pays(FIXED, 0.9 * philly) and jit.pays(FIXED, philly)


def test_every_twin_has_measured_costs():
    """Each compiled twin in the package (``*_jit.py``) has its own entry in ``COSTS``: the
    guess for an unmeasured one (``UNMEASURED``) may keep a twin that pays switched off,
    or switch on one that does not."""
    root = Path(jit.__file__).parent
    twins = {".".join(("evalstop",) + p.relative_to(root).with_suffix("").parts)
             for p in root.rglob("*_jit.py")}
    assert twins and twins <= set(jit.COSTS), twins - set(jit.COSTS)


@pytest.mark.parametrize("flag,n,expected", [("1", 1, True), ("1", 10**9, True),
                                             ("0", 1, False), ("0", 10**9, False),
                                             ("", 1, False), ("", 10**9, True)])
def test_env_forces_or_forbids_at_any_size(fresh, flag, n, expected):
    fresh.setenv("EVALSTOP_JIT", flag)
    assert (jit.twin(SRTF, n, 20) is not None) == expected


def test_a_cold_cache_is_told_once_on_a_terminal(fresh, tmp_path, capsys):
    fresh.setattr(jit, "_cold", lambda module: True)
    fresh.setattr(sys.stderr, "isatty", lambda: True)
    fresh.setenv("EVALSTOP_JIT", "1")
    jit.twin(SRTF, 1)
    jit.twin(SRTF, 1)
    assert capsys.readouterr().err.count(f"compiling {SRTF}") == 1


def test_cold_means_no_fresh_index_beside_the_module(tmp_path, monkeypatch):
    pkg = tmp_path / "coldpkg"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "twin.py").write_text("x = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert jit._cold("coldpkg.twin")
    index = pkg / "__pycache__" / "twin.loop-3.py311.nbi"
    index.write_text("")
    assert not jit._cold("coldpkg.twin")
    os.utime(index, (1, 1))  # older than the source: numba recompiles
    assert jit._cold("coldpkg.twin")
    assert not jit._cold("coldpkg.no_such_twin")
    sys.modules.pop("coldpkg", None)


def test_an_edited_dependency_drops_the_twins_cache(tmp_path, monkeypatch, capsys):
    from types import ModuleType

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)

    (tmp_path / "__pycache__").mkdir()
    twin, dep_file = tmp_path / "twin.py", tmp_path / "dep.py"
    index = [tmp_path / "__pycache__" / f"twin.f-{n}.py311.nbi" for n in (1, 2)]
    other = tmp_path / "__pycache__" / "dep.g-1.py311.nbi"
    for p in (twin, dep_file, *index, other):
        p.write_text("")
    dep = ModuleType("dep")
    dep.__file__ = str(dep_file)
    os.utime(dep_file, (100, 100))
    for p in (*index, other):
        os.utime(p, (200, 200))
    jit.forget_stale(str(twin), dep)
    assert all(p.exists() for p in (*index, other))  # written after the edit: kept
    assert capsys.readouterr().err == ""
    os.utime(dep_file, (300, 300))
    os.utime(index[1], (400, 400))
    jit.forget_stale(str(twin), dep)
    assert not index[0].exists() and index[1].exists() and other.exists()
    assert capsys.readouterr().err.count("compiling twin again") == 1  # said, on a terminal
    jit.forget_stale(str(tmp_path / "missing" / "twin.py"), dep)  # no cache: nothing to do


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


def test_a_use_of_a_twin_loads_its_module_once(fresh):
    """``MODULE:USE`` has its own costs but loads ``MODULE``, which is then paid for, for
    every use."""
    assert jit.pays(FIXED, 10**7) and not jit.pays(FIXED, 10)
    assert not jit.pays(SRTF, 10)
    assert jit.twin(FIXED, 10**7) is sys.modules["evalstop.errors"]
    assert list(jit._loaded) == [SRTF]
    assert jit.pays(SRTF, 10) and jit.pays(FIXED, 10)
    assert jit.twin(SRTF, 1) is jit.twin(FIXED, 1) is sys.modules["evalstop.errors"]
    assert list(jit._loaded) == [SRTF]


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


@pytest.mark.parametrize("numba_loaded", [False, True])
def test_expected_calls_load_the_twins_they_repay_together(fresh, numba_loaded):
    """Four SJF-Est runs on 1x Philly: none repays numba and the twin alone; together with
    the default rule's long twin on 1,000 jobs of 100 evals (which alone does not either)
    they do; calls too small together load nothing."""
    if numba_loaded:
        fresh.setitem(sys.modules, "numba", sys.modules["evalstop.errors"])
    philly = 82_247
    jit.expect([(FIXED, 1_000, 0), None, (LONG, 100, 20)])
    assert not jit._loaded
    if not numba_loaded:
        assert not jit.pays(FIXED, philly)
        jit.expect([(FIXED, philly, 0)] * 2)  # 0.18 CPU-s saved: less than numba's import
        assert not jit._loaded
    jit.expect([(FIXED, philly, 0)] * 4 + [(PLAN, philly, 20), (LONG, 1_000, 100)])
    assert set(jit._loaded) == {SRTF, LONG}  # cusum-drop's plan not repaid at 20 evals a job
    assert jit.twin(FIXED, 1) is jit.twin(LONG, 1, 100) is sys.modules["evalstop.errors"]
    assert jit.twin(PLAN, philly, 20) is None


@pytest.mark.parametrize("flag", ["0", "1"])
def test_expected_calls_change_nothing_unless_the_switch_decides(fresh, flag):
    fresh.setenv("EVALSTOP_JIT", flag)
    jit.expect([(LOSS, 10**7, 0)])
    assert not jit._loaded
