"""The packaged Slurm action on a real Slurm (the local testbed: accounts a, b, c): a
stop reaches exactly the job whose id its records carry, the tenant's, still running;
never a job that shares its name, the other tasks of its array, the jobs a name ``x,y``
would list, today's job that reuses an old log's name, a resubmission, or the job of an
account that differs only in letter case.

Without Slurm the module skips, except under ``CI=true`` (CI installs it), where it fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import require_slurm

from evalstop.integrations.watch.store import StateStore
from evalstop.testbed.replay import default_action

require_slurm()


@pytest.fixture(scope="module")
def cluster(slurm_cluster):
    return slurm_cluster


def _sbatch(env, account, name, command="sleep 300", *extra):
    out = subprocess.run(["sbatch", "--parsable", f"--account={account}", f"--job-name={name}",
                          "--chdir=/tmp", "--output=/dev/null", *extra, "--wrap", command],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().split(";")[0]


def _states(env, ids):
    """Each id's state, from sacct (squeue forgets ended jobs)."""
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o",
                          "JobID,State,AdminComment"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return {row.split("|")[0]: row.split("|")[1].split()[0]
            for row in out.splitlines() if row.strip()}


def _wait_ended(env, ids, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(s not in ("PENDING", "RUNNING") for s in _states(env, ids).values()) and \
                len(_states(env, ids)) == len(ids):
            return
        time.sleep(0.3)
    raise AssertionError(f"jobs {ids} did not end")


def _wait_running(env, ids, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = _states(env, ids)
        if len(states) == len(ids) and set(states.values()) == {"RUNNING"}:
            return
        time.sleep(0.3)
    raise AssertionError(f"jobs {ids} did not start")


def _log(folder, tenant, name, job, job_id=None):
    (folder / tenant).mkdir(parents=True, exist_ok=True)
    with open(folder / tenant / f"{name}.jsonl", "w") as fh:
        for step, ev in ((1, 0.9), (2, 0.5), (3, 0.2)):  # evalstop:k=2 stops at step 3
            rec = {"job": job, "step": step, "eval": ev}
            if job_id is not None:
                rec["job_id"] = job_id
            fh.write(json.dumps(rec) + "\n")


def test_a_stop_reaches_only_the_job_its_records_name_by_id(cluster, tmp_path):
    env = cluster.env
    # Jobs that ended before the stop: an old run (its log re-read by a fresh --db) and
    # the first submission of a job resubmitted since.
    old = _sbatch(env, "a", "old", "true")
    first = _sbatch(env, "a", "resub", "true")
    _wait_ended(env, [old, first])
    jobs = {
        "old-today": _sbatch(env, "a", "old"),       # today's job reusing the old name
        "resub-now": _sbatch(env, "a", "resub"),     # the resubmission
        "dup1": _sbatch(env, "a", "dup"), "dup2": _sbatch(env, "a", "dup"),
        "x": _sbatch(env, "a", "x"), "y": _sbatch(env, "a", "y"),
        "b-job": _sbatch(env, "b", "bjob"),
    }
    array = _sbatch(env, "a", "arr", "sleep 300", "--array=0-3")
    tasks = [f"{array}_{i}" for i in range(4)]
    _wait_running(env, [*jobs.values(), *tasks])  # a pending array is one row, not four
    logs = tmp_path / "logs"
    _log(logs, "a", "dup", "dup", jobs["dup1"])
    _log(logs, "a", "task", "arr", tasks[2])
    _log(logs, "a", "array", "arr-all", array)      # the bare array id: four jobs
    _log(logs, "a", "xy", "x,y", jobs["x"])
    _log(logs, "a", "old", "old", old)              # an old log, a fresh --db
    _log(logs, "a", "resub", "resub", first)        # a stop decided on the first run
    _log(logs, "B", "case", "bjob", jobs["b-job"])  # folder B, account b's job
    _log(logs, "a", "noid", "noid")                 # no id: never a guess by name
    _log(logs, "b", "twin", "bjob", jobs["b-job"])  # folder b beside B: one tenant's twin
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    wenv = {**env, "PYTHONPATH": os.pathsep.join(p for p in (src, env.get("PYTHONPATH"))
                                                 if p)}
    try:
        r = subprocess.run([sys.executable, "-m", "evalstop", "watch", "--jsonl", str(logs),
                            "--db", str(tmp_path / "fresh.db"), "--detector", "evalstop:k=2",
                            "--checkpoint-template", "/ckpt/{tenant}/{job}/checkpoint-{best_step}",
                            "--action", default_action(), "--once"],
                           env=wenv, capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        time.sleep(1.5)  # a cancel reaches accounting within Slurm's cycle
        states = _states(env, [*jobs.values(), *tasks])
        store = StateStore(str(tmp_path / "fresh.db"), readonly=True)
        acts = {(a.tenant, a.job): a for a in store.actions()}
        store.close()
    finally:
        subprocess.run(["scancel", *jobs.values(), array], env=env, check=False)

    assert states[jobs["dup1"]] == "CANCELLED" and states[jobs["dup2"]] != "CANCELLED"
    assert states[tasks[2]] == "CANCELLED"
    assert [states[t] for t in tasks if t != tasks[2]] == ["RUNNING"] * 3
    assert states[jobs["x"]] == "CANCELLED" and states[jobs["y"]] in ("RUNNING", "PENDING")
    for twin in ("old-today", "resub-now", "b-job"):
        assert states[jobs[twin]] in ("RUNNING", "PENDING"), (twin, states)
    out = {k: (a.status, a.rc) for k, a in acts.items()}
    assert out[("a", "dup")] == out[("a", "arr")] == out[("a", "x,y")] == ("done", 0)
    # An ended job: nothing to do, recorded as done, never a failure.
    assert out[("a", "old")] == out[("a", "resub")] == ("done", 10)
    assert out[("a", "arr-all")] == ("failed", 1) and "names 4 jobs" in acts[("a", "arr-all")].output
    assert out[("B", "bjob")] == ("failed", 1)
    assert "belongs to account 'b', not to tenant 'B'" in acts[("B", "bjob")].output
    assert out[("a", "noid")] == ("failed", 2) and "no job id" in acts[("a", "noid")].output
    # Folder b case-folds equal to folder B, read first: b is refused and never read, so
    # account b's own job is reached by neither spelling.
    assert not [k for k in acts if k[0] == "b"]
    note = subprocess.run(["sacct", "-n", "-X", "-P", "-j", jobs["dup1"], "-o", "AdminComment"],
                          env=env, capture_output=True, text=True, check=True).stdout
    assert "stopped by EvalStop at step 3; best step 1; checkpoint /ckpt/a/dup/checkpoint-1" \
        in note
