"""Where a noise-aware rule gets its eval noise: stated > fleet > the job's own estimate.

Every rule that measures drops in noise sigmas accepts two spec options and one object:

* ``sigma=S``: the standard deviation of one eval's score around the checkpoint's true
  quality, in score units (the user knows it, or ran the eval twice on one checkpoint).
* ``eval_n=N``: the eval is a proportion (pass rate) graded over N items, so its noise is
  binomial and depends on the level: sigma = sqrt(p (1 - p) / N) at the job's current
  reference level p. p is shrunk by the "plus four" rule, (p N + 2) / (N + 4), so a level
  at 0 or 1 still has a noise (a run at 0/100 is not noise-free). Scores must be in [0, 1].
* a ``FleetNoise`` (``fleet=``), shared by the jobs of one eval group, once it has pooled
  enough second differences (or a tenant's view of a group several tenants run,
  ``shared_noise.TenantNoise``).

Precedence: a stated noise (``sigma`` or ``eval_n``, not both) wins over the fleet, which
wins over the job's own estimate (``noise.sigma_hat``). A stated or fleet noise is known
from the first eval, so the rule need not wait for the 5+ evals its own estimate needs.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from evalstop.detectors.base import Detector
from evalstop.detectors.fleet import FleetNoise
from evalstop.detectors.noise import sigma_hat
from evalstop.detectors.shared_noise import TenantNoise

NOISE_PARAMS: dict[str, tuple[type, Any]] = {"sigma": (float, None), "eval_n": (int, None)}


def binomial_sigma(p: float, n: int) -> float:
    """Noise of a pass rate over n items at level p (plus-four shrunk away from 0 and 1)."""
    q = (p * n + 2.0) / (n + 4.0)
    return math.sqrt(q * (1.0 - q) / n)


def check_noise_options(sigma: float | None, eval_n: int | None) -> None:
    if sigma is not None and eval_n is not None:
        raise ValueError("give sigma or eval_n, not both")
    if sigma is not None and not (math.isfinite(sigma) and sigma > 0.0):
        raise ValueError(f"sigma must be finite and > 0, got {sigma}")
    if eval_n is not None and not eval_n >= 1:
        raise ValueError(f"eval_n must be an integer >= 1 (items graded per eval), got {eval_n}")


class NoiseAware(Detector):
    """Base of the noise-aware rules: resolves the noise by the precedence above and feeds
    the fleet. Subclasses call ``_init_noise`` and ask ``_noise(values, level)``."""

    reads_noise: ClassVar[bool] = True

    def _init_noise(self, sigma: float | None, eval_n: int | None,
                    fleet: FleetNoise | None) -> None:
        check_noise_options(sigma, eval_n)
        if fleet is not None and not isinstance(fleet, FleetNoise | TenantNoise):
            raise ValueError(f"fleet must be a FleetNoise, got {type(fleet).__name__}")
        self.sigma = None if sigma is None else float(sigma)
        self.eval_n = None if eval_n is None else int(eval_n)
        self.fleet = fleet
        # Only eval_n bounds the scores: without it, no value check on every eval.
        self._checks_value = self.eval_n is not None
        if fleet is not None:  # its decisions now depend on other jobs' evals too
            self.per_job = False
        self._fed = 0  # how many of this job's values the fleet has seen (restarts: no repeats)

    @property
    def noise_known(self) -> bool:
        """True when the noise does not need the job's own history."""
        return (self.sigma is not None or self.eval_n is not None
                or (self.fleet is not None and self.fleet.sigma() is not None))

    def _check_value(self, value: float) -> None:
        if self.eval_n is not None and not 0.0 <= self._sign * value <= 1.0:
            raise ValueError(f"eval_n={self.eval_n} needs scores that are proportions in "
                             f"[0, 1], got {self._sign * value!r}")

    def _feed_fleet(self, values: list[float]) -> None:
        """Give the fleet this job's newest second difference (call after appending)."""
        self._fed += 1
        if self.fleet is not None and self._fed >= 3 and len(values) >= 3:
            # Its place among this job's differences: a shared group takes a job's first
            # few only (detectors.recent_jobs).
            self.fleet.add(values[-3] - 2.0 * values[-2] + values[-1], self._fed - 3)

    def _noise(self, values: list[float], level: float | None) -> float | None:
        if self.sigma is not None:
            return self.sigma
        if self.eval_n is not None:
            ref = level if level is not None else sum(values[-3:]) / len(values[-3:])
            return binomial_sigma(min(max(self._sign * ref, 0.0), 1.0), self.eval_n)
        if self.fleet is not None:
            s = self.fleet.sigma()
            if s is not None:
                return s
        return self._own_sigma(values)

    def _own_sigma(self, values: list[float]) -> float | None:
        return sigma_hat(values)

    def _noise_state(self) -> dict[str, Any]:
        return {"fed": self._fed}

    def _load_noise_state(self, state: dict[str, Any]) -> None:
        self._fed = int(state.get("fed", 0))
