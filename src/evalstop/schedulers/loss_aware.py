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
        # The planned loop computes ``key`` above from the loss rows, operation by
        # operation (``sim.loss_drops.key_of``, ``sim.planned_jit._loss_key``).
        return "loss", None
