"""Cluster-level figures of one run: makespan, GPU time, utilisation."""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def cluster_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    """``makespan_s`` (first arrival to last finish), ``gpu_h`` (all GPU time used, restart
    overheads included) and ``utilisation`` = GPU time / (``n_gpus`` x makespan)."""
    check_pair(workload, result)
    finish = np.asarray(result.finish_s, float)
    finite = finish[np.isfinite(finish)]
    if workload.n_jobs == 0 or finite.size == 0:
        return {"makespan_s": float("nan"), "gpu_h": 0.0, "utilisation": float("nan")}
    if result.n_gpus < 1:
        raise ValueError(f"SimResult.n_gpus must be >= 1, got {result.n_gpus}")
    makespan = float(finite.max() - np.min(workload.arrival_s))
    gpu_s = float(np.nansum(result.gpu_s))
    util = gpu_s / (result.n_gpus * makespan) if makespan > 0 else float("nan")
    return {"makespan_s": makespan, "gpu_h": gpu_s / 3600.0, "utilisation": util}
