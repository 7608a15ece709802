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

from evalstop.schedulers.priority import PriorityScheduler


def drop_key(first, previous, latest):
    """LossAware's key from a job's first, previous and latest losses: minus the last drop,
    normalised by the first loss (the best key, -inf, when the first is not finite or
    zero). The simulator's planned loop and its compiled twin call this function too."""
    # ``abs(x) < inf``: x is finite (NaN compares false).
    if not abs(first) < math.inf or first == 0:
        return -math.inf
    drop = (previous - latest) / abs(first)
    return -drop if abs(drop) < math.inf else 0.0


class LossAware(PriorityScheduler):
    name = "loss-aware"
    preempt_at_checkpoint = True

    def __init__(self, *, depth: int = 32, margin: float = 0.0) -> None:
        super().__init__(depth=depth, margin=margin)

    def key(self, job, now):
        losses = job.losses
        if len(losses) < 2:
            return -math.inf
        return drop_key(losses[0], losses[-2], losses[-1])

    def twin_key(self, workload):
        # The planned loop (and its twin) keys jobs with ``drop_key`` on the loss rows.
        return "loss", None
