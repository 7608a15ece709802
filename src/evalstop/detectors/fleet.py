"""``FleetNoise``: one eval's noise, learnt online from every job that runs that eval.

A platform runs many jobs on the same eval (the same prompts, the same grader), so the
noise of one eval score around the checkpoint's true quality is a property of the eval, not
of the job. One ``FleetNoise`` per eval group is handed to the detectors of all its jobs;
each detector adds the second differences ``x[i-1] - 2 x[i] + x[i+1]`` of its own evals as
they arrive (see ``noise`` for why second differences), and reads back the pooled scale.

The pooled scale is a winsorised mean absolute deviation, kept as running sums so it is
online and its state is a handful of numbers: the first ``WARMUP`` differences set a robust
scale (their median absolute value / 0.6745); from then on each difference is clipped at
``CLIP`` times the current scale before it is added. A job's own collapse (a large second
difference at the break) therefore moves the fleet's estimate by at most a clipped amount.
sigma = scale / sqrt(6). No small-sample widening: the fleet has many differences, and the
estimate is only given out once it has ``min_count`` of them.

Deterministic: the estimate depends only on the order in which differences arrive (the
simulator's event order, a log's order). ``state_dict`` / ``load_state_dict`` carry it
across restarts; ``evalstop watch`` can persist one per eval group.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

from evalstop.detectors.noise import CLIP, CLIPPED_MEAN_ABS, MAD_N01, MEAN_ABS

WARMUP = 20


class FleetNoise:
    """Pooled eval noise of one eval group. ``sigma()`` is None until ``min_count``
    second differences have been added."""

    def __init__(self, *, min_count: int = 30, name: str = "") -> None:
        if not (isinstance(min_count, int) and min_count >= WARMUP):
            raise ValueError(f"min_count must be an int >= {WARMUP}, got {min_count!r}")
        self.min_count, self.name = min_count, str(name)
        self._warm: list[float] = []  # absolute second differences until WARMUP
        self._scale = 0.0  # robust SD of the differences, fixed at the end of the warm-up
        self._n = 0
        self._sum = 0.0  # clipped absolute differences since the warm-up (and the warm-up's)

    def add(self, d: float, index: int | None = None) -> None:
        """One second difference of some job's evals (non-finite values are ignored);
        ``index``, its place in the job's differences, is not needed here (see
        ``recent_jobs``)."""
        d = abs(float(d))
        if not math.isfinite(d):
            return
        self._n += 1
        if len(self._warm) < WARMUP and self._n <= WARMUP:
            self._warm.append(d)
            if len(self._warm) == WARMUP:
                self._scale = median(self._warm) / MAD_N01
                self._sum = sum(self._clip(x) for x in self._warm)
            return
        self._sum += self._clip(d)

    def _clip(self, d: float) -> float:
        return min(d, CLIP * self._scale) if self._scale > 0.0 else d

    @property
    def count(self) -> int:
        return self._n

    def sigma(self) -> float | None:
        """The pooled noise sigma of one eval, in score units; None while too few."""
        if self._n < self.min_count:
            return None
        norm = CLIPPED_MEAN_ABS if self._scale > 0.0 else MEAN_ABS
        return self._sum / self._n / norm / math.sqrt(6.0)

    def state_dict(self) -> dict[str, Any]:
        return {"kind": "fleet-noise", "min_count": self.min_count, "name": self.name,
                "warm": list(self._warm), "scale": self._scale, "n": self._n,
                "sum": self._sum}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        try:
            if state.get("kind") != "fleet-noise":
                raise ValueError("not a FleetNoise state")
            warm = [float(x) for x in state["warm"]]
            scale, n, total = float(state["scale"]), int(state["n"]), float(state["sum"])
            min_count = int(state["min_count"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad FleetNoise state: {exc}") from None
        if (n < 0 or len(warm) > WARMUP or not all(math.isfinite(x) and x >= 0 for x in warm)
                or not (math.isfinite(scale) and scale >= 0 and math.isfinite(total)
                        and total >= 0) or min_count < WARMUP):
            raise ValueError("bad FleetNoise state: negative or non-finite values")
        self.min_count, self.name = min_count, str(state.get("name", ""))
        self._warm, self._scale, self._n, self._sum = warm, scale, n, total

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> FleetNoise:
        fleet = cls()
        fleet.load_state_dict(state)
        return fleet

    def __repr__(self) -> str:
        s = self.sigma()
        return f"<FleetNoise {self.name!r} n={self._n} sigma={'?' if s is None else f'{s:.4g}'}>"


def pooled_sigma(diffs: list[float], min_count: int) -> float | None:
    """What a ``FleetNoise(min_count=...)`` reads after ``diffs`` were added in this order
    (``recent_jobs`` recomputes its bounded estimate this way): the estimator is the
    class's own, so there is one rule, not a second copy to keep equal."""
    fleet = FleetNoise(min_count=min_count)
    for d in diffs:
        fleet.add(d)
    return fleet.sigma()
