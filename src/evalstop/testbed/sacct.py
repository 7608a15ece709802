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


def export(ids, env: dict, path: Path, timeout_s: float = 60.0) -> str:
    """Write the jobs' accounting to ``path`` once every job has a final state and an end
    in it (slurmdbd may lag the controller by a moment)."""
    ids = list(ids)
    deadline = time.monotonic() + timeout_s
    while True:
        text = query(ids, env)
        rows = [line.split("|") for line in text.splitlines()[1:] if line]
        state, end = FIELDS.index("State"), FIELDS.index("End")
        done = [r for r in rows if r[state].split()[0] in FINAL and r[end] not in ("Unknown", "")]
        if len(done) >= len(ids) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    with atomic_write(path) as fh:
        fh.write(text)
    return text
