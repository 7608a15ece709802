"""Mistakes a newcomer makes with `testbed`, `watch`, `replay`, `simulate`, `reproduce` and
`noise`: each ends in one line on stderr naming the problem and a non-zero exit, never a
traceback (the CLI's contract, docs/reference/cli.md). The testbed's mistakes that need a
running cluster are in tests/test_testbed_cli.py."""

from __future__ import annotations

import shutil

import pytest

from evalstop.cli.main import main

JOBS = "job_id,arrival_s,duration_s,gpus\nj0,0,3600,2\n"
SLURM = shutil.which("sbatch") is not None and shutil.which("slurmctld") is not None
W = ["watch", "--jsonl", "logs", "--db", "s.db", "--once"]
S = ["simulate", "--scheduler", "fifo", "--gpus", "8", "--out", "o.csv"]
R = ["testbed", "replay", "--jobs", "jobs.csv", "--gpus", "8", "--hour-s", "1", "--out", "o"]

# (argv, what the line names, needs Slurm installed)
MISTAKES = [
    (["testbed"], "required: {up,down,replay}", False),
    (["testbed", "up", "--dir", "tb", "--gpus", "0"], "--gpus must be >= 1", False),
    (["testbed", "up", "--dir", "tb", "--tenants", "Team A"], "not a valid Slurm account", False),
    (["testbed", "up", "--dir", "tb", "--kill-wait", "-1"], "kill wait must be 0..65533", False),
    (["testbed", "down", "--dir", "nowhere"], "--dir nowhere: no testbed there", False),
    (R[:-2], "required: --out", False),
    ([*R, "--hour-s", "0"], "--hour-s, --poll and --timeout must be > 0", True),
    ([*R, "--detector", "nope"], "unknown detector 'nope'", True),
    ([*R, "--dir", "nowhere"], "--dir nowhere: no testbed there", True),
    (["watch", "--jsonl", "logs"], "--db FILE is required", False),
    (["watch", "--jsonl", "nope", "--db", "s.db", "--once"], "'nope' is not a directory", False),
    (["watch", "--status", "--db", "missing.db"], "no controller state at 'missing.db'", False),
    ([*W, "--checkpoint-template", "/c/{job}"], "give --action too", False),
    ([*W, "--action", "echo {jobid}"], "unknown placeholder {jobid}", False),
    ([*W, "--serve", "localhost"], "--serve must be [HOST:]PORT", False),
    (["watch", "--fleet", "--jsonl", "logs", "--db", "s.db"], "--fleet goes with --status", False),
    (["replay", "missing.jsonl"], "cannot read log 'missing.jsonl'", False),
    (["replay", "bad.jsonl"], "bad.jsonl:1: not valid JSON", False),
    (["replay", "empty.jsonl"], "no eval records in the log", False),
    (["replay", "logs"], "a folder, not a regular file", False),
    (["replay", "one.jsonl", "--detector", "default:sigma=-1"], "sigma must be finite and > 0",
     False),
    (["replay", "one.jsonl", "--detector", "evalstop:k=0"], "k must be >= 1", False),
    ([*S[:-2], "--out", "o.csv", "--jobs", "jobs.csv", "--gpus", "1"],
     "asks for 2 GPUs but the cluster has 1", False),
    ([*S, "--jobs", "one.jsonl"], "missing required column(s)", False),
    ([*S, "--jobs", "jobs.csv", "--detector", "nope"], "unknown detector 'nope'", False),
    (["simulate", "--scheduler", "fifo", "--gpus", "8", "--jobs", "jobs.csv", "--out", "logs"],
     "--out 'logs' is a folder, not a file", False),
    (["simulate", "--scheduler", "lifo", "--gpus", "8", "--jobs", "jobs.csv", "--out", "o.csv"],
     "invalid choice: 'lifo'", False),
    (["reproduce", "--only", "nope"], "unknown experiment 'nope'", False),
    (["reproduce", "--seeds", "0"], "--seeds must be >= 1", False),
    (["reproduce", "--out", "jobs.csv"], "--out 'jobs.csv' is a file, not a folder", False),
    (["reproduce", "--trace", "missing.csv"], "missing.csv: cannot read", False),
    (["reproduce", "--out", "/proc/evalstop-out"], "/proc/evalstop-out: cannot create a folder",
     False),
    (["noise", "one.jsonl"], "too few evals to measure the noise", False),
]


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLURM_CONF", raising=False)
    (tmp_path / "logs").mkdir()
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "one.jsonl").write_text('{"job": "a", "step": 1, "eval": 0.5}\n')
    (tmp_path / "bad.jsonl").write_text("not json\n")
    (tmp_path / "empty.jsonl").write_text("")
    return tmp_path


def test_the_table_is_large_and_spans_the_commands():
    assert len(MISTAKES) >= 20
    assert {argv[0] for argv, _, _ in MISTAKES} >= {"testbed", "watch", "replay", "simulate",
                                                    "reproduce"}


@pytest.mark.parametrize("argv, names, needs_slurm", MISTAKES,
                         ids=[" ".join(m[0])[:60] for m in MISTAKES])
def test_a_mistake_is_one_line_and_a_non_zero_exit(inputs, capsys, argv, names, needs_slurm):
    if needs_slurm and not SLURM:
        pytest.skip("checked after the Slurm programs are found")
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    err = capsys.readouterr().err
    assert rc not in (0, None), err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "error" in err and names in err, err
