"""Shared argument checks for the metrics: a run's per-job arrays must match its workload."""

from __future__ import annotations

from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload

_PER_JOB = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s")


def check_pair(workload: Workload, result: SimResult) -> None:
    """Raise ValueError naming the first per-job array whose length is not the job count."""
    n = workload.n_jobs
    for name in _PER_JOB:
        got = len(getattr(result, name))
        if got != n:
            raise ValueError(f"SimResult.{name} has {got} rows but the workload has {n} jobs")
