"""``--ray ADDRESS`` on a real two-node Ray cluster on this machine (tests/ray_cluster.py):
tasks run on both nodes, and the output files are byte-identical to a local run's.

The nodes run without this checkout on their PYTHONPATH, so their workers get evalstop
only from the job's runtime_env, as a remote cluster's would.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from evalstop.cli.main import main

pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from ray_cluster import driver_env, held, start_two_node_cluster  # noqa: E402
from ray_outputs import assert_same_outputs  # noqa: E402

RUN_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def cluster():
    with held(start_two_node_cluster, "test cluster (two-node Ray)") as c:
        yield c


def _on_cluster(cluster, argv):
    proc = subprocess.run([sys.executable, "-m", "evalstop.cli.main", *argv,
                           "--ray", cluster.address], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, env=driver_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _nodes(stdout: str) -> int:
    m = re.search(r"(\d+) Ray task\(s\) on (\d+) node\(s\)", stdout)
    assert m, stdout
    return int(m.group(2))


def test_reproduce_on_two_nodes_is_byte_identical(cluster, tmp_path):
    argv = ["reproduce", "--quick", "--only", "main,k", "--seeds", "3", "--no-detectors",
            "--no-progress"]
    assert main([*argv, "--workers", "1", "--out", str(tmp_path / "local")]) == 0
    stdout = _on_cluster(cluster, [*argv, "--out", str(tmp_path / "ray")])
    assert "6 Ray task(s)" in stdout
    assert _nodes(stdout) == 2  # both the head and the second node ran tasks
    assert_same_outputs(tmp_path / "local", tmp_path / "ray")


def test_bench_detectors_on_two_nodes_is_byte_identical(cluster, tmp_path):
    argv = ["bench-detectors", "--quick", "--runs", "1", "--seed", "3", "--no-progress"]
    assert main([*argv, "--out", str(tmp_path / "local")]) == 0
    stdout = _on_cluster(cluster, [*argv, "--out", str(tmp_path / "ray")])
    assert _nodes(stdout) == 2
    assert_same_outputs(tmp_path / "local", tmp_path / "ray")
