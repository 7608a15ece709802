"""Baseline ``stopat:p=P``: stop at the first eval at or past training progress P.

Blind to the score; it is the paper's fixed-budget baseline (StopAt-0.65). Which jobs it
applies to (the paper: every RLHF job) is the overlay's choice, not the rule's.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from evalstop.detectors.base import Detector


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

    def _check_inputs(self, loss, proxy, progress):
        if progress is None:
            raise ValueError("stopat needs the job's progress with each eval")

    def _check(self, progress):
        if progress >= self.p - 1e-12:
            return f"reached progress {self.p}"
        return None
