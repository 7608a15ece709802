"""A Slurm job that ends by itself as its cancel lands: ``scancel`` answers 0, but the job
stays COMPLETED, not CANCELLED, and freed nothing. The action must say exit 10 (already
ended) and write no note, not report a stop. The race is timing on a real Slurm (seen on
the testbed under load), so here ``squeue``, ``scontrol`` and ``scancel`` are stand-ins
on PATH that play the states one call after another; the real Slurm path is covered by
tests/test_testbed_actions.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

SQUEUE = """#!/bin/sh
# each call answers the next state in $STATES_FILE (the last one repeats)
n=$(cat "$COUNT_FILE" 2>/dev/null || echo 0)
state=$(sed -n "$((n + 1))p" "$STATES_FILE")
[ -n "$state" ] || state=$(tail -n 1 "$STATES_FILE")
echo $((n + 1)) > "$COUNT_FILE"
echo "42|42|alice|$state"
"""


def _act(tmp_path, states):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, body in (("squeue", SQUEUE), ("scontrol", "#!/bin/sh\nexit 0\n"),
                       ("scancel", "#!/bin/sh\nexit 0\n")):
        (bin_ / name).write_text(body)
        (bin_ / name).chmod(0o755)
    (tmp_path / "states").write_text("\n".join(states) + "\n")
    env = {**os.environ, "PATH": f"{bin_}:{os.environ['PATH']}",
           "STATES_FILE": str(tmp_path / "states"), "COUNT_FILE": str(tmp_path / "count")}
    notes = tmp_path / "notes.tsv"
    r = subprocess.run([sys.executable, "-m", "evalstop", "action", "slurm", "--tenant", "alice",
                        "--job-id", "42", "--job", "j", "--stop-step", "9", "--best-step", "4",
                        "--best-checkpoint", "/ckpt/4", "--notes", str(notes)],
                       env=env, capture_output=True, text=True, timeout=60)
    return r, notes


@pytest.mark.parametrize("after", [["COMPLETED"], ["COMPLETING", "COMPLETED"], ["FAILED"]])
def test_a_job_that_ended_by_itself_as_it_was_cancelled_is_no_stop(tmp_path, after):
    r, notes = _act(tmp_path, ["RUNNING", *after])
    assert r.returncode == 10, r.stdout + r.stderr
    assert "ended" in r.stdout and "by itself" in r.stdout and r.stdout.count("\n") == 1
    assert not notes.exists()


@pytest.mark.parametrize("after", [["CANCELLED"], ["COMPLETING", "CANCELLED"], ["RUNNING"]])
def test_a_cancelled_job_is_a_stop(tmp_path, after):
    r, notes = _act(tmp_path, ["RUNNING", *after])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("evalstop action slurm: cancelled job 42")
    assert notes.read_text().count("\n") == 1
