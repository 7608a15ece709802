"""A dead-run test for ``block-cusum``: a run back at its start floor has no gain left.

A run whose score fell to where it started (or to the metric's floor, below it) and stays
there has nothing left to lose: the CUSUM's gates, which weigh a fall against the gain
still held and need a gain of several noise sigmas, were built for runs that still have
one. This test asks: over the last ``share`` of the run so far, is the level at the start
floor, after a rise that was real?

    dead  <=>  gain >= scale
               and  mean(recent) <= start + FLOOR_SHARE * gain + sigma / sqrt(w0)
               and  max(recent)  <= start + PEAK_SHARE * gain

or the recent values are all one value at or below the start (a score pinned at the
metric's floor, 0 for a pass rate: no noise to allow for, and any earlier rise counts).

``recent``: the block means covering the last ``share`` of the run (evals while blocks are
one eval); ``start``: the rule's start level, a mean of the first ``w0`` evals, whose own
noise (sigma / sqrt(w0)) the floor allows for; ``sigma``: the noise of one eval;
``scale``: the gain a rise must reach to count, the CUSUM's (``gmin`` noise sigmas of a
block, with the level's wander): early in a slow riser the level wanders back to its
start often, and that is no dead run. The maximum bar keeps a run that fell and came half
way back from counting as dead.
"""

from __future__ import annotations

import math

FLOOR_SHARE = 0.2
PEAK_SHARE = 0.5
MIN_PINNED = 3  # two equal values of a coarse score can be chance


def at_floor(recent: list[float], start: float, gain: float, sigma: float, w0: int,
             scale: float) -> bool:
    """Whether ``recent`` (oriented so higher is better) sits at the start floor after a
    rise of ``gain`` (see the module doc)."""
    if not recent or gain <= 0.0:
        return False
    if len(recent) >= MIN_PINNED and min(recent) == max(recent) <= start:
        return True  # pinned at one value at or below the start: the metric's floor
    if gain < scale:
        return False
    floor = start + FLOOR_SHARE * gain + sigma / math.sqrt(w0)
    return (sum(recent) / len(recent) <= floor
            and max(recent) <= start + PEAK_SHARE * gain)
