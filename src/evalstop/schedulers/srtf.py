"""SRTF-Est: shortest estimated remaining time first, preemptive.

Remaining time is ``est_duration_s * (1 - progress)``, progress as of the job's last eval
checkpoint. An arriving job preempts running jobs whose estimated remaining time is longer
than its own by more than ``margin`` seconds (default: the restart overhead, so a
preemption is expected to pay for itself).
"""

from __future__ import annotations

from evalstop.schedulers.priority import PriorityScheduler


class SRTFEst(PriorityScheduler):
    name = "srtf-est"
    preempt_on_arrival = True

    def __init__(self, *, depth: int = 32, margin: float = 120.0) -> None:
        super().__init__(depth=depth, margin=margin)

    def key(self, job, now):
        return job.est_duration_s * (1.0 - job.progress)
