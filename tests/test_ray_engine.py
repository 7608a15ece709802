"""``--ray``: the engine hook of ``parallel_map``, the one-line error without ray, and a
local Ray (no ADDRESS) giving byte-identical results. The two-node cluster is in
test_ray_cluster.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ray_outputs import assert_same_outputs

from evalstop import parallel
from evalstop.cli.main import main


def _square(x):
    return x * x


def test_engine_hook_takes_every_parallel_map_call_and_restores():
    calls = []

    def fake(fn, items, **kw):
        calls.append((len(items), kw["desc"]))
        return [fn(i) for i in reversed(items)][::-1]

    with parallel.engine(fake):
        assert parallel.parallel_map(_square, [1, 2, 3], workers=4, desc="d") == [1, 4, 9]
    assert calls == [(3, "d")]
    assert parallel.parallel_map(_square, [4], workers=1) == [16]  # local again
    assert calls == [(3, "d")]


@pytest.mark.parametrize("argv", [
    ["reproduce", "--quick", "--only", "main", "--no-detectors"],
    ["bench-detectors", "--quick"],
])
def test_ray_missing_is_one_line_naming_the_extra(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    out = tmp_path / "o"
    rc = main([*argv, "--out", str(out), "--ray", "127.0.0.1:1"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "pip install 'evalstop[ray]'" in err
    assert not out.exists()  # refused before any work


def test_ray_option_takes_an_optional_address():
    from evalstop.cli.main import build_parser

    parser = build_parser("reproduce")
    assert parser.parse_args(["reproduce"]).ray is None
    assert parser.parse_args(["reproduce", "--ray"]).ray == ""
    assert parser.parse_args(["reproduce", "--ray", "h:6379"]).ray == "h:6379"


REPRODUCE = ["reproduce", "--quick", "--only", "main", "--seeds", "3", "--no-detectors",
             "--no-progress"]


def test_local_ray_gives_the_local_run_byte_for_byte(tmp_path):
    pytest.importorskip("ray")
    assert main([*REPRODUCE, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
           "RAY_USAGE_STATS_ENABLED": "0"}
    # A subprocess: it starts (and must shut down) its own local Ray, 2 CPUs, no address.
    proc = subprocess.run([sys.executable, "-m", "evalstop.cli.main", *REPRODUCE, "--ray",
                           "--out", str(tmp_path / "ray")], capture_output=True, text=True,
                          timeout=300, env=env, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3 Ray task(s) on 1 node(s)" in proc.stdout
    assert_same_outputs(tmp_path / "local", tmp_path / "ray")
