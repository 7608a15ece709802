"""Baseline ``stopat:p=P``: stop at the first eval at or past training progress P.

Blind to the score; it is the paper's fixed-budget baseline (StopAt-0.65). Which jobs it
applies to (the paper: every RLHF job) is the overlay's choice, not the rule's.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from evalstop.detectors.base import Detector
from evalstop.detectors.stop_arrays import best_upto, finite_rows, higher_better, same_parts


class StopAt(Detector):
    name = "stopat"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {"p": (float, 0.65)}

    def __init__(self, *, p: float = 0.65, mode: str = "max") -> None:
        super().__init__(mode=mode)
        if not (0.0 < p <= 1.0) or math.isnan(p):
            raise ValueError(f"p must be in (0, 1], got {p}")
        self.p = p

    def _observe(self, step, value, loss, proxy, progress):
        return self._check(progress)

    def _observe_nonfinite(self, step, loss, proxy, progress):
        return self._check(progress)

    def stop_index(self, obs, progress):
        """The rule over many fresh jobs at once (``KDecline.stop_index``'s contract): every
        row stops at the first grid point the object's ``_check`` accepts. Rows with a
        non-finite score go to the objects (their kept checkpoint skips it); None for a
        subclass that changes the rule."""
        if not same_parts(self, StopAt, ("_observe", "_observe_nonfinite", "_check")):
            return None
        raw, v = higher_better(self, obs)
        n, m = raw.shape
        grid = [float(p) for p in progress][:m]
        at = next((j for j, p in enumerate(grid) if self._check(p) is not None), -1)
        stop_at = np.full(n, at, dtype=np.int64)
        return stop_at, best_upto(v, stop_at), finite_rows(raw)

    def _check_inputs(self, loss, proxy, progress):
        if progress is None:
            raise ValueError("stopat needs the job's progress with each eval")

    def _check(self, progress):
        if progress >= self.p - 1e-12:
            return f"reached progress {self.p}"
        return None
