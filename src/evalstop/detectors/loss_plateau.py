"""Baseline ``loss-plateau:window=W,eps=E``: stop when training loss stops improving.

Stops at the first eval where the relative loss improvement over the last W evals,
``(loss[-W-1] - loss[-1]) / |loss[-W-1]|``, is below E. It reads the loss that comes with
each eval, never the score, which is why it cannot see reward hacking (the loss keeps
falling through it). Evals without a finite loss are skipped.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from evalstop.detectors.base import Detector
from evalstop.detectors.stop_arrays import (
    best_upto,
    finite_rows,
    first_hit,
    higher_better,
    same_parts,
)


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

    def stop_index(self, obs, loss):
        """The rule over many fresh jobs at once (``KDecline.stop_index``'s contract), from
        the loss table: the object's gain over each window of W + 1 evals, elementwise.
        Rows with a non-finite loss (skipped by the object) or score (the kept checkpoint
        skips it) go to the objects; None for a subclass that changes the rule."""
        if not same_parts(self, LossPlateau, ("_observe", "_observe_nonfinite", "_take")):
            return None
        raw, v = higher_better(self, obs)
        lo = np.asarray(loss, dtype=np.float64)
        n, m = raw.shape
        done = finite_rows(raw) & finite_rows(lo)
        w = self.window
        if m <= w:
            return np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64), done
        old, new = lo[:, : m - w], lo[:, w:]  # the windows ending at evals w .. m - 1
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gain = np.where(old != 0, (old - new) / np.abs(old), old - new)
        stop_at = first_hit(gain < self.eps, w)
        return stop_at, best_upto(v, stop_at), done

    def _rule_state(self) -> dict[str, Any]:
        return {"losses": list(self._losses)}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._losses = [float(x) for x in state["losses"]]
