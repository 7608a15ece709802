"""The paper's rule, ``evalstop:k=K`` (arXiv 2606.04145, Sec. 3; its exact semantics are in the README).

A decline is an eval strictly lower than the previous eval of the same job. The streak
grows by one on each decline and resets to 0 on any eval that is not lower. The job is
stopped at the eval that makes the streak reach K.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from evalstop.detectors.base import Detector


class KDecline(Detector):
    name = "evalstop"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {"k": (int, 2)}

    def __init__(self, *, k: int = 2, mode: str = "max") -> None:
        super().__init__(mode=mode)
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k
        self._prev: float | None = None
        self.streak = 0

    def _observe(self, step, value, loss, proxy, progress):
        if self._prev is not None and value < self._prev:
            self.streak += 1
        else:
            self.streak = 0
        self._prev = value
        if self.streak >= self.k:
            return f"{self.streak} consecutive declines"
        return None

    def stop_index(self, obs: np.ndarray):
        """The rule over many fresh jobs at once (rows of ``obs``, one column per eval):
        ``(stop_at, kept, done)``, the eval index of each row's stop (-1: none), of its best
        eval up to the stop (the earliest on ties), and which rows this answers. Rows with a
        non-finite score are left to the detector objects (``done`` False), whose handling
        of them is not worth repeating here. Same decisions as ``update_stop``, eval by
        eval: ``evalstop.sim.stops`` relies on it and the tests compare the two."""
        if type(self)._observe is not KDecline._observe:
            return None  # a subclass that changes the rule
        v = self._sign * np.asarray(obs, dtype=np.float64)
        n, m = v.shape
        done = np.isfinite(v).all(axis=1)
        stop_at = np.full(n, -1, dtype=np.int64)
        kept = np.full(n, -1, dtype=np.int64)
        if m == 0:
            return stop_at, kept, done
        vt = np.ascontiguousarray(v.T)  # (eval, job): one eval of every job is one row
        streak = np.zeros(n, dtype=np.int64)
        best, best_at = vt[0].copy(), np.zeros(n, dtype=np.int64)
        zero = np.zeros(n, dtype=np.int64)
        open_ = np.ones(n, dtype=bool)  # not yet stopped
        for j in range(1, m):
            col = vt[j]
            streak = np.where(col < vt[j - 1], streak + 1, zero)
            better = col > best
            best = np.where(better, col, best)
            best_at[better] = j
            hit = open_ & (streak >= self.k)
            stop_at[hit] = j
            kept[hit] = best_at[hit]
            open_ &= ~hit
        return stop_at, kept, done

    def _rule_state(self) -> dict[str, Any]:
        return {"prev": self._prev, "streak": self.streak}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._prev, self.streak = state["prev"], int(state["streak"])
