"""``evalstop testbed`` as a newcomer meets it: each mistake is one line on stderr and a
non-zero exit, checked before anything is submitted; ``down`` ends every process of the
testbed, the jobs' step processes and payloads included; a replay says how long it
should take and how far it is, and ``--timeout`` bounds all of it.

Without Slurm the module skips, except under ``CI=true``, where it fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import SLURM_GPUS, require_slurm

from evalstop.testbed import procs
from evalstop.testbed.cluster import LocalCluster

require_slurm()

JOBS = "job_id,arrival_s,duration_s,gpus,type,tenant\n"


def evalstop(*argv, env=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "evalstop", *map(str, argv)],
                          capture_output=True, text=True, timeout=timeout, check=False,
                          env=env if env is not None else dict(os.environ))


def one_line(r: subprocess.CompletedProcess, *words: str) -> str:
    err = r.stderr.strip()
    assert r.returncode != 0 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and err.startswith("evalstop: error: "), err
    for w in words:
        assert w in err, err
    return err


def _csv(path: Path, rows: str) -> Path:
    path.write_text(JOBS + rows)
    return path


@pytest.fixture(scope="module")
def tb(slurm_cluster):
    return str(slurm_cluster.root)


def test_a_tenant_that_is_not_an_account(tb, tmp_path):
    jobs = _csv(tmp_path / "j.csv", "j0,0,3600,2,rlhf,zz\nj1,0,3600,2,rlhf,a\n")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", SLURM_GPUS, "--hour-s", 1,
                 "--dir", tb, "--out", tmp_path / "out")
    one_line(r, "tenant zz is not a Slurm account", "--tenants zz")
    assert not (tmp_path / "out").exists()  # refused before anything was submitted


def test_the_presets_tenants_on_a_testbed_of_a_b_c(tb, tmp_path):
    r = evalstop("testbed", "replay", "--preset", "paper", "--n-jobs", 5, "--gpus", 8,
                 "--hour-s", 1, "--dir", tb, "--out", tmp_path / "out")
    # the paper preset's largest job is 16 GPUs: that is said first
    one_line(r, "largest GPU demand of preset 'paper' (16 GPUs)")


def test_more_gpus_than_the_testbed_has(tb, tmp_path):
    jobs = _csv(tmp_path / "j.csv", "j0,0,3600,2,rlhf,a\n")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 64, "--hour-s", 1,
                 "--dir", tb, "--out", tmp_path / "out")
    one_line(r, f"--gpus 64: the cluster has {SLURM_GPUS} GPUs")


def test_a_job_larger_than_any_node(tb, tmp_path):
    jobs = _csv(tmp_path / "j.csv", f"j0,0,3600,{SLURM_GPUS + 4},rlhf,a\n")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", SLURM_GPUS, "--hour-s", 1,
                 "--dir", tb, "--out", tmp_path / "out")
    one_line(r, f"asks for {SLURM_GPUS + 4} GPUs", f"({SLURM_GPUS})")


def test_no_slurm_configuration_found(tmp_path, monkeypatch):
    from evalstop.testbed import preflight

    jobs = _csv(tmp_path / "j.csv", "j0,0,3600,2,rlhf,a\n")
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    if preflight.DEFAULT_CONF.is_file():
        pytest.skip(f"{preflight.DEFAULT_CONF} exists on this machine")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 8, "--hour-s", 1,
                 "--out", tmp_path / "out", env=env)
    one_line(r, "no Slurm configuration found", "--dir DIR")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 8, "--hour-s", 1,
                 "--out", tmp_path / "out", env={**env, "SLURM_CONF": str(tmp_path / "no")})
    one_line(r, f"SLURM_CONF={tmp_path / 'no'}: no such file")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 8, "--hour-s", 1,
                 "--dir", tmp_path / "nothing", "--out", tmp_path / "out")
    one_line(r, "no testbed there", "evalstop testbed up --dir")


def test_a_timeout_shorter_than_the_submissions(tb, tmp_path):
    jobs = _csv(tmp_path / "j.csv", "j0,0,3600,2,rlhf,a\nj1,36000,3600,2,rlhf,b\n")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 8, "--hour-s", 1,
                 "--timeout", 5, "--dir", tb, "--out", tmp_path / "out")
    one_line(r, "--timeout 5 s ends before the last submission (10 s into the replay")


def test_a_replay_says_its_estimate_and_progress_and_the_timeout_bounds_it(slurm_cluster,
                                                                           tmp_path):
    # Two 60 s jobs (one simulated hour at 60 s per hour), the second submitted 3 s in:
    # a 15 s timeout ends the replay after the last submission, long before the jobs.
    jobs = _csv(tmp_path / "j.csv", "t0,0,3600,2,rlhf,a\nt1,180,3600,2,rlhf,b\n")
    r = evalstop("testbed", "replay", "--jobs", jobs, "--gpus", 8, "--hour-s", 60,
                 "--timeout", 15, "--dir", slurm_cluster.root, "--out", tmp_path / "out")
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("replay: 2 jobs on 8 GPUs, about ") and "at most --timeout 15" \
        in lines[0], r.stderr
    assert any(line.startswith("replay: 2/2 submitted,") and " s of about " in line
               for line in lines[1:-1]), r.stderr
    assert r.returncode == 2 and lines[-1].startswith("evalstop: error: --timeout 15 s"), lines
    # and nothing of it is left: cancelled, its jobs leave the queue within the KillWait
    deadline = time.monotonic() + slurm_cluster.kill_wait_s + 15
    while time.monotonic() < deadline:
        held = slurm_cluster.run(["squeue", "-h", "-o", "%j"]).stdout.split()
        if not {"t0", "t1"} & set(held):
            break
        time.sleep(0.5)
    assert not {"t0", "t1"} & set(held)
    # bounded: the replay ended them (cancelled), it did not wait for their 60 s runs
    states = slurm_cluster.run(["sacct", "-X", "-n", "-P", "--name=t0,t1", "-o",
                                "JobName,State"]).stdout.splitlines()
    assert len(states) == 2 and all("|CANCELLED" in x for x in states), states


def _marker_processes(root: Path) -> list[int]:
    """Every process whose command line or environment names the testbed's folder."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            if procs.alive(int(entry.name), str(root) + "/"):
                out.append(int(entry.name))
    return out


