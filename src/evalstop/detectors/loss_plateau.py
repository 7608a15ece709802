"""Baseline ``loss-plateau:window=W,eps=E``: stop when training loss stops improving.

Stops at the first eval where the relative loss improvement over the last W evals,
``(loss[-W-1] - loss[-1]) / |loss[-W-1]|``, is below E. It reads the loss that comes with
each eval, never the score, which is why it cannot see reward hacking (the loss keeps
falling through it). Evals without a finite loss are skipped.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from evalstop.detectors.base import Detector


class LossPlateau(Detector):
    name = "loss-plateau"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {"window": (int, 5), "eps": (float, 0.01)}

    def __init__(self, *, window: int = 5, eps: float = 0.01, mode: str = "max") -> None:
        super().__init__(mode=mode)
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if not eps >= 0.0:
            raise ValueError(f"eps must be >= 0, got {eps}")
        self.window, self.eps = window, eps
        self._losses: list[float] = []

    def _observe(self, step, value, loss, proxy, progress):
        return self._take(loss)

    def _observe_nonfinite(self, step, loss, proxy, progress):
        return self._take(loss)

    def _take(self, loss):
        if loss is None or not math.isfinite(loss):
            return None
        self._losses.append(float(loss))
        del self._losses[: -(self.window + 1)]
        if len(self._losses) <= self.window:
            return None
        old, new = self._losses[0], self._losses[-1]
        gain = (old - new) / abs(old) if old != 0 else (old - new)
        if gain < self.eps:
            return f"loss improved {gain:.4f} < {self.eps} over {self.window} evals"
        return None

    def _rule_state(self) -> dict[str, Any]:
        return {"losses": list(self._losses)}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._losses = [float(x) for x in state["losses"]]
