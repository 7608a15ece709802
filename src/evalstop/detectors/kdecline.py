"""The paper's rule, ``evalstop:k=K`` (arXiv 2606.04145, Sec. 3; its exact semantics are
in docs/stop-rules.md, "The detector interface").

A decline is an eval strictly lower than the previous eval of the same job. The streak
grows by one on each decline and resets to 0 on any eval that is not lower. The job is
stopped at the eval that makes the streak reach K.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from evalstop.detectors.base import Detector
from evalstop.detectors.stop_arrays import best_upto, first_hit


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
        v = np.asarray(obs, dtype=np.float64)
        if self._sign < 0:
            v = -v
        n, m = v.shape
        # A finite row sum means finite values; a row whose sum overflows goes to the
        # objects with the non-finite ones (correct, only slower).
        done = np.isfinite(v.sum(axis=1))
        k = self.k
        if m <= k:
            none = np.full(n, -1, dtype=np.int64)
            return none, none.copy(), done
        # Whole rows at once: run[:, p] says evals p + 1 .. p + k each fell below the one
        # before, so the streak first reaches k at the first such p, eval p + k.
        run = v[:, 1: m - k + 1] < v[:, : m - k]
        for s in range(1, k):
            run &= v[:, 1 + s: m - k + 1 + s] < v[:, s: m - k + s]
        stop_at = first_hit(run, k)
        return stop_at, best_upto(v, stop_at), done

    def _rule_state(self) -> dict[str, Any]:
        return {"prev": self._prev, "streak": self.streak}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._prev, self.streak = state["prev"], int(state["streak"])