def test_up_twice_then_down_ends_every_process_of_the_testbed(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="evalstop-down-"))
    try:
        assert evalstop("testbed", "up", "--dir", root, "--gpus", 2, "--tenants", "a").returncode == 0
        one_line(evalstop("testbed", "up", "--dir", root, "--gpus", 2, "--tenants", "a"),
                 "a testbed is already running there")
        env = {**os.environ, "SLURM_CONF": str(root / "etc" / "slurm.conf")}
        # A job whose payload is a child of its batch script, as a real one is.
        payload = tmp_path / "payload.sh"
        payload.write_text("#!/bin/sh\nsleep 600 &\nwait\n")
        payload.chmod(0o755)
        subprocess.run(["sbatch", "--account=a", "--gres=gpu:1", f"--chdir={tmp_path}",
                        "--output=/dev/null", str(payload)], env=env, check=True,
                       capture_output=True)
        deadline = time.monotonic() + 30
        while len(procs.job_processes(root)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        jobs = procs.job_processes(root)
        assert len(jobs) >= 3, jobs  # slurmstepd, the script, its sleep
        r = evalstop("testbed", "down", "--dir", root)
        assert r.returncode == 0 and "job process" in r.stdout, r.stdout + r.stderr
        assert not [p for p in jobs if procs._started(p) is not None]
        assert _marker_processes(root) == []
        # and the folder starts again (afresh) after a down
        assert evalstop("testbed", "up", "--dir", root, "--gpus", 2, "--tenants", "a").returncode == 0
    finally:
        LocalCluster(root, tenants=["x"]).down()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
