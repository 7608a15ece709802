"""``cusum-drop:h=H,k=K,clip=C,smooth=S,min_evals=E,trim=T``: a one-sided, robust CUSUM
on standardised drops below the job's best smoothed level.

* Noise: sigma_hat, estimated online from the job's own evals (second differences,
  winsorised, widened for short histories; see ``noise``). No scale is configured per
  metric.
* Best level L: the highest trimmed mean of S consecutive evals, dropping the T lowest
  and the T highest of each window (``trim=-1`` takes the median). The best single eval
  is the maximum of many noisy draws and sits well above the true level; a trimmed mean
  sits close to it and ignores single-eval dips and spikes (T = 2 drops up to two of
  each per window), while it averages more evals than a median and so is less lifted by
  lucky windows.
* Each eval after the window that set the best level adds z = (L - x) / sigma_hat,
  clipped at C so that one wild eval cannot decide a stop alone (a Huber-type CUSUM).
* CUSUM: W = max(0, W + z - K) over those evals, recomputed at every eval with the
  current L and sigma_hat (a job has few evals, so this is cheap, and a new best level
  restarts it). Stop at the first eval where W >= H, and never before eval E (nor before
  S evals, since there is no level before then).

With C = 2, K = 0.75 and H = 2, at least two evals well below the level are needed:
one eval adds at most C - K = 1.25.

Uses the eval score only. The proxy reward is no help here: on the benchmark it rises
in healthy and hacking runs alike. S and E count evals; the defaults were tuned on the
detector benchmark's tuning part (20 evals per run), and a denser eval schedule wants
S larger in proportion.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any, ClassVar

from evalstop.detectors.base import Detector
from evalstop.detectors.noise import MAX_VALUES, sigma_hat


class CusumDrop(Detector):
    name: ClassVar[str] = "cusum-drop"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {
        "h": (float, 2.0), "k": (float, 0.75), "clip": (float, 2.0), "smooth": (int, 9),
        "min_evals": (int, 6), "trim": (int, 2),
    }

    def __init__(self, *, h: float = 2.0, k: float = 0.75, clip: float = 2.0,
                 smooth: int = 9, min_evals: int = 6, trim: int = 2,
                 mode: str = "max") -> None:
        super().__init__(mode=mode)
        if not (h > 0.0 and math.isfinite(h)):
            raise ValueError(f"h must be finite and > 0, got {h}")
        for key, v in (("k", k), ("clip", clip)):
            if not (v >= 0.0 and math.isfinite(v)):
                raise ValueError(f"{key} must be finite and >= 0, got {v}")
        if not clip > k:
            raise ValueError(f"clip must be > k, got clip={clip}, k={k}")
        if smooth < 1:
            raise ValueError(f"smooth must be >= 1, got {smooth}")
        if min_evals < 1:
            raise ValueError(f"min_evals must be >= 1, got {min_evals}")
        if trim < -1 or 2 * trim >= smooth:
            raise ValueError(f"trim must be -1 (median) or 0 <= 2 * trim < smooth, "
                             f"got trim={trim}, smooth={smooth}")
        self.h, self.k, self.clip = float(h), float(k), float(clip)
        self.smooth, self.min_evals, self.trim = smooth, min_evals, trim
        self._values: list[float] = []
        self._level: float | None = None  # the best smoothed level so far
        self._since = 0  # evals seen after the window that set the best level

    def _smoothed(self, window: list[float]) -> float:
        if self.trim < 0:
            return median(window)
        kept = sorted(window)[self.trim: len(window) - self.trim]
        # clamped so that rounding never puts the level above every value it averages
        return min(max(sum(kept) / len(kept), kept[0]), kept[-1])

    def _sigma(self, values: list[float]) -> float | None:
        """The noise scale the drops are measured in; None while it cannot be told."""
        return sigma_hat(values)

    def _observe(self, step, value, loss, proxy, progress):
        values = self._values
        values.append(value)
        del values[: -max(MAX_VALUES, self.smooth)]
        self._since += 1
        if len(values) >= self.smooth:
            level = self._smoothed(values[-self.smooth:])
            if self._level is None or level > self._level:
                self._level, self._since = level, 0
        if self._level is None or self._since == 0 or self._n_evals < self.min_evals:
            return None
        level, w = self._level, 0.0
        since = values[len(values) - min(self._since, len(values)):]
        if not any(v < level for v in since):
            return None  # no drop adds to W (z <= 0); skips the costly noise estimate
        sigma = self._sigma(values)
        if sigma is None:
            return None
        for v in since:
            if sigma > 0.0:
                z = min((level - v) / sigma, self.clip)
            else:  # noise-free scores: any eval below the level is a full-size drop
                z = self.clip if v < level else (0.0 if v == level else -math.inf)
            w = max(0.0, w + z - self.k)
        if w >= self.h:
            return (f"CUSUM of drops below the best level reached {w:.2f} noise sigmas "
                    f"(threshold {self.h})")
        return None

    def stop_index(self, obs):
        """The rule over many fresh jobs at once, for the simulator's planned stops (see
        ``cusum_drop_array``); None for a subclass that changes the rule's parts."""
        cls = type(self)
        if (cls._sigma, cls._observe, cls._smoothed) != (
                CusumDrop._sigma, CusumDrop._observe, CusumDrop._smoothed):
            return None
        from evalstop.detectors.cusum_drop_array import stop_index
        return stop_index(self, obs)

    def _rule_state(self) -> dict[str, Any]:
        return {"values": list(self._values), "level": self._level, "since": self._since}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._values = [float(v) for v in state["values"]]
        self._level = None if state["level"] is None else float(state["level"])
        self._since = int(state["since"])
