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

Noise options (``stated_noise``): ``sigma=S`` or ``eval_n=N`` state the noise, a shared
``FleetNoise`` supplies it; precedence stated > fleet > the job's own estimate.

Short runs: ``smooth_min=M`` lets the level window grow with the history, from M evals up
to S (width max(M, ceil(n / 2)) after n evals, trimming at most (width - 1) // 3 from
each end below S), so a 6-12-eval run has a level, and can stop, before S evals. When the
width grows the best level is found again over the job's history at the new width. Unset
(the default), the window is S from the start, as before.

Large drops: ``shift=J,shift_m=M`` also stops when the mean of the last M evals (each
clipped at C sigmas) is J standard errors below the best level (``shift_test``): the
CUSUM needs about H / (C - K) full-size evals whatever the drop's size, this test reacts
to a large sustained drop in M evals. Unset (the default), the rule is the CUSUM alone:
measured on issue 11's material the test bought no more than a lower H does.

Uses the eval score only. The proxy reward is no help here: on the benchmark it rises
in healthy and hacking runs alike. S and E count evals; the defaults were tuned on the
detector benchmark's tuning part (20 evals per run), and a denser eval schedule wants
S larger in proportion.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any, ClassVar

from evalstop.detectors.noise import MAX_VALUES
from evalstop.detectors.shift_test import shift_z
from evalstop.detectors.stated_noise import NOISE_PARAMS, NoiseAware


def check_cusum_args(*, h: float, k: float, clip: float, smooth: int, min_evals: int,
                     trim: int, smooth_min: int | None) -> None:
    """The CUSUM's own options, checked alike by every rule built on it."""
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
    if smooth_min is not None and not 2 <= smooth_min <= smooth:
        raise ValueError(f"smooth_min must be in 2..smooth, got smooth_min={smooth_min}, "
                         f"smooth={smooth}")

class CusumDrop(NoiseAware):
    name: ClassVar[str] = "cusum-drop"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {
        "h": (float, 2.0), "k": (float, 0.75), "clip": (float, 2.0), "smooth": (int, 9),
        "min_evals": (int, 6), "trim": (int, 2), "smooth_min": (int, None),
        "shift": (float, None), "shift_m": (int, None), **NOISE_PARAMS,
    }
    SHIFT_M = 2  # shift_m when only shift is given

    def __init__(self, *, h: float = 2.0, k: float = 0.75, clip: float = 2.0,
                 smooth: int = 9, min_evals: int = 6, trim: int = 2,
                 smooth_min: int | None = None, shift: float | None = None,
                 shift_m: int | None = None, sigma: float | None = None,
                 eval_n: int | None = None, fleet=None, mode: str = "max") -> None:
        super().__init__(mode=mode)
        self._init_noise(sigma, eval_n, fleet)
        check_cusum_args(h=h, k=k, clip=clip, smooth=smooth, min_evals=min_evals, trim=trim,
                         smooth_min=smooth_min)
        if shift is not None and not (shift > 0.0 and math.isfinite(shift)):
            raise ValueError(f"shift must be finite and > 0, got {shift}")
        if shift_m is not None and shift is None:
            raise ValueError("shift_m needs shift (the threshold of the shift test)")
        if shift_m is not None and shift_m < 2:  # one eval alone must not stop a job
            raise ValueError(f"shift_m must be >= 2, got {shift_m}")
        self.shift = None if shift is None else float(shift)
        self.shift_m = None if shift is None else (shift_m or self.SHIFT_M)
        self.h, self.k, self.clip = float(h), float(k), float(clip)
        self.smooth, self.min_evals, self.trim = smooth, min_evals, trim
        self.smooth_min = smooth_min
        self._width = smooth if smooth_min is None else smooth_min  # current level window
        self._values: list[float] = []
        self.last_w = 0.0
        self._level: float | None = None  # the best smoothed level so far
        self._since = 0  # evals seen after the window that set the best level

    def _smoothed(self, window: list[float]) -> float:
        if self.trim < 0:
            return median(window)
        trim = self.trim if len(window) == self.smooth else min(self.trim,
                                                                   (len(window) - 1) // 3)
        kept = sorted(window)[trim: len(window) - trim]
        # clamped so that rounding never puts the level above every value it averages
        return min(max(sum(kept) / len(kept), kept[0]), kept[-1])

    def _sigma(self, values: list[float]) -> float | None:
        """The noise scale the drops are measured in; None while it cannot be told."""
        return self._noise(values, self._level)

    def _regrow(self, values: list[float], width: int) -> None:
        """The window widened: find the best level over the history at the new width."""
        self._width, self._level, self._since = width, None, 0
        n = len(values)
        if self.trim < 0:
            for end in range(width, n + 1):
                level = median(values[end - width: end])
                if self._level is None or level > self._level:
                    self._level, self._since = level, n - end
            return
        # _smoothed inlined: this loop is most of the rule's cost while the window grows
        trim = self.trim if width == self.smooth else min(self.trim, (width - 1) // 3)
        stop, best, best_end = width - trim, None, 0
        for end in range(width, n + 1):
            kept = sorted(values[end - width: end])[trim: stop]
            level = min(max(sum(kept) / len(kept), kept[0]), kept[-1])
            if best is None or level > best:
                best, best_end = level, end
        if best is not None:
            self._level, self._since = best, n - best_end

    def _observe(self, step, value, loss, proxy, progress):
        values = self._values
        values.append(value)
        del values[: -max(MAX_VALUES, self.smooth)]
        self._feed_fleet(values)
        self._since += 1
        width = self._width
        if self.smooth_min is not None and width < self.smooth:
            grown = min(self.smooth, max(self.smooth_min, (self._n_evals + 1) // 2))
            if grown != width:
                self._regrow(values, grown)
                width = -1  # the level is current
        if 0 < width <= len(values):
            level = self._smoothed(values[-width:])
            if self._level is None or level > self._level:
                self._level, self._since = level, 0
        # the CUSUM and the shift statistic at this eval (read by benchmarks/tune_default.py)
        self.last_w = self.last_z = 0.0
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
        self.last_w = w
        if w >= self.h:
            return (f"CUSUM of drops below the best level reached {w:.2f} noise sigmas "
                    f"(threshold {self.h})")
        if self.shift is not None and len(since) >= self.shift_m:
            # the level averages the current width: a new width finds the level again
            z = shift_z(level, since[-self.shift_m:], sigma, self._width, self.clip)
            self.last_z = z
            if z >= self.shift:
                return (f"the last {self.shift_m} evals sit {z:.2f} standard errors below "
                        f"the best level (shift threshold {self.shift})")
        return None

    def stop_index(self, obs):
        """The rule over many fresh jobs at once, for the simulator's planned stops (see
        ``cusum_drop_array``); None for a subclass that changes the rule's parts."""
        cls = type(self)
        parts = ("_sigma", "_observe", "_smoothed", "_regrow", "_noise", "_own_sigma")
        if any(getattr(cls, f) is not getattr(CusumDrop, f) for f in parts):
            return None
        # The array version declines (None) the options it does not repeat, e.g. a fleet.
        from evalstop.detectors.cusum_drop_array import stop_index
        return stop_index(self, obs)

    def _rule_state(self) -> dict[str, Any]:
        return {"values": list(self._values), "level": self._level, "since": self._since,
                "width": self._width, **self._noise_state()}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        self._values = [float(v) for v in state["values"]]
        self._level = None if state["level"] is None else float(state["level"])
        self._since = int(state["since"])
        self._width = int(state.get("width", self.smooth if self.smooth_min is None
                                        else self.smooth_min))
        self._load_noise_state(state)
