"""``patience:n=N,min_delta=D``: the common early-stopping rule of Keras, PyTorch Lightning
and Hugging Face ``EarlyStoppingCallback``.

An eval *improves* when it beats the reference by more than ``min_delta`` (strictly); the
reference is the last improving eval, so a run cannot creep upwards in steps smaller than
``min_delta`` and count them. Each eval that does not improve adds one to a wait counter,
an improving one resets it, and the job stops when the counter reaches N. Uses the eval
score only. ``min_delta`` is in the units of the score, so it must be set per metric.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from evalstop.detectors.base import Detector
from evalstop.detectors.stop_arrays import best_upto, finite_rows, higher_better, same_parts


class Patience(Detector):
    name: ClassVar[str] = "patience"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {"n": (int, 3), "min_delta": (float, 0.0)}

    def __init__(self, *, n: int = 3, min_delta: float = 0.0, mode: str = "max") -> None:
        super().__init__(mode=mode)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if not (min_delta >= 0.0 and math.isfinite(min_delta)):
            raise ValueError(f"min_delta must be finite and >= 0, got {min_delta}")
        self.n, self.min_delta = n, min_delta
        self._ref: float | None = None
        self.wait = 0

    def _observe(self, step, value, loss, proxy, progress):
        if self._ref is None or value - self.min_delta > self._ref:
            self._ref, self.wait = value, 0
            return None
        self.wait += 1
        if self.wait >= self.n:
            return f"no improvement by more than {self.min_delta} in {self.wait} evals"
        return None

    def stop_index(self, obs):
        """The rule over many fresh jobs at once (``KDecline.stop_index``'s contract), eval
        by eval with the object's own comparison; None for a subclass that changes it."""
        if not same_parts(self, Patience, ("_observe",)):
            return None
        raw, v = higher_better(self, obs)
        n, m = raw.shape
        done = finite_rows(raw)
        stop_at = np.full(n, -1, dtype=np.int64)
        if m:
            ref, wait = v[:, 0].copy(), np.zeros(n, dtype=np.int64)
            for j in range(1, m):
                better = v[:, j] - self.min_delta > ref
                np.copyto(ref, v[:, j], where=better)
                wait = np.where(better, 0, wait + 1)
                stop_at[(wait >= self.n) & (stop_at < 0)] = j
        return stop_at, best_upto(v, stop_at), done

    def _rule_state(self) -> dict[str, Any]:
        return {"ref": self._ref, "wait": self.wait}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._ref = None if state["ref"] is None else float(state["ref"])
        self.wait = int(state["wait"])
