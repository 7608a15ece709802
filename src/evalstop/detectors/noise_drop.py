"""``noise-drop:m=M,n=N,smooth=S``: stop on a drop below the best level that the job's own
eval noise cannot explain, sustained over N evals.

* Noise: sigma_hat, estimated online from the job's own evals (see ``noise``); no scale
  has to be configured per metric.
* Best level: the highest running median of S consecutive evals. The best single eval is
  the maximum of many noisy draws and sits well above the true level on a plateau, so
  every later eval looks like a drop from it; a median of S sits close to the level and
  ignores lucky spikes. No stop is possible before S evals.
* Stop: at the first eval where each of the last N evals lies more than M * sigma_hat
  below the best level. N >= 2 means no single bad eval stops a job.

Uses the eval score only (the proxy reward rises in healthy and hacking runs alike). S and
N count evals; the defaults were tuned for about 20 evals per run, and a denser eval
schedule wants them larger in proportion. ``sigma=S`` / ``eval_n=N`` / a shared
``FleetNoise`` give the noise instead of the job's own estimate (see ``stated_noise``).
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any, ClassVar

from evalstop.detectors.noise import MAX_VALUES
from evalstop.detectors.stated_noise import NOISE_PARAMS, NoiseAware
from evalstop.detectors.stop_arrays import same_parts


class NoiseDrop(NoiseAware):
    name: ClassVar[str] = "noise-drop"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {
        "m": (float, 1.4), "n": (int, 2), "smooth": (int, 9), **NOISE_PARAMS,
    }

    def __init__(self, *, m: float = 1.4, n: int = 2, smooth: int = 9,
                 sigma: float | None = None, eval_n: int | None = None, fleet=None,
                 mode: str = "max") -> None:
        super().__init__(mode=mode)
        self._init_noise(sigma, eval_n, fleet)
        if not (m >= 0.0 and math.isfinite(m)):
            raise ValueError(f"m must be finite and >= 0, got {m}")
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if smooth < 1:
            raise ValueError(f"smooth must be >= 1, got {smooth}")
        self.m, self.n, self.smooth = m, n, smooth
        self._values: list[float] = []
        self._level: float | None = None  # the best running median so far

    def _observe(self, step, value, loss, proxy, progress):
        values = self._values
        values.append(value)
        del values[: -max(MAX_VALUES, self.smooth, self.n)]
        self._feed_fleet(values)
        if len(values) >= self.smooth:
            level = median(values[-self.smooth:])
            if self._level is None or level > self._level:
                self._level = level
        if self._level is None or len(values) < self.n:
            return None
        if not all(v < self._level for v in values[-self.n:]):
            return None  # the bar is at or below the level; skips the costly noise estimate
        sigma = self._noise(values, self._level)
        if sigma is None:
            return None
        bar = self._level - self.m * sigma
        if all(v < bar for v in values[-self.n:]):
            drop = (self._level - values[-1]) / sigma if sigma > 0.0 else math.inf
            return (f"last {self.n} evals more than {self.m} noise sigmas below the best "
                    f"level (latest {drop:.1f} sigmas below)")
        return None

    def stop_index(self, obs):
        """The rule over many fresh jobs at once, for the simulator's planned stops (see
        ``noise_drop_array``); None for a subclass that changes the rule, or a fleet noise."""
        if not same_parts(self, NoiseDrop, ("_observe", "_noise", "_own_sigma", "_check_value")):
            return None
        from evalstop.detectors.noise_drop_array import stop_index
        return stop_index(self, obs)

    def _rule_state(self) -> dict[str, Any]:
        return {"values": list(self._values), "level": self._level, **self._noise_state()}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._values = [float(v) for v in state["values"]]
        self._level = None if state["level"] is None else float(state["level"])
        self._load_noise_state(state)
