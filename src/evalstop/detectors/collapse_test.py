"""A collapse test for ``block-cusum``: a fall of much of the gain within one or two evals.

On a long run the CUSUM is judged only when a block of evals completes (up to 5% of the
run), and it needs several blocks below the level: a collapse would run on for tens of
evals. This test reads the evals themselves. The two newest evals a, b are compared with
the median of the ``REF`` evals before them (the recent level, not the best one, so a
level that wandered down slowly is no collapse):

    D = ref - max(a, b)
    collapse  <=>  D >= z * scale  and  D >= rel * gain  and  gain >= GAIN_Z * z * scale

Both evals must sit below the recent level, so one wild eval never stops a job. ``scale``
is the larger of the stated (or fleet) noise of one eval and ``PAST_SD`` times the run's
own mean |D| so far (``PairHistory``: the same statistic, so it holds whatever the level
does from a few evals to the next, the wander included); with neither, the job's own
noise estimate over the reference evals. ``gain`` is the rule's (best level less start
level): early in a slow riser the gain so far is small and a few-eval wander step would
be "most of it", hence the bar on the gain itself. With z = 3.5 and Gaussian noise alone
a steady run sets off the test with a chance of about 1e-5 per eval; a fall of 4 noise
sigmas passes about half the time at its first pair, and mostly by its second.
"""

from __future__ import annotations

from statistics import median

from evalstop.detectors.noise import sigma_hat

REF = 8  # evals in the reference level
RECENT = REF + 2  # evals the test reads
MIN_PAST = 8  # values of D before the run's own scale of D counts
CLIP_PAST = 3.0
# mean |D| over sigma for Gaussian noise on a level held steady is about 0.88: the run's
# mean |D| times 1.25 stands for a sigma of one eval, a little above it when the noise is
# all there is, and as large as the level's few-eval wander makes the pairs' drops
PAST_SD = 1.25
# chosen by hand on issue 46's tuning material: 0 let a few-eval wander step early in a
# slow riser read as a collapse; 1.5 and 2 missed collapses of runs with a large wander
GAIN_Z = 1.0


def drop_of_pair(recent: list[float]) -> float | None:
    """D: the median of the ``REF`` evals before the two newest less the higher of those
    two, over the last ``RECENT`` of ``recent``; None with fewer."""
    if len(recent) < RECENT:
        return None
    return median(recent[-RECENT:-2]) - max(recent[-2:])


def collapse_fall(recent: list[float], one: float | None, past: float | None, gain: float,
                  z: float, rel: float) -> tuple[float, float] | None:
    """(D, scale) when the two newest of ``recent`` (the last evals, oriented so higher
    is better) collapsed below the ones before (see the module doc), else None. ``one``:
    the stated or fleet noise of one eval (None when neither is known); ``past``: the
    run's mean |D| so far (None before ``MIN_PAST`` values)."""
    fall = drop_of_pair(recent)
    if fall is None or gain <= 0.0 or fall < rel * gain:
        return None
    if one is None and past is None:
        one = sigma_hat(recent[-RECENT:-2])
    scale = max(s for s in (one, None if past is None else PAST_SD * past, 0.0)
                if s is not None)
    if fall < z * scale or gain < GAIN_Z * z * scale:
        return None
    return fall, scale


class PairHistory:
    """The run's mean |D| (``drop_of_pair``), each new |D| clipped at ``CLIP_PAST`` times
    the mean so far once ``MIN_PAST`` are in (one collapse, or a bad eval, moves it
    little). O(1) state."""

    def __init__(self, total: float = 0.0, count: int = 0) -> None:
        self.total, self.count = total, count

    def mean(self) -> float | None:
        return self.total / self.count if self.count >= MIN_PAST else None

    def add(self, d: float) -> None:
        m = self.mean()
        self.total += abs(d) if m is None else min(abs(d), CLIP_PAST * m)
        self.count += 1
