"""LossAware (after SLAQ, Zhang et al. SoCC 2017): favour jobs whose recent normalised
loss reduction is largest.

Key = minus the loss drop over the last eval interval, normalised by the job's first
reported loss (eval intervals are equal on the workload's grid, so dividing by the
progress covered would not change the order). A job that has not yet reported two losses has
the best key (SLAQ gives new jobs resources first, as their early loss drops fastest).
Running jobs yield at their eval checkpoints to a waiting job with a better key.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop.schedulers.priority import PriorityScheduler


class LossAware(PriorityScheduler):
    name = "loss-aware"
    preempt_at_checkpoint = True

    def __init__(self, *, depth: int = 32, margin: float = 0.0) -> None:
        super().__init__(depth=depth, margin=margin)

    def key(self, job, now):
        losses = job.losses
        if len(losses) < 2 or not math.isfinite(losses[0]) or losses[0] == 0:
            return -math.inf
        drop = (losses[-2] - losses[-1]) / abs(losses[0])
        return -drop if math.isfinite(drop) else 0.0

    def twin_key(self, workload):
        return "table", key_table(workload.loss)


def key_table(loss: np.ndarray) -> np.ndarray:
    """``LossAware.key`` for every job and count of losses seen: ``out[i, c]`` is job i's
    key once it has reported the first ``c`` losses of row i (``loss`` is (job, eval)).
    The same rule, element-wise: numpy's float64 subtraction, absolute value, division and
    negation are the IEEE operations Python's floats do, one by one in the same order, so
    each cell is the float ``key`` returns."""
    loss = np.ascontiguousarray(loss, dtype=np.float64)
    n, m = loss.shape
    out = np.full((n, m + 1), -np.inf)
    if m >= 2:
        first = loss[:, :1]
        with np.errstate(all="ignore"):  # inf and nan as Python's floats give them
            drop = (loss[:, :-1] - loss[:, 1:]) / np.abs(first)
        keyed = np.isfinite(first) & (first != 0)
        out[:, 2:] = np.where(keyed, np.where(np.isfinite(drop), -drop, 0.0), -np.inf)
    return out
