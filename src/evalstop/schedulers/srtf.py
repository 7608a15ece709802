"""SRTF-Est: shortest estimated remaining time first, preemptive.

Remaining time is ``est_duration_s * (1 - progress)``, progress as of the job's last eval
checkpoint. An arriving job preempts running jobs whose estimated remaining time is longer
than its own by more than ``margin`` seconds (default: the restart overhead of the run the
simulator binds it to, 120 s until then, so a preemption is expected to pay for itself).
"""

from __future__ import annotations

from evalstop.schedulers.priority import PriorityScheduler


def remaining_s(est_duration_s, progress):
    """SRTF-Est's key: the estimated time left at ``progress``. The simulator's planned
    loop and its compiled twin call this function too, so the rule is written here once."""
    return est_duration_s * (1.0 - progress)


class SRTFEst(PriorityScheduler):
    name = "srtf-est"
    preempt_on_arrival = True

    def __init__(self, *, depth: int = 32, margin: float | None = None) -> None:
        self._margin_is_overhead = margin is None
        super().__init__(depth=depth, margin=120.0 if margin is None else margin)

    def bind(self, *, n_gpus, restart_overhead_s):
        if self._margin_is_overhead:
            self.margin = float(restart_overhead_s)

    def key(self, job, now):
        return remaining_s(job.est_duration_s, job.progress)

    def twin_key(self, workload):
        # The planned loop (and its twin) keys jobs with ``remaining_s``.
        return "remaining", None
