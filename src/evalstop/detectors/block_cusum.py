"""``block-cusum:...``: ``cusum-drop`` judged on blocks of training progress, with a
minimum decline relative to the run's own gain. A rule for runs of any eval count.

Why: a CUSUM with a fixed threshold has a fixed mean number of evals between false
alarms, so the more often a job is evaluated the surer a false stop. And on a fixed eval
set the level also wanders slowly, which eval-to-eval noise does not show.

* **Blocks.** Evals are averaged into blocks of ``b`` consecutive evals. ``b`` starts at 1
  and doubles whenever the history reaches ``2 * blocks`` blocks (neighbours are merged
  pairwise), so the rule always sees between ``blocks`` and ``2 * blocks`` block means,
  each a fixed share of the run so far. The same run evaluated twice as often has twice
  the block size at the same point of training and the same block boundaries, so it sees
  the same level path (with less eval noise per block): the decision depends on training
  progress, not on the eval count. The rule is judged when a block completes.
* **Level and CUSUM**, ``cusum-drop``'s over the block means: the best level L is the
  highest trimmed mean of W consecutive blocks; while ``b = 1``, W grows with the history
  exactly as ``cusum-drop``'s window (min(smooth, max(smooth_min, ceil(n / 2)))), and from
  the first merge on W = ``wblocks`` blocks (a fixed share of the run). Each block after
  the window that set L adds z = min((L - m) / s, clip) and C = max(0, C + z - k); the
  CUSUM fires when C >= h + hg * log2(max(1, n / hn)) after n evals (a threshold that
  grows with the number of looks beyond ``hn`` evals; hg = 0: fixed).
* **Noise of a block mean, s.** With ``b = 1``: as ``cusum-drop`` (stated > fleet > the
  job's own estimate), except that a rule given a fleet that is not ready yet waits for it
  (no stop) up to ``hn`` evals rather than trust its own estimate from a few evals. With ``b >= 2`` the stated or fleet noise of one eval divided by
  sqrt(b) is a floor that the job's own estimate over its block means can raise: the
  largest robust scale of their second differences at lags 1, 2, 4, ..., ``lags``
  (m[i - l] - 2 m[i] + m[i + l] cancels level and slope at any lag l, and holds the
  level's wander over l blocks), each widened as ``noise.sigma_hat``. A stated noise is
  the noise of one eval; it does not see the slow wander of the level, which a CUSUM over
  many looks would take for a decline.
* **Gain.** The gain is L minus the start level (the first window's, kept for good). A
  stop also needs the mean of the blocks in the CUSUM's current excursion above 0 (the
  evidence for the stop) to sit at least ``rel`` of the gain below L: a fall of a few
  percent of what the run has gained is no reason to stop it, however many sigmas it is.
  After ``hn`` evals it also needs the gain to be at least ``gmin`` noise sigmas s: a run
  that has not yet gained has no scale to judge a fall on (and a late riser, stopped in
  its flat start, would lose all of its gain).

* **After ``hn`` evals** (issue 46; each off at 0, the default turns on ``fast`` and
  ``dead``): ``fast``/``frel``, a collapse test at every eval (``collapse_test``: the two
  newest evals far below the median of the 8 before them, in noise and in gain);
  ``dead``, a run back at its start floor for the last ``dead`` of the run is stopped
  ("no gain left", ``dead_test``; the reason of any stop at the floor says so too, from
  the first eval on);
  ``idle``, a run that has not gained ``gmin`` block sigmas in ``idle`` evals is stopped;
  ``wander``, a stop also needs the fall to be ``wander`` times the level's wander
  measured on the block means (``_wander_sd``); ``last``, a fall must have lasted
  ``last * (1 - depth)`` of the run so far (the dip knob; depth: the fall's share of the
  gain). Up to ``hn`` evals none of them acts.
* **``plong=L``, a progress-aware start** (issue 46; off unless set): when the eval's
  ``progress`` (the share of the run done, 0-1) says the run will be long (evals so far /
  progress >= L), the gain gate ``gmin`` holds from the first eval, not only after ``hn``:
  the first evals of a long run whose level wanders look like a short hacked run's fall,
  and without knowing the length nothing tells them apart. After ``hn`` evals such a long
  run that has not gained may still be stopped when its level has fallen ``BELOW_START``
  x ``gmin`` noise sigmas below its start: a run hacked before it gained has no gain to
  judge its fall on, but falls far below where it began. Without progress (None, or
  outside (0, 1]) it changes nothing: the rule is the plain one, stop for stop.

With ``rel=0``, up to ``hn`` evals (or up to ``2 * blocks`` evals with ``gmin=0`` and
``hg=0``), the rule is ``cusum-drop`` with the same options, stop for stop (with a fleet:
once the fleet is ready): a short run is judged as before.

State: at most ``2 * blocks`` block means, the open block's sum and count, the last three
evals (for the fleet) and a few numbers: O(blocks), whatever the run's length. Each eval
costs O(1) unless it completes a block, then O(blocks) (O(blocks * W log W) when the
window changes or blocks merge).

The stop reason says what a tenant can act on: how far below its best level the job is
(as a share of its gain and in noise sigmas), since which eval, over what share of the run.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any, ClassVar

from evalstop.detectors.collapse_test import RECENT, PairHistory, collapse_fall, drop_of_pair
from evalstop.detectors.cusum_drop import check_cusum_args
from evalstop.detectors.dead_test import at_floor
from evalstop.detectors.noise import MIN_DIFFS, diff_scale, sigma_hat
from evalstop.detectors.stated_noise import NOISE_PARAMS, NoiseAware, binomial_sigma


class BlockCusum(NoiseAware):
    name: ClassVar[str] = "block-cusum"
    per_job = True  # see Detector.per_job
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {
        "h": (float, 2.5), "k": (float, 1.5), "clip": (float, 3.0), "smooth": (int, 15),
        "min_evals": (int, 4), "trim": (int, 3), "smooth_min": (int, 3),
        "blocks": (int, 16), "wblocks": (int, 4), "rel": (float, 0.05), "hg": (float, 0.0),
        "hn": (int, 20), "lags": (int, 4), "gmin": (float, 5.0), "wander": (float, 0.0),
        "last": (float, 0.0), "fast": (float, 0.0), "frel": (float, 0.35),
        "dead": (float, 0.0), "idle": (int, 0), "plong": (int, None), **NOISE_PARAMS,
    }
    # the options of the paths after hn evals (issue 46): off, the rule is issue 21's
    LATE = ("wander", "last", "fast", "dead", "idle")

    def __init__(self, *, h: float = 2.5, k: float = 1.5, clip: float = 3.0,
                 smooth: int = 15, min_evals: int = 4, trim: int = 3,
                 smooth_min: int | None = 3, blocks: int = 16, wblocks: int = 4,
                 rel: float = 0.05, hg: float = 0.0, hn: int = 20, lags: int = 4,
                 gmin: float = 5.0, wander: float = 0.0, last: float = 0.0, fast: float = 0.0,
                 frel: float = 0.35, dead: float = 0.0, idle: int = 0,
                 plong: int | None = None, sigma: float | None = None,
                 eval_n: int | None = None, fleet=None, mode: str = "max") -> None:
        super().__init__(mode=mode)
        self._init_noise(sigma, eval_n, fleet)
        check_cusum_args(h=h, k=k, clip=clip, smooth=smooth, min_evals=min_evals, trim=trim,
                         smooth_min=smooth_min)
        for key, v in (("hg", hg), ("gmin", gmin), ("fast", fast), ("wander", wander)):
            if not (v >= 0.0 and math.isfinite(v)):
                raise ValueError(f"{key} must be finite and >= 0, got {v}")
        for key, v in (("rel", rel), ("last", last), ("frel", frel), ("dead", dead)):
            if not (0.0 <= v < 1.0):
                raise ValueError(f"{key} must be in [0, 1) (a share), got {v}")
        if idle < 0:
            raise ValueError(f"idle must be >= 0 (evals; 0: off), got {idle}")
        if plong is not None and plong < 0:
            raise ValueError(f"plong must be >= 0 (evals; 0: off), got {plong}")
        if lags < 1 or lags & (lags - 1):
            raise ValueError(f"lags must be a power of 2 (1, 2, 4, ...), got {lags}")
        # after a merge the rule sees `blocks` blocks: a fixed window must fit in them
        lowest = smooth if smooth_min is None else smooth_min
        if blocks < max(4, lowest):
            raise ValueError(f"blocks must be >= 4 and >= the smallest level window "
                             f"({lowest}), got {blocks}")
        self.h, self.k, self.clip = float(h), float(k), float(clip)
        self.smooth, self.min_evals, self.trim = smooth, min_evals, trim
        if not 1 <= wblocks <= blocks // 2:
            raise ValueError(f"wblocks must be in 1..blocks // 2, got wblocks={wblocks}, "
                             f"blocks={blocks}")
        if hn < 1:
            raise ValueError(f"hn must be >= 1 (evals), got {hn}")
        self.smooth_min, self.blocks, self.wblocks, self.hn = smooth_min, blocks, wblocks, hn
        self.rel, self.hg, self.lags, self.gmin = float(rel), float(hg), lags, float(gmin)
        self.wander, self.last, self.fast, self.frel = (float(wander), float(last), float(fast),
                                                        float(frel))
        self.dead, self.idle = float(dead), idle
        # off (0 or unset) is None, so the spec of a rule without it stays as it was
        self.plong = int(plong) if plong else None
        self._long = False  # the gain gate holds from the first eval (plong; this eval)
        self._b = 1  # evals per block
        self._means: list[float] = []  # completed block means, at most 2 * blocks
        self._open_sum, self._open_n = 0.0, 0
        # the last evals: the fleet's second differences (3), the collapse test (RECENT)
        self._tail: list[float] = []
        self._pairs = PairHistory()  # the collapse test's scale of its statistic
        self._width = lowest
        self._level: float | None = None  # best smoothed level (over blocks)
        self._start: float | None = None  # level of the first window (kept for good)
        self._since = 0  # blocks after the window that set the best level
        self.last_w = 0.0  # the CUSUM at the last completed block (for tuning scripts)

    # ---- levels -----------------------------------------------------------------------
    def _trim_for(self, width: int) -> int:
        return self.trim if width == self.smooth else min(self.trim, (width - 1) // 3)

    def _smoothed(self, window: list[float]) -> float:
        if self.trim < 0:
            return median(window)
        trim = self._trim_for(len(window))
        kept = sorted(window)[trim: len(window) - trim]
        # clamped so that rounding never puts the level above every value it averages
        return min(max(sum(kept) / len(kept), kept[0]), kept[-1])

    def _want_width(self) -> int:
        if self._b > 1:
            return self.wblocks
        if self.smooth_min is None:
            return self.smooth
        return min(self.smooth, max(self.smooth_min, (len(self._means) + 1) // 2))

    def _refind(self, width: int) -> None:
        """The window or the blocks changed: find the best and first levels again."""
        self._width, self._level, self._since = width, None, 0
        means = self._means
        n = len(means)
        for end in range(width, n + 1):
            level = self._smoothed(means[end - width: end])
            if self._start is None:
                self._start = level
            if self._level is None or level > self._level:
                self._level, self._since = level, n - end

    def _merge(self) -> None:
        m = self._means
        self._means = [(m[i] + m[i + 1]) / 2.0 for i in range(0, len(m) - 1, 2)]
        self._b *= 2

    # ---- noise ------------------------------------------------------------------------
    def _eval_sigma(self) -> float | None:
        """The stated or fleet noise of one eval, None when neither is known."""
        if self.sigma is not None:
            return self.sigma
        if self.eval_n is not None:
            ref = self._level if self._level is not None else self._means[-1]
            return binomial_sigma(min(max(self._sign * ref, 0.0), 1.0), self.eval_n)
        if self.fleet is not None:
            return self.fleet.sigma()
        return None

    @property
    def _keep(self) -> int:
        """How many of the last evals the rule keeps."""
        return RECENT if self.fast > 0.0 else 3

    def _late(self) -> bool:
        return self._n_evals > self.hn

    def _block_sigma(self) -> float | None:
        one = self._eval_sigma()
        if one is None and self.fleet is not None and self._n_evals <= self.hn:
            return None  # wait for the fleet: an own estimate from a few evals stops too much
        if self._b == 1:
            return one if one is not None else sigma_hat(self._means)
        own = self._own_block_sigma()
        floor = None if one is None else one / math.sqrt(self._b)
        if own is None:
            return floor
        return own if floor is None else max(own, floor)

    def _wander_sd(self) -> float:
        """The level's wander measured on the block means: the part of the largest lag's
        noise scale that the noise of a block (stated, or the job's own at lag 1) does not
        explain, sqrt(s_lags^2 - s_1^2)."""
        own = self._own_block_sigma()
        one = self._eval_sigma()
        base = sigma_hat(self._means) if one is None else one / math.sqrt(self._b)
        if own is None or base is None:
            return 0.0
        return math.sqrt(max(0.0, own * own - base * base))

    def _own_block_sigma(self) -> float | None:
        """The largest noise scale of the block means over lags 1, 2, 4, ..., ``lags``: a
        second difference at lag l, m[i - l] - 2 m[i] + m[i + l], cancels the level and
        slope as at lag 1 but also holds the wander over l blocks."""
        best = sigma_hat(self._means)
        lag = 2
        while best is not None and lag <= self.lags:
            m = self._means
            d = [m[i - lag] - 2.0 * m[i] + m[i + lag] for i in range(lag, len(m) - lag)]
            if len(d) < MIN_DIFFS:
                break
            best = max(best, diff_scale(d) / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(len(d))))
            lag *= 2
        return best

    # ---- the rule ---------------------------------------------------------------------
    def _observe(self, step, value, loss, proxy, progress):
        if self.plong is not None:
            self._long = _expected_evals(self._n_evals, progress) >= self.plong
        tail = self._tail
        tail.append(value)
        del tail[:-self._keep]
        self._feed_fleet(tail)
        self._open_sum += value
        self._open_n += 1
        if self.fast > 0.0:
            reason = self._collapse() if self._late() else None
            if reason is not None:
                return reason
            d = drop_of_pair(tail)
            if d is not None:
                self._pairs.add(d)
        if self._open_n < self._b:
            return None
        self._means.append(self._open_sum / self._open_n)
        self._open_sum, self._open_n = 0.0, 0
        merged = len(self._means) >= 2 * self.blocks
        if merged:
            self._merge()
        width = self._want_width()
        if merged or width != self._width:
            self._refind(width)
        else:
            self._since += 1
            if width <= len(self._means):
                level = self._smoothed(self._means[-width:])
                if self._start is None:
                    self._start = level
                if self._level is None or level > self._level:
                    self._level, self._since = level, 0
        return self._judge()

    def _judge(self) -> str | None:
        self.last_w = 0.0
        if self._level is None or self._since == 0 or self._n_evals < self.min_evals:
            return None
        level, means = self._level, self._means
        if (self.dead > 0.0 or self.idle) and self._late():
            reason = self._no_gain()
            if reason is not None:
                return reason
        since = means[len(means) - min(self._since, len(means)):]
        if not any(v < level for v in since):
            return None  # no drop adds to W (z <= 0); skips the noise estimate
        sigma = self._block_sigma()
        if sigma is None:
            return None
        w, run_from = 0.0, 0  # run_from: where the current excursion of W above 0 began
        for i, v in enumerate(since):
            if sigma > 0.0:
                z = min((level - v) / sigma, self.clip)
            else:  # noise-free scores: any value below the level is a full-size drop
                z = self.clip if v < level else (0.0 if v == level else -math.inf)
            if w == 0.0:
                run_from = i
            w = max(0.0, w + z - self.k)
        self.last_w = w
        threshold = self.h + self.hg * math.log2(max(1.0, self._n_evals / self.hn))
        if w < threshold:
            return None
        recent = since[run_from:]
        now = sum(recent) / len(recent)
        gain = max(level - self._start, 0.0)
        fall = level - now
        if self.rel > 0.0 and fall < self.rel * gain:
            return None
        below_start = False
        if (self._n_evals > self.hn or self._long) and gain < self.gmin * sigma:
            # A run that has not gained yet has no scale to judge a fall on, unless
            # (plong, a long run, after hn evals) it has fallen far below where it
            # started: a still-rising run's wander dips a few sigmas below its best, a run
            # hacked before it gained can fall tens of sigmas below its start.
            below_start = (self._long and self._late()
                           and self._start - now >= BELOW_START * self.gmin * sigma)
            if not below_start:
                return None
        if self.wander > 0.0 and self._late() and fall < self.wander * self._wander_sd():
            return None  # within what the level's own wander reaches
        span = len(recent) * self._b
        if self.last > 0.0 and self._late() and span < self._must_last(fall, gain):
            return None  # not yet long enough to tell from a dip that recovers
        share = f"{fall / gain:.0%} of its gain" if gain > 0.0 else "it never gained"
        if below_start:
            share = (f"{_in_sigmas(self._start - now, sigma, self._b)} below where it "
                     f"started, before it gained {self.gmin:g} sigmas")
        noise = _in_sigmas(fall, sigma, self._b)
        first = self._n_evals - span + 1
        return (f"{self._floor_note(recent)}the level is {self._sign * fall:.4g} below its best "
                f"({self._sign * level:.4g}): {share}, {noise}, over the last {span} evals "
                f"(from the {_ordinal(first)} finite eval on, {span / self._n_evals:.0%} of "
                f"the run so far); CUSUM {w:.2f} >= {threshold:.2f}")

    def _must_last(self, fall: float, gain: float) -> float:
        """How many evals a fall must last to stop the run: ``last`` of the run so far for a
        shallow fall, less in proportion for a deeper one (none at the whole gain)."""
        depth = min(fall / gain, 1.0) if gain > 0.0 else 1.0
        return self.last * self._n_evals * (1.0 - depth)

    # ---- the paths after hn evals: a collapse, no gain left --------------------------
    def _one_sigma(self) -> float | None:
        """The noise of one eval: stated, binomial at the level, fleet, else the job's own
        over its last evals."""
        one = self._eval_sigma()
        return one if one is not None else sigma_hat(self._tail)

    def _collapse(self) -> str | None:
        if self._level is None or self._start is None:
            return None
        sign = self._sign
        gain = self._level - self._start
        found = collapse_fall(self._tail, self._eval_sigma(), self._pairs.mean(), gain,
                              self.fast, self.frel)
        if found is None:
            return None
        fall, sigma = found
        noise = f"{fall / sigma:.1f} times its noise scale" if sigma > 0.0 else \
            "noise-free scores"
        return (f"{self._floor_note(self._tail[-2:])}collapse: the last 2 evals are "
                f"{sign * fall:.4g} below the level of the "
                f"{RECENT - 2} evals before them: {fall / gain:.0%} of its gain "
                f"({sign * self._level:.4g} best, {sign * self._start:.4g} at the start), "
                f"{noise}")

    def _floor_note(self, values: list[float]) -> str:
        """"no gain left: " when ``values`` (the evidence of a stop) sit at the start floor
        and the dead-run path is on: the stop says so whichever path found it first, also
        in the first ``hn`` evals, where the path itself does not act yet (text only: no
        decision depends on it)."""
        if self.dead <= 0.0 or self._start is None:
            return ""
        return "no gain left: " if self._dead_at(values) else ""

    def _dead_at(self, values: list[float]) -> bool:
        sigma, s = self._one_sigma(), self._block_sigma()
        if sigma is None or s is None:
            return False
        w0 = self.smooth if self.smooth_min is None else self.smooth_min
        return at_floor(values, self._start, self._level - self._start, sigma, w0,
                        self.gmin * s)

    def _no_gain(self) -> str | None:
        """A run back at its start floor for the last ``dead`` of the run (or, with
        ``idle``, one that never rose in ``idle`` evals): the stop reason, else None."""
        if self._start is None:
            return None
        level, start, sign = self._level, self._start, self._sign
        gain = level - start
        if self.dead > 0.0:
            q = max(1, math.ceil(self.dead * len(self._means)))
            recent = self._means[-q:]
            if self._dead_at(recent):
                span = q * self._b
                return (f"no gain left: the level over the last {span} evals "
                        f"({span / self._n_evals:.0%} of the run so far) is "
                        f"{sign * sum(recent) / len(recent):.4g}, back at its start "
                        f"({sign * start:.4g}) after a best of {sign * level:.4g}")
        s = self._block_sigma() if self.idle and self._n_evals >= self.idle else None
        if s is not None and gain < self.gmin * s:
            return (f"no gain yet: after {self._n_evals} evals the best level "
                    f"({sign * level:.4g}) is {sign * gain:.4g} above its start "
                    f"({sign * start:.4g}), under {self.gmin:g} noise sigmas of a block")
        return None

    def stop_index(self, obs, progress=None):
        """The rule over many fresh jobs at once, for the simulator's planned stops (see
        ``block_cusum_array``); None where only the objects answer."""
        from evalstop.detectors.block_cusum_array import stop_index
        return stop_index(self, obs, progress)

    def _rule_state(self) -> dict[str, Any]:
        return {"b": self._b, "means": list(self._means), "open_sum": self._open_sum,
                "open_n": self._open_n, "tail": list(self._tail), "width": self._width,
                "level": self._level, "start": self._start, "since": self._since,
                **({"pairs": [self._pairs.total, self._pairs.count]} if self.fast > 0.0
                   else {}),
                **self._noise_state()}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        b = int(state["b"])
        means = [float(v) for v in state["means"]]
        if b < 1 or b & (b - 1) or len(means) >= 2 * self.blocks:
            raise ValueError("bad block-cusum state: block size or block count out of range")
        self._b, self._means = b, means
        self._open_sum, self._open_n = float(state["open_sum"]), int(state["open_n"])
        self._tail = [float(v) for v in state["tail"]][-self._keep:]
        self._width = int(state["width"])
        self._level = None if state["level"] is None else float(state["level"])
        self._start = None if state["start"] is None else float(state["start"])
        self._since = int(state["since"])
        total, count = state.get("pairs", (0.0, 0))
        self._pairs = PairHistory(float(total), int(count))
        self._load_noise_state(state)


def _expected_evals(n: int, progress: float | None) -> float:
    """The run's expected eval count from its evals so far and the share of it done; 0
    (unknown) without a usable progress, so that the rule is then the plain one."""
    try:
        p = float(progress) if progress is not None else math.nan
    except (TypeError, ValueError):
        return 0.0
    if not 0.0 < p <= 1.0:  # NaN fails both comparisons
        return 0.0
    return n / p


# Past this many sigmas a count says nothing more (a sigma of ~0 reads as 3.5e14 sigmas).
FAR_SIGMAS = 1000.0


# plong: how far below its start (in gmin's noise sigmas) a long run that has not gained
# must fall to be stopped after hn evals. Chosen on tuning material
# (benchmarks/tune_progress.py): the lowest of {1, 1.5, 2, 3} that keeps the harm on
# still-rising runs and dips at plong's without it.
BELOW_START = 2.0


def _in_sigmas(fall: float, sigma: float, b: int) -> str:
    """A fall in noise sigmas for the stop reason: capped, so a near-zero noise reads as
    "far beyond the noise", not as a 15-digit count."""
    of = f" of a mean of {b} evals" if b > 1 else ""
    if sigma <= 0.0:
        return "noise-free scores"
    if fall > FAR_SIGMAS * sigma:
        return f"far beyond the noise{of} (over {FAR_SIGMAS:.0f} sigmas of {sigma:.3g})"
    return f"{fall / sigma:.1f} noise sigmas{of}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
