"""From a wheel (``pip install .``, not editable): the stop actions are commands of the
installed package, and a testbed replay run by that install enforces its stops through
them (before, the replay pointed at ``examples/actions/scancel.sh`` beside the source
tree, missing from an install: every stop failed with exit 127 and the replay exited 0).

The wheel and its venv are the session's (tests/wheel_venv.py); the commands run outside
the repository with no ``PYTHONPATH``. Without Slurm the replay part skips.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess

import pytest

JOBS = """job_id,arrival_s,duration_s,gpus,type,tenant
a-0,0,3600,4,rlhf,a
b-0,0,2400,2,dpo,b
a-1,600,3000,4,rlhf,a
b-1,900,1800,2,lora,b
a-2,1200,3600,2,rlhf,a
b-2,1800,2400,4,rlhf,b
"""


@pytest.fixture(scope="module")
def installed(wheel_venv, tmp_path_factory):
    """A folder to run in, outside the repository, and an environment without PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return tmp_path_factory.mktemp("run"), wheel_venv, env


def _evalstop(tmp, wv, env, *argv, **kw):
    return subprocess.run([str(wv.bin("evalstop")), *argv], cwd=tmp, env=env,
                          capture_output=True, text=True, check=False, **kw)


def test_the_installed_package_has_the_actions(installed):
    tmp, wv, env = installed
    where = subprocess.run([str(wv.bin("python")), "-c",
                            "import evalstop; print(evalstop.__file__)"], cwd=tmp, env=env,
                           capture_output=True, text=True, check=True).stdout
    assert "site-packages" in where  # the wheel's copy, not the checkout
    for kind in ("slurm", "kubernetes", "ray"):
        r = _evalstop(tmp, wv, env, "action", kind, "--tenant", "a", "--job-id", "")
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no job id" in r.stderr


def test_a_replay_from_the_wheel_enforces_its_stops(installed, slurm_cluster):
    from conftest import require_slurm

    require_slurm()
    tmp, wv, env = installed
    (tmp / "jobs.csv").write_text(JOBS)
    out = tmp / "out"
    r = _evalstop(tmp, wv, env, "testbed", "replay", "--jobs", "jobs.csv", "--gpus", "8",
                  "--hour-s", "3", "--poll", "0.5", "--detector", "evalstop:k=1", "--seed",
                  "3", "--dir", str(slurm_cluster.root), "--out", str(out), "--timeout", "90",
                  timeout=200)
    assert r.returncode == 0, r.stderr
    con = sqlite3.connect(out / "replay" / "watch.db")
    rows = con.execute("SELECT job, status, rc, output FROM actions").fetchall()
    con.close()
    assert rows and all(st == "done" and rc in (0, 10) for _j, st, rc, _o in rows), rows
    cancelled = [job for job, _s, rc, _o in rows if rc == 0]
    # k=1 stops at the first decline, mid-run: at least one running job was cancelled
    assert cancelled, rows
    sacct = (out / "replay" / "sacct.txt").read_text()
    for job in cancelled:
        lines = [x for x in sacct.splitlines() if f"|{job}|" in f"|{x}|"]
        assert len(lines) == 1, (job, rows, sacct, r.stderr)
        assert "CANCELLED" in lines[0] and "stopped by EvalStop" in lines[0], lines[0]
