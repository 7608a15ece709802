"""Quality delivered: true quality of the checkpoint a job hands back, against its best.

``eval_true[i, kept_eval[i]] / max(eval_true[i])``: 1.0 when the delivered checkpoint is the
job's true best, lower when it was stopped too early or ran on past its peak. The ratio only
means something for a positive best, so a job whose best true quality is not > 0 (or that
delivered no checkpoint, ``kept_eval < 0``) is NaN and left out of the means.
"""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def quality_ratio(workload: Workload, result: SimResult) -> np.ndarray:
    """Per-job delivered/best true quality; NaN where undefined (see module doc)."""
    check_pair(workload, result)
    true = np.asarray(workload.eval_true, float)
    kept = np.asarray(result.kept_eval, np.int64)
    if np.any(kept >= true.shape[1]):
        bad = int(kept[kept >= true.shape[1]][0])
        raise ValueError(f"kept_eval {bad} is past the last eval index {true.shape[1] - 1}")
    best = true.max(axis=1)
    delivered = true[np.arange(len(kept)), np.clip(kept, 0, None)]
    ok = (kept >= 0) & (best > 0)
    out = np.full(len(kept), np.nan)
    out[ok] = delivered[ok] / best[ok]
    return out


def _nanmean(v: np.ndarray) -> float:
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def quality_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    """``quality_mean`` over all jobs and ``quality_hacking_mean`` over hacking jobs."""
    q = quality_ratio(workload, result)
    hacking = np.asarray(workload.hacking, bool)
    return {"quality_mean": _nanmean(q), "quality_hacking_mean": _nanmean(q[hacking])}
