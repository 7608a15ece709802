"""The paper's rule, ``evalstop:k=K`` (arXiv 2606.04145, Sec. 3; pinned in DESIGN.md).

A decline is an eval strictly lower than the previous eval of the same job. The streak
grows by one on each decline and resets to 0 on any eval that is not lower. The job is
stopped at the eval that makes the streak reach K.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evalstop.detectors.base import Detector


class KDecline(Detector):
    name = "evalstop"
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

    def _rule_state(self) -> dict[str, Any]:
        return {"prev": self._prev, "streak": self.streak}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._prev, self.streak = state["prev"], int(state["streak"])
