"""The payload of a replayed job: writes the job's eval log at its scaled times, then ends
at the job's duration; on SIGTERM it saves and exits 0. Each record carries the job's
Slurm id (``"job_id"``: ``evalstop.jobid.from_environ``), what a stop acts on.

    python worker.py SPEC.json LOG.jsonl [CKPT_DIR]

SPEC holds the job's name, its eval times (wall seconds from the job's start), steps,
scores, losses, proxies and progress, its GPUs and its duration (the simulator's draws
for that job, written by ``evalstop.testbed.replay``). At each eval the worker appends one
record to LOG (the JSON Lines format ``evalstop watch`` follows, with ``time``, ``gpus``
and, on the last eval, the job's end, ``"end": true``) and, with CKPT_DIR, "saves" a
checkpoint: an empty file ``checkpoint-STEP``. Standard library only: dozens of these
run at once, and each costs a Python start, not an import of numpy (``jobid.py`` is
loaded by its path: the worker runs with ``python -I``).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import sys
import time


def _jobid_module():
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "jobid.py")
    spec = importlib.util.spec_from_file_location("evalstop_jobid", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


JOB_ID = _jobid_module().from_environ()

_TERM = False


def _on_term(signum, frame) -> None:
    global _TERM
    _TERM = True


def _sleep_until(deadline: float) -> bool:
    """Sleep until ``deadline`` (monotonic); False if SIGTERM came first."""
    while not _TERM:
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(left, 0.2))
    return False


def _record(spec: dict, i: int) -> str:
    rec = {"job": spec["job"], "step": spec["step"][i], "eval": spec["eval"][i]}
    for key in ("loss", "proxy", "progress"):
        value = spec[key][i]
        if value is not None and math.isfinite(value):
            rec[key] = value
    rec["time"] = time.time()
    if JOB_ID:
        rec["job_id"] = JOB_ID
    if "gpus" in spec:  # for a shadow score's GPU-hours (evalstop watch, shadow mode)
        rec["gpus"] = spec["gpus"]
    if i == len(spec["t"]) - 1:  # the last eval is the job's end
        rec["end"] = True
    return json.dumps(rec, allow_nan=True) + "\n"


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, _on_term)
    start = time.monotonic()
    spec_path, log_path = argv[0], argv[1]
    ckpt = argv[2] if len(argv) > 2 else None
    with open(spec_path, encoding="utf-8") as fh:
        spec = json.load(fh)
    os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    if ckpt:
        os.makedirs(ckpt, exist_ok=True)
    with open(log_path, "a", encoding="utf-8") as log:
        for i, at in enumerate(spec["t"]):
            if not _sleep_until(start + at):
                break
            if ckpt:
                open(os.path.join(ckpt, f"checkpoint-{spec['step'][i]}"), "w").close()
            log.write(_record(spec, i))
            log.flush()
        else:
            _sleep_until(start + spec["duration"])
    if _TERM:
        print(f"{spec['job']}: SIGTERM after {time.monotonic() - start:.1f} s; saved, exiting",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
