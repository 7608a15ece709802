"""Wasted GPU-hours: compute a job spent after its true quality peak.

A job that peaks at progress ``p*`` and ends at ``p_end > p*`` burned
``gpus * duration_s * (p_end - p*)`` GPU-seconds making itself no better (for a hacking job,
worse). A healthy job's peak is at progress 1.0, so it wastes nothing. Restart overheads
are not counted here; they are in ``gpu_h`` (total GPU time, see ``cluster.py``).
"""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def wasted_gpu_h(workload: Workload, result: SimResult) -> np.ndarray:
    """Per-job GPU-hours spent past the true peak (>= 0)."""
    check_pair(workload, result)
    past_peak = np.maximum(
        0.0, np.asarray(result.end_progress, float) - np.asarray(workload.peak_progress, float)
    )
    return np.asarray(workload.gpus, float) * np.asarray(workload.duration_s, float) * past_peak / 3600.0


def waste_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    """``waste_gpu_h`` (total) and ``waste_hacking_gpu_h`` (the hacking jobs' share)."""
    w = wasted_gpu_h(workload, result)
    hacking = np.asarray(workload.hacking, bool)
    return {"waste_gpu_h": float(w.sum()), "waste_hacking_gpu_h": float(w[hacking].sum())}
