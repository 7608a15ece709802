"""FIFO, as docs/simulator.md pins it ("Scheduling semantics and event order"): strict
arrival order (ties keep input order), no backfill (a head job that does not fit blocks
those behind it), no preemption."""

from __future__ import annotations

from collections import deque

from evalstop.schedulers.base import Scheduler


class FIFO(Scheduler):
    name = "fifo"
    needs_checkpoints = False  # no on_eval, no preemption

    def __init__(self) -> None:
        self._queue = deque()

    def submit(self, job, now):
        self._queue.append(job)

    def schedule(self, now, free_gpus):
        q, start = self._queue, []
        while q and q[0].gpus <= free_gpus:
            job = q.popleft()
            free_gpus -= job.gpus
            start.append(job)
        return start, []

    @property
    def queue_length(self):
        return len(self._queue)
