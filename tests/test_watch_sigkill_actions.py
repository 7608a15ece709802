"""Exactly once under SIGKILL, for real: a controller process killed 60 times while it
decides and runs over 1,000 stops loses none of them. An action that is safe to run
twice (``--action-idempotent``, like the shipped ``evalstop action`` by job id) left
``running`` by a kill is run again on restart; any other is marked ``unknown`` for the
operator, never left looking started or done.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

TENANTS = 4
JOBS = 1040  # stops: every job declines twice and is stopped by evalstop:k=2
KILLS = 60


def _lines(lo: int, hi: int) -> dict[str, str]:
    """Per tenant, the records of jobs lo..hi-1: each stops at its third eval."""
    out: dict[str, list[str]] = {}
    for j in range(lo, hi):
        tenant = f"t{j % TENANTS}"
        for step, ev in ((1, 0.9), (2, 0.5), (3, 0.2)):
            out.setdefault(tenant, []).append(json.dumps(
                {"job": f"job{j}", "step": step, "eval": ev, "job_id": f"{70000 + j}"}) + "\n")
    return {t: "".join(v) for t, v in out.items()}


def _acted(path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _run_with_kills(tmp_path, *extra: str, kills: int = KILLS):
    """Logs grow in ``kills`` chunks; each chunk gets a controller, SIGKILLed once it has
    acted (or after a bound), at a random moment; then one last ``--once`` run."""
    rng = np.random.default_rng(43)
    logs, db, acts = tmp_path / "logs", tmp_path / "state.db", tmp_path / "acts.txt"
    for t in range(TENANTS):
        (logs / f"t{t}").mkdir(parents=True)
    cmd = [sys.executable, "-m", "evalstop", "watch", "--jsonl", str(logs), "--db", str(db),
           "--detector", "evalstop:k=2", "--action", f"echo {{job_id}} >> {acts}", *extra]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    bounds = np.linspace(0, JOBS, kills + 1).astype(int)
    errs = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        for tenant, text in _lines(int(lo), int(hi)).items():
            with open(logs / tenant / "runs.jsonl", "a") as fh:
                fh.write(text)
        before = len(_acted(acts))
        proc = subprocess.Popen([*cmd, "--interval", "0.05", "--action-workers", "4"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                text=True)
        deadline = time.monotonic() + 5
        while len(_acted(acts)) <= before and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(float(rng.uniform(0.0, 0.03)))  # mid-stream: some actions in flight
        proc.send_signal(signal.SIGKILL)
        errs.append(proc.communicate(timeout=30)[1])
        assert proc.returncode == -signal.SIGKILL
    final = subprocess.run([*cmd, "--once"], capture_output=True, text=True, env=env,
                           timeout=120, check=False)
    assert final.returncode == 0, final.stderr
    con = sqlite3.connect(str(db))
    statuses = dict(con.execute("SELECT job, status FROM actions"))
    con.close()
    return statuses, _acted(acts), "".join(errs) + final.stderr


def test_an_idempotent_action_loses_no_stop_over_60_kills(tmp_path):
    statuses, acted, err = _run_with_kills(tmp_path, "--action-idempotent")
    assert len(statuses) == JOBS  # every stop was decided, once
    assert set(statuses.values()) == {"done"}, sorted(set(statuses.values()))
    # 0 lost: every stop's action ran, on the job id of its records.
    assert set(acted) == {f"{70000 + j}" for j in range(JOBS)}
    assert "Traceback" not in err
    assert "safe to run again" in err  # the kills did leave actions in flight


@pytest.mark.parametrize("kills", [12])
def test_an_action_of_unknown_outcome_is_marked_for_the_operator(tmp_path, kills):
    statuses, acted, err = _run_with_kills(tmp_path, kills=kills)
    assert len(statuses) == JOBS
    assert set(statuses.values()) <= {"done", "unknown"}
    unknown = [j for j, s in statuses.items() if s == "unknown"]
    assert unknown, "no kill caught an action in flight: the test checks nothing"
    # Every done action ran; an unknown one ran at most once (it may have been killed
    # before it started or after it finished); none ran twice.
    assert len(acted) == len(set(acted))
    done_ids = {f"{70000 + int(j[3:])}" for j, s in statuses.items() if s == "done"}
    assert done_ids <= set(acted)
    assert "marked unknown" in err
