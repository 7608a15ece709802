"""Online, robust estimate of a job's own eval noise, shared by the noise-aware rules.

sigma_hat = MAD(second differences) / (0.6745 * sqrt(6)). A second difference
x[i-1] - 2 x[i] + x[i+1] cancels the curve's local level and slope, so what is left is
noise (variance 6 sigma^2) plus the curve's curvature, which is small between two evals.
First differences, the textbook choice, keep the slope: on a curve that rises steeply early
and flattens later their spread is the change of slope, and at low noise they overstate
sigma several times over. The MAD ignores single bad evals and heavy tails, and 0.6745
turns a MAD into a Gaussian sigma. Only the last ``MAX_VALUES`` values are kept, so state
and cost stay bounded on long jobs.
"""

from __future__ import annotations

import math
from statistics import median

MAX_VALUES = 200
_SCALE = {1: 0.6745 * math.sqrt(2.0), 2: 0.6745 * math.sqrt(6.0)}


def differences(values: list[float], order: int) -> list[float]:
    d = list(values)
    for _ in range(order):
        d = [b - a for a, b in zip(d, d[1:])]
    return d


def sigma_hat(values: list[float], order: int = 2) -> float:
    """The noise estimate from a job's finite values in order; 0.0 when too few."""
    d = differences(values, order)
    if not d:
        return 0.0
    mid = median(d)
    return median([abs(x - mid) for x in d]) / _SCALE[order]
