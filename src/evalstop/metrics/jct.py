"""Job completion time: finish (completion or stop) minus arrival, overall and per job type."""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def jct_s(workload: Workload, result: SimResult) -> np.ndarray:
    """Per-job JCT in seconds; NaN for a job that never finished."""
    check_pair(workload, result)
    return np.asarray(result.finish_s, float) - np.asarray(workload.arrival_s, float)


def _summary(values: np.ndarray, prefix: str) -> dict[str, float]:
    # Jobs that never finished (NaN) are left out here and counted by `n_unfinished`;
    # an empty selection gives NaN, never 0, so it cannot pass for a fast run.
    v = values[np.isfinite(values)]
    if v.size == 0:
        return {f"{prefix}_mean_s": np.nan, f"{prefix}_p50_s": np.nan, f"{prefix}_p95_s": np.nan}
    p50, p95 = np.percentile(v, [50, 95]).tolist()  # one call: half the cost, same values
    return {f"{prefix}_mean_s": float(v.mean()), f"{prefix}_p50_s": p50, f"{prefix}_p95_s": p95}


def jct_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    """``jct_mean_s, jct_p50_s, jct_p95_s`` overall, the same with ``_<type>`` per job type
    present in the workload (e.g. ``jct_rlhf_mean_s``), and ``n_unfinished``."""
    jct = jct_s(workload, result)
    out = _summary(jct, "jct")
    types = np.asarray(workload.type).astype(str)
    for t in sorted(set(types.tolist())):
        out.update(_summary(jct[types == t], f"jct_{t}"))
    out["n_unfinished"] = int(np.count_nonzero(~np.isfinite(jct)))
    return out
