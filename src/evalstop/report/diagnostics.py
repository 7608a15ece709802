"""Numbers that explain the main table, computed from the run kept for plots (one seed).

They back the report's "why ours differs" notes with measurements instead of guesses.
"""

from __future__ import annotations

import numpy as np


def flat_gain_share(workload, sigma: float) -> float:
    """Share of eval-to-eval true-quality gains of non-hacking jobs, in the second half of
    training, that are smaller than the eval noise ``sigma``: where a decline rule sees
    noise rather than progress."""
    true = np.asarray(workload.eval_true, float)[~np.asarray(workload.hacking, bool)]
    half = np.asarray(workload.eval_progress) > 0.5
    gains = np.diff(true, axis=1)[:, half[1:]]
    return float(np.mean(gains < sigma)) if gains.size else float("nan")


def drop_after_peak(workload) -> np.ndarray:
    """Per job: true quality lost from its best eval to its last, in quality units."""
    true = np.asarray(workload.eval_true, float)
    return true.max(axis=1) - true[:, -1]


def missed_vs_caught(workload, result) -> tuple[float, float, int, int]:
    """Median drop-after-peak of hacking jobs EvalStop missed and of those it caught, and
    how many of each (NaN medians when a group is empty)."""
    hack = np.asarray(workload.hacking, bool)
    stopped = np.asarray(result.stopped, bool)
    drop = drop_after_peak(workload)
    missed, caught = drop[hack & ~stopped], drop[hack & stopped]
    med = (lambda v: float(np.median(v)) if v.size else float("nan"))
    return med(missed), med(caught), int(missed.size), int(caught.size)


def example_jobs(workload, result, n: int = 4) -> list[tuple[int, str]]:
    """Up to ``n`` jobs worth looking at, each the first of its kind: a hacking job
    stopped, a hacking job missed, a non-hacking job stopped, a healthy RLHF job that ran
    to the end, then any other job that ran to the end."""
    hack = np.asarray(workload.hacking, bool)
    stopped = np.asarray(result.stopped, bool)
    types = np.asarray(workload.type).astype(str)
    kinds = [
        (hack & stopped, "hacking, stopped (TP)"),
        (hack & ~stopped, "hacking, missed (FN)"),
        (~hack & stopped, "not hacking, stopped (FP)"),
        (~hack & ~stopped & (types == "rlhf"), "healthy RLHF, ran to the end (TN)"),
        (~hack & ~stopped, "not hacking, ran to the end (TN)"),
    ]
    out = []
    for mask, what in kinds:
        idx = np.flatnonzero(mask)
        if idx.size and len(out) < n:
            i = int(idx[0])
            out.append((i, f"{workload.job_id[i]} ({types[i]}): {what}"))
    return out
