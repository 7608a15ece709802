"""Online, robust estimate of a job's own eval noise, for the noise-aware rules.

The estimate is built from second differences d = x[i-1] - 2 x[i] + x[i+1]. A second
difference cancels the curve's local level and slope, so what is left is noise (variance
6 sigma^2) plus the curve's curvature, which is small between neighbouring evals. First
differences, the textbook choice, keep the slope: on a curve that rises steeply and then
flattens their spread is the change of slope, and at low noise they overstate sigma
several times over.

The scale of the d's is a winsorised mean absolute deviation from their median: each
|d - median| is clipped at 2.5 robust standard deviations (from the MAD) and the clipped
values are averaged. This keeps most of the efficiency of a mean (a plain MAD wastes about
two thirds of the few values a job has) while one bad eval, which touches three second
differences, cannot inflate it much. A job has few evals, so the estimate is also widened
by (1 + 1/sqrt(k)) for k second differences: a guard against the too-small estimates that
a short history gives about as often as too-large ones, and that would stop healthy jobs.
Only the last ``MAX_VALUES`` values are used, so cost and state stay bounded on long jobs.
"""

from __future__ import annotations

import math
from statistics import median

MAX_VALUES = 200
MIN_DIFFS = 3  # fewer second differences (5 evals) give no usable estimate
CLIP = 2.5
# E[min(|Z|, CLIP)] for Z ~ N(0, 1) and E|Z|: make the clipped and plain means estimate sigma.
CLIPPED_MEAN_ABS = math.sqrt(2.0 / math.pi) * (1.0 - math.exp(-CLIP**2 / 2.0)) + CLIP * math.erfc(
    CLIP / math.sqrt(2.0)
)
MEAN_ABS = math.sqrt(2.0 / math.pi)
MAD_N01 = 0.6744897501960817  # the MAD of N(0, 1)


def second_differences(values: list[float]) -> list[float]:
    return [a - 2.0 * b + c for a, b, c in zip(values, values[1:], values[2:])]


def diff_scale(d: list[float]) -> float:
    """The standard deviation of second differences, robustly: their winsorised mean absolute
    deviation from the median, made consistent for Gaussian values."""
    mid = median(d)
    dev = [abs(x - mid) for x in d]
    robust_sd = median(dev) / MAD_N01
    if robust_sd > 0.0:
        return sum(min(x, CLIP * robust_sd) for x in dev) / len(dev) / CLIPPED_MEAN_ABS
    # most d's equal (quantised scores): clipping at 0 would erase the rest
    return sum(dev) / len(dev) / MEAN_ABS


def sigma_hat(values: list[float]) -> float | None:
    """The widened noise estimate from a job's finite values in order; None with too few.

    Constant or exactly linear values give 0.0: every decline then exceeds the noise.
    """
    d = second_differences(values[-MAX_VALUES:])
    if len(d) < MIN_DIFFS:
        return None
    return diff_scale(d) / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(len(d)))
