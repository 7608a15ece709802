"""``slope:window=W,alpha=A``: stop when a one-sided test says the eval is falling.

At each eval, an ordinary least-squares line is fitted to the last W finite evals against
their steps, and the job stops when the slope is negative at significance A (t-test on the
slope with W - 2 degrees of freedom, its standard error from the residuals of the same
window). The critical t value is computed with scipy when the rule is built (once per
(A, W) in a process). The test uses no noise estimate from outside the window, so it adapts
to the job's noise but has few degrees of freedom; A is its knob. Uses the eval score only.
With a stated (``sigma=S``, ``eval_n=N``) or fleet noise (see ``stated_noise``) the test is
a z-test on the slope with that sigma instead.
"""

from __future__ import annotations

import functools
import math
from typing import Any, ClassVar

from evalstop.detectors.stated_noise import NOISE_PARAMS, NoiseAware
from evalstop.detectors.stop_arrays import same_parts


class SlopeTest(NoiseAware):
    name: ClassVar[str] = "slope"
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {"window": (int, 8), "alpha": (float, 0.01),
                                                     **NOISE_PARAMS}
    per_job = True  # see Detector.per_job

    def __init__(self, *, window: int = 8, alpha: float = 0.01, sigma: float | None = None,
                 eval_n: int | None = None, fleet=None, mode: str = "max") -> None:
        super().__init__(mode=mode)
        self._init_noise(sigma, eval_n, fleet)
        if window < 3:
            raise ValueError(f"window must be >= 3 (a slope and a residual), got {window}")
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), got {alpha}")
        self.window, self.alpha = window, alpha
        self._t_crit = _t_crit(alpha, window - 2)
        self._z_crit = _t_crit(alpha, 0)  # dof 0: the normal quantile, for a known noise
        self._xs: list[float] = []
        self._ys: list[float] = []

    def _observe(self, step, value, loss, proxy, progress):
        self._xs.append(float(step))
        self._ys.append(value)
        del self._xs[: -self.window], self._ys[: -self.window]
        self._feed_fleet(self._ys)
        if len(self._ys) < self.window:
            return None
        known = self._known_sigma()
        if known is None:
            t, crit = _slope_t(self._xs, self._ys), self._t_crit
        else:  # the noise is known: a z-test on the slope, no residual estimate needed
            t, crit = _slope_z(self._xs, self._ys, known), self._z_crit
        if t < -crit:
            return (f"eval falling over the last {self.window} evals "
                    f"(t = {t:.2f}, alpha {self.alpha})")
        return None

    def _known_sigma(self) -> float | None:
        """A stated or fleet noise (the window's level for eval_n), None for the t-test."""
        if not self.noise_known:
            return None
        return self._noise(self._ys, sum(self._ys) / len(self._ys))

    def stop_index(self, obs):
        """The rule over many fresh jobs at once, for the simulator's planned stops (see
        ``slope_array``); None for a subclass that changes the rule, or a fleet noise."""
        if not same_parts(self, SlopeTest, ("_observe", "_known_sigma", "_noise", "_check_value")):
            return None
        from evalstop.detectors.slope_array import stop_index
        return stop_index(self, obs)

    def _rule_state(self) -> dict[str, Any]:
        return {"xs": list(self._xs), "ys": list(self._ys), **self._noise_state()}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._xs = [float(x) for x in state["xs"]]
        self._ys = [float(y) for y in state["ys"]]
        self._load_noise_state(state)


@functools.lru_cache(maxsize=256)
def _t_crit(alpha: float, dof: int) -> float:
    """One-sided critical t value (dof 0: the normal's). Cached: a simulator builds one rule
    per job, and the quantile costs far more than a job's whole run of the rule."""
    from scipy import stats  # here, not at the top: scipy.stats costs ~0.5 s to import

    if dof == 0:
        return float(stats.norm.ppf(1.0 - alpha))
    return float(stats.t.ppf(1.0 - alpha, dof))


def _slope_z(xs: list[float], ys: list[float], sigma: float) -> float:
    """The OLS slope over its standard error for a known noise sigma."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    if sigma <= 0.0:
        return 0.0 if slope == 0.0 else math.copysign(math.inf, slope)
    return slope / (sigma / math.sqrt(sxx))


def _slope_t(xs: list[float], ys: list[float]) -> float:
    """t statistic of the OLS slope; +-inf for an exact line, 0 for a flat exact line."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    resid = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys))
    se = math.sqrt(resid / (n - 2) / sxx)
    if se == 0.0:
        return 0.0 if slope == 0.0 else math.copysign(math.inf, slope)
    return slope / se
