"""A Slurm accounting export (``sacct --parsable2``) as a job trace: the fields read, the
rows skipped, and bad input refused with one line naming the file and line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evalstop.errors import InputError
from evalstop.workload import read_jobs
from evalstop.workload.sacct import gpus_of, looks_like_sacct, sacct_table

HEAD = "JobIDRaw|JobName|Account|State|Submit|Start|End|AllocTRES"
GOOD = [
    ("11|a-j0|a|COMPLETED|2026-12-01T10:00:00|2026-12-01T10:00:02|2026-12-01T10:10:02|"
     "billing=1,cpu=1,gres/gpu=2,node=1"),
    ("12|b-j1|b|CANCELLED by 0|2026-12-01T10:00:05|2026-12-01T10:00:05|2026-12-01T10:00:05|"
     "cpu=1,gres/gpu:a100=4,node=1"),
    ("12.batch|batch||CANCELLED|2026-12-01T10:00:05|2026-12-01T10:00:05|"
     "2026-12-01T10:00:05|cpu=1,gres/gpu=4"),
    ("13|cpu-only|a|COMPLETED|2026-12-01T10:01:00|2026-12-01T10:01:00|2026-12-01T10:02:00|"
     "cpu=4,node=1"),
    "14|never|c|CANCELLED by 0|2026-12-01T10:02:00|None|2026-12-01T10:03:00|",
    "15|running|c|RUNNING|2026-12-01T10:02:00|2026-12-01T10:02:01|Unknown|gres/gpu=1",
]


def _write(tmp_path: Path, lines, name="jobs.txt") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_reads_gpu_jobs_and_counts_the_rest(tmp_path):
    path = _write(tmp_path, [HEAD, *GOOD])
    assert looks_like_sacct(str(path))
    table = read_jobs(path)
    assert table.job_id == ["11", "12"]
    np.testing.assert_array_equal(table.gpus, [2, 4])
    np.testing.assert_array_equal(table.arrival_s, [0.0, 5.0])
    # 600 s of run; a job cancelled in its first second lasted at least 1 s.
    np.testing.assert_array_equal(table.duration_s, [600.0, 1.0])
    assert table.tenant.tolist() == ["a", "b"]
    assert table.meta["sacct_skipped"] == {"steps": 1, "never_started": 1, "not_ended": 1,
                                           "no_gpus": 1}


def test_epoch_seconds_are_times_too(tmp_path):
    path = _write(tmp_path, ["JobID|Submit|Start|End|AllocTRES", "7|100|110|170|gres/gpu=1"])
    table = sacct_table(str(path))
    assert table.duration_s.tolist() == [60.0] and table.arrival_s.tolist() == [0.0]


@pytest.mark.parametrize("tres,gpus", [
    ("billing=1,cpu=1,gres/gpu=2,node=1", 2),
    ("gres/gpu=2,gres/gpu:a100=2", 2),  # the untyped count wins over its typed parts
    ("gres/gpu:a100=1,gres/gpu:v100=2", 3),
    ("cpu=8,mem=1G", 0),
    ("", 0),
])
def test_gpus_from_alloc_tres(tres, gpus):
    assert gpus_of(tres, "f:2") == gpus


@pytest.mark.parametrize("lines,message", [
    (["JobIDRaw|Submit|Start|End"], "missing sacct field(s): AllocTRES"),
    (["JobName|Submit|Start|End|AllocTRES"], "missing sacct field(s): JobIDRaw"),
    ([HEAD, "1|x|a|COMPLETED|yesterday|2026-12-01T10:00:00|2026-12-01T10:00:01|gres/gpu=1"],
     "jobs.txt:2: Submit is not a time"),
    ([HEAD, ("1|x|a|COMPLETED|2026-12-01T10:00:00|2026-12-01T10:00:09|2026-12-01T10:00:01|"
            "gres/gpu=1")], "jobs.txt:2: End is before Start"),
    ([HEAD, ("1|x|a|COMPLETED|2026-12-01T10:00:05|2026-12-01T10:00:01|2026-12-01T10:00:09|"
            "gres/gpu=1")], "jobs.txt:2: Start is before Submit"),
    ([HEAD, ("1|x|a|COMPLETED|2026-12-01T10:00:00|2026-12-01T10:00:01|2026-12-01T10:00:09|"
            "gres/gpu=nan")], "jobs.txt:2: AllocTRES gres/gpu is not a whole number"),
    ([HEAD, "1|x|a|COMPLETED|2026-12-01T10:00:00"], "jobs.txt:2: expected 8 fields"),
    ([HEAD, GOOD[0], GOOD[0]], "jobs.txt:3: duplicate job id '11' (first on line 2)"),
    ([HEAD, GOOD[3]], "no GPU jobs that started and ended (skipped: 1 no_gpus)"),
    ([HEAD, "|x|a|COMPLETED|2026-12-01T10:00:00|None|None|"], "jobs.txt:2: job id is empty"),
    (["JobIDRaw|Submit|Submit|End|AllocTRES"], "a field appears twice"),
])
def test_bad_input_is_one_line(tmp_path, lines, message):
    path = _write(tmp_path, lines)
    with pytest.raises(InputError, match=None) as err:
        sacct_table(str(path))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_empty_and_special_files(tmp_path):
    empty = _write(tmp_path, [], name="empty.txt")
    empty.write_text("")
    with pytest.raises(InputError, match="empty file"):
        sacct_table(str(empty))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not looks_like_sacct(str(fifo))  # never opened: reading a FIFO would hang
    with pytest.raises(InputError, match="not a regular file"):
        sacct_table(str(fifo))


def test_simulate_takes_an_export_and_refuses_a_bad_one(tmp_path):
    good = _write(tmp_path, [HEAD, *GOOD])
    out = tmp_path / "out.csv"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}

    def simulate(jobs):
        return subprocess.run([sys.executable, "-m", "evalstop", "simulate", "--jobs",
                               str(jobs), "--gpus", "8", "--scheduler", "fifo", "--out",
                               str(out)], capture_output=True, text=True, env=env, check=False)

    r = simulate(good)
    assert r.returncode == 0, r.stderr
    assert out.read_text().count("\n") == 3  # header and the two GPU jobs
    bad = _write(tmp_path, [HEAD, GOOD[0].replace("10:10:02", "09:00:00")], name="bad.txt")
    r = simulate(bad)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"evalstop: error: {bad}:2: End is before Start (a negative duration)"]
