"""``evalstop testbed replay`` from the command line, end to end on the local Slurm: a job
CSV of 6 jobs from 2 tenants replayed under ``evalstop watch`` on the default rule, its printed summary and its
folder checked against Slurm's own export.

Without Slurm the module skips, except under ``CI=true`` (CI installs it), where it fails.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SLURM_GPUS, require_slurm

from evalstop.detectors.registry import canonical
from evalstop.workload import read_jobs

require_slurm()

# 6 jobs on 4 of the cluster's GPUs' worth of demand at a time: the third a-job waits for
# a GPU, the hacking-prone RLHF jobs can be stopped. 1 simulated hour = 3 s keeps the whole
# replay (submission, runs, the controller, sacct) near 20 s.
JOBS = [  # job_id, arrival_s, duration_s, gpus, type, tenant
    ("a-0", 0, 3600, 4, "rlhf", "a"),
    ("b-0", 0, 2400, 2, "dpo", "b"),
    ("a-1", 600, 3000, 4, "rlhf", "a"),
    ("b-1", 900, 1800, 2, "lora", "b"),
    ("a-2", 1200, 3600, 2, "rlhf", "a"),
    ("b-2", 1800, 2400, 4, "rlhf", "b"),
]
HOUR_S, POLL_S = 3.0, 0.5


@pytest.fixture(scope="module")
def replayed(slurm_cluster, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli-replay")
    jobs = folder / "jobs.csv"
    with open(jobs, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["job_id", "arrival_s", "duration_s", "gpus", "type", "tenant"])
        w.writerows(JOBS)
    out = folder / "out"
    r = subprocess.run(
        [sys.executable, "-m", "evalstop", "testbed", "replay", "--jobs", str(jobs),
         "--gpus", str(SLURM_GPUS), "--hour-s", str(HOUR_S), "--poll", str(POLL_S),
         "--detector", "default", "--seed", "3", "--dir", str(slurm_cluster.root),
         "--out", str(out), "--timeout", "90"],
        capture_output=True, text=True, env={**os.environ}, timeout=150, check=False)
    return r, out


def test_replay_prints_one_summary_and_a_line_naming_its_folder(replayed):
    r, out = replayed
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)  # stdout is the summary alone, one JSON object
    assert printed["n_jobs"] == len(JOBS)
    assert set(printed) == {"real", "sim", "within", "n_jobs"}
    for side in ("real", "sim"):
        assert printed[side]["jct_mean_s"] > 0
    assert 0 <= printed["within"] <= len(JOBS)
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith(f"{len(JOBS)} jobs: mean JCT ") and line.endswith(
        f"{out}/summary.json")


def test_replay_folder_holds_sacct_export_and_the_printed_summary(replayed):
    r, out = replayed
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    way = summary["ways"]["replay"]
    printed = json.loads(r.stdout)
    assert way["real"] == printed["real"] and way["within"] == printed["within"]
    assert way["detector"] == "default" and summary["n_gpus"] == SLURM_GPUS
    assert way["spec"] == canonical("default") != "default"  # the rule the alias named
    assert [row["job"] for row in way["jobs"]] and len(way["jobs"]) == len(JOBS)
    # Slurm's own export of the run: every job under its tenant's account, and readable as
    # a job trace (what a what-if on this history reads).
    export = out / "replay" / "sacct.txt"
    with open(export, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="|"))
    assert {row["JobName"]: row["Account"] for row in rows} == {j[0]: j[5] for j in JOBS}
    assert len(read_jobs(export)) == len(JOBS)
    plan = json.loads((out / "replay" / "plan.json").read_text())
    assert plan and (out / "replay" / "logs" / "a" / "a-0.jsonl").is_file()


def test_replay_without_a_testbed_in_dir_is_one_line(tmp_path):
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,arrival_s,duration_s,gpus\nj,0,60,1\n")
    r = subprocess.run(
        [sys.executable, "-m", "evalstop", "testbed", "replay", "--jobs", str(jobs),
         "--gpus", "1", "--hour-s", "1", "--dir", str(tmp_path / "none"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, check=False)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("evalstop: error: ") and "no testbed there" in r.stderr
    assert not Path(tmp_path / "out").exists()


def test_replay_whose_actions_failed_exits_1_saying_how_many_and_why(tmp_path, monkeypatch,
                                                                       capsys):
    """The replay itself is faked (its folder as a failed run leaves it): what is checked
    is that stops that were not enforced make the command fail, with their count."""
    from evalstop.cli.main import main
    from evalstop.integrations.watch.store import ActionRow, StateStore
    from evalstop.testbed import preflight, study

    (tmp_path / "tb" / "etc").mkdir(parents=True)
    (tmp_path / "tb" / "etc" / "slurm.conf").write_text("")
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,arrival_s,duration_s,gpus,type,tenant\nj,0,60,1,rlhf,a\n")

    def fake_run_ways(workload, folder, *a, ways, **k):
        (folder / "replay").mkdir(parents=True)
        store = StateStore(str(folder / "replay" / "watch.db"))
        rows = [ActionRow("s", job, "a", "cmd", status, rc, out, 0.0, 0.0, 0.0)
                for job, status, rc, out in [
                    ("j1", "failed", 127, "sh: 1: scancel.sh: not found"),
                    ("j2", "failed", 1, "x"), ("j3", "done", 10, "already ended"),
                    ("j4", "done", 0, "cancelled")]]
        store.save_batch([], {}, [], rows)
        store.close()
        side = {"jct_mean_s": 3600.0, "n_stopped": 2}
        return {"ways": {"replay": {"real": side, "sim": side, "within": 1, "n_jobs": 1}}}

    monkeypatch.setattr(study, "run_ways", fake_run_ways)
    monkeypatch.setattr(preflight, "check_cluster", lambda *a, **k: None)  # no Slurm here
    code = main(["testbed", "replay", "--jobs", str(jobs), "--gpus", "1", "--hour-s", "1",
                 "--detector", "default", "--dir", str(tmp_path / "tb"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 1
    assert err.startswith("evalstop: error: 2 stop action(s) did not stop their job (first: "
                          "j1, exit 127: sh: 1: scancel.sh: not found)")
