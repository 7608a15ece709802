"""``cusum-known:sigma=S|eval_n=N[,h=H,k=K,clip=C,smooth=N,min_evals=E,trim=T]``: ``cusum-drop`` for
a platform that knows its eval's noise.

Same level, clipped CUSUM and stop rule as ``cusum-drop``, but the drops are measured in
units of the given ``sigma`` (the standard deviation of one eval's score around the true
quality, in score units) instead of an estimate from the job's own evals. A platform often
knows it: a mean over N graded prompts with per-prompt standard deviation s has
sigma = s / sqrt(N), and running the eval twice on one checkpoint measures it.

Why a separate rule: estimating sigma from about 20 evals is the largest cost the
detector benchmark found. Neighbouring second differences are correlated, so a job's
estimate often misses by 25%; too low stops healthy jobs on plateaus, too high misses
clear declines. The parameters differ from ``cusum-drop``'s because that rule's widened
estimate runs about 1.2-1.4 times the true sigma: chosen on the benchmark's tuning part
with the cell's true sigma given (highest recall at precision >= 0.96, seeds 0-2). One
eval still adds at most clip - k = 1.25 < h, so no single eval stops a job.

Overstating sigma costs recall, understating it costs precision (on the tuning part,
sigma x 1.25: precision 0.986, recall 0.79; sigma x 0.8: 0.926, 0.89): when unsure,
round up. ``eval_n=N`` (a pass rate over N graded items) may stand for ``sigma``: the
binomial noise at the job's level (see ``stated_noise``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from evalstop.detectors.cusum_drop import CusumDrop


class CusumKnown(CusumDrop):
    name: ClassVar[str] = "cusum-known"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {
        "sigma": (float, None), "h": (float, 1.75), "k": (float, 1.25), "clip": (float, 2.5),
        "smooth": (int, 9), "min_evals": (int, 6), "trim": (int, 2), "smooth_min": (int, None),
        "eval_n": (int, None),
    }

    def __init__(self, *, sigma: float | None = None, h: float = 1.75, k: float = 1.25,
                 clip: float = 2.5, smooth: int = 9, min_evals: int = 6, trim: int = 2,
                 smooth_min: int | None = None, eval_n: int | None = None, fleet=None,
                 mode: str = "max") -> None:
        if sigma is None and eval_n is None:
            raise ValueError("sigma is required (or eval_n): the standard deviation of one "
                             "eval's score, in score units (use the spec 'default' when it "
                             "is not known)")
        if sigma is not None and eval_n is not None:
            raise ValueError("give sigma or eval_n, not both")
        if sigma is not None and not (sigma >= 0.0 and math.isfinite(sigma)):
            raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
        # sigma=0 (noise-free scores) stays allowed here, as before; the shared check wants > 0
        super().__init__(h=h, k=k, clip=clip, smooth=smooth, min_evals=min_evals, trim=trim,
                         smooth_min=smooth_min, sigma=sigma or None, eval_n=eval_n,
                         fleet=fleet, mode=mode)
        if sigma is not None:
            self.sigma = float(sigma)
