"""``noise-drop:m=M,n=N,min_evals=E,smooth=S``: stop on a drop from the best that the job's
own noise cannot explain, sustained over N evals.

The job's eval noise sigma_hat is estimated online from its successive differences (see
``noise``). The reference level is the best running median of S consecutive evals (S = 1:
the best eval itself); a median of 3 keeps one lucky spike from raising the bar that every
later eval is measured against. The job stops at the first eval where each of the last N
evals lies more than M * sigma_hat below the reference, once at least E finite evals have
been seen (fewer give no usable noise estimate). N >= 2 means no single bad eval can stop a
job. Uses the eval score only.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from evalstop.detectors.base import Detector
from evalstop.detectors.noise import MAX_VALUES, sigma_hat


class NoiseDrop(Detector):
    name = "noise-drop"
    PARAMS = {"m": (float, 3.0), "n": (int, 2), "min_evals": (int, 5), "smooth": (int, 3),
              "order": (int, 2)}

    def __init__(
        self, *, m: float = 3.0, n: int = 2, min_evals: int = 5, smooth: int = 3,
        order: int = 2, mode: str = "max",
    ) -> None:
        super().__init__(mode=mode)
        if not (m >= 0.0 and math.isfinite(m)):
            raise ValueError(f"m must be finite and >= 0, got {m}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if min_evals < 2:
            raise ValueError(f"min_evals must be >= 2 (one difference), got {min_evals}")
        if smooth < 1 or smooth % 2 == 0:
            raise ValueError(f"smooth must be an odd number >= 1, got {smooth}")
        if order not in (1, 2):
            raise ValueError(f"order must be 1 or 2, got {order}")
        self.m, self.n, self.min_evals, self.smooth, self.order = m, n, min_evals, smooth, order
        self._values: list[float] = []
        self._recent: list[float] = []  # the last max(n, smooth) values
        self._ref: float | None = None
        self._seen = 0

    def _observe(self, step, value, loss, proxy, progress):
        self._values.append(value)
        del self._values[:-MAX_VALUES]
        self._recent.append(value)
        del self._recent[: -max(self.n, self.smooth)]
        self._seen += 1
        if len(self._recent) >= self.smooth:
            level = median(self._recent[-self.smooth:])
            if self._ref is None or level > self._ref:
                self._ref = level
        if self._seen < self.min_evals or self._ref is None or len(self._recent) < self.n:
            return None
        sigma = sigma_hat(self._values, self.order)
        bar = self._ref - self.m * sigma
        if all(v < bar for v in self._recent[-self.n:]):
            drop = (self._ref - self._recent[-1]) / sigma if sigma > 0 else math.inf
            return f"{self.n} evals more than {self.m} noise sigmas below the best (now {drop:.1f})"
        return None

    def _rule_state(self) -> dict[str, Any]:
        return {"recent": list(self._recent), "values": list(self._values), "ref": self._ref,
                "seen": self._seen}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._recent = [float(v) for v in state["recent"]]
        self._values = [float(v) for v in state["values"]]
        self._ref = None if state["ref"] is None else float(state["ref"])
        self._seen = int(state["seen"])
