"""A replay's progress while it runs: how many jobs were submitted, run and ended, against
the estimate made before it started, on stderr (a 30-job replay takes minutes; silence
that long reads as a hang).

Counts come from ``squeue`` (the jobs Slurm still holds) and the replay's submissions,
polled in a thread, so neither the submission loop nor the wait has to report.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import IO

EVERY_S = 30.0  # a line at least this often
POLL_S = 2.0


class ReplayTicker:
    def __init__(self, n_jobs: int, estimate_s: float, *, every_s: float = EVERY_S,
                 stream: IO[str] | None = None) -> None:
        self.n_jobs, self.estimate_s, self.every_s = n_jobs, estimate_s, every_s
        self.stream = sys.stderr if stream is None else stream
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, run, env: dict) -> None:
        """Follow ``run`` (its ``ids`` fill in as jobs are submitted) until ``stop``."""
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, args=(run, env), daemon=True,
                                        name="replay-ticker")
        self._t0 = time.monotonic()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def line(self, submitted: int, running: int, ended: int) -> str:
        elapsed = time.monotonic() - self._t0
        return (f"replay: {submitted}/{self.n_jobs} submitted, {running} running, "
                f"{ended} ended; {elapsed:.0f} s of about {self.estimate_s:.0f} s")

    def _loop(self, run, env: dict) -> None:
        last_said, last = 0.0, None
        while not self._stop.wait(POLL_S):
            ids = {str(i) for i in list(run.ids.values())}
            held = _held(env)
            if held is None:
                continue
            running = sum(1 for i, state in held.items() if i in ids and state == "R")
            ended = len(ids - set(held))
            now = time.monotonic()
            counts = (len(ids), running, ended)
            # A line when a job ends or starts, at most every 5 s, and every every_s.
            if (counts != last and now - last_said >= 5.0) or now - last_said >= self.every_s:
                self.stream.write(self.line(*counts) + "\n")
                self.stream.flush()
                last_said, last = now, counts


def _held(env: dict) -> dict[str, str] | None:
    """Job id -> state letter (PD, R, CG...) of every job Slurm holds; None if squeue
    failed this time."""
    try:
        r = subprocess.run(["squeue", "-h", "-o", "%i %t"], env=env, capture_output=True,
                           text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode:
        return None
    return dict(line.split(None, 1) for line in r.stdout.splitlines() if " " in line)
