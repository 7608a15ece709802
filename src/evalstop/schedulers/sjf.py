"""SJF-Est: shortest estimated job first, non-preemptive, with bounded backfill.

Uses the noisy estimate ``est_duration_s`` (the workload's error model), never the truth.
"""

from __future__ import annotations

from evalstop.schedulers.priority import PriorityScheduler


class SJFEst(PriorityScheduler):
    name = "sjf-est"

    def key(self, job, now):
        return job.est_duration_s

    def twin_key(self, workload):
        # The planned loop (and its twin) reads the same float, ``est_duration_s``, as the key.
        return "fixed", None
