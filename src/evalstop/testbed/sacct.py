"""Slurm's accounting of a replay's jobs, exported with ``sacct --parsable2``.

The export has the fields ``evalstop.workload.sacct`` reads (so ``evalstop simulate --jobs``
takes it as it is) plus the state, exit code and comments the measurement needs.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from evalstop.fileio import atomic_write

FIELDS = ("JobIDRaw", "JobName", "Account", "State", "ExitCode", "Submit", "Start", "End",
          "Elapsed", "AllocTRES", "AdminComment", "Comment")
FINAL = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
         "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")


def query(ids, env: dict) -> str:
    ids = ",".join(str(i) for i in ids)
    r = subprocess.run(["sacct", "--allocations", "--parsable2", "--jobs", ids,
                        "--format", ",".join(FIELDS)], env=env, capture_output=True,
                       text=True, timeout=60, check=False)
    if r.returncode:
        raise RuntimeError(f"sacct failed: {r.stderr.strip()}")
    return r.stdout


def export(ids, env: dict, path: Path, timeout_s: float = 180.0) -> str:
    """Write the jobs' accounting to ``path`` once every job has a final state and an end
    in it. slurmdbd may lag the controller (seconds; on a loaded machine, much longer), so
    this waits up to ``timeout_s``; past it, what slurmdbd had is still written to ``path``
    and ``RuntimeError`` names the jobs it lacks: a study measured on a partial accounting
    would count those jobs' GPU time as never used."""
    ids = [str(i) for i in ids]
    deadline = time.monotonic() + timeout_s
    while True:
        text = query(ids, env)
        missing = unfinished(text, ids)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    with atomic_write(path) as fh:
        fh.write(text)
    if missing:
        raise RuntimeError(f"Slurm's accounting has no final record of job(s) "
                           f"{', '.join(missing)} after {timeout_s:.0f} s (slurmdbd behind?); "
                           f"{path} holds what it had")
    return text


def unfinished(text: str, ids: list[str]) -> list[str]:
    """The ids among ``ids`` without a row in a final state with an end in ``text``."""
    rows = [line.split("|") for line in text.splitlines()[1:] if line]
    key, state, end = (FIELDS.index(f) for f in ("JobIDRaw", "State", "End"))
    # >=: a comment holding "|" adds columns after the ones read here
    done = {r[key] for r in rows if len(r) >= len(FIELDS) and r[state]
            and r[state].split()[0] in FINAL and r[end] not in ("Unknown", "")}
    return [i for i in ids if i not in done]
