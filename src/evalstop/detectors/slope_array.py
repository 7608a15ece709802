"""``slope`` over many jobs at once: ``SlopeTest._observe`` for every window of W evals of
every row, as numpy operations, for the simulator's planned stops.

The object fits a line to the last W finite evals against their steps, which the simulator
numbers 1, 2, ... : on a row of finite values the window ending at eval j holds evals
j - W + 1 .. j at steps j - W + 2 .. j + 1. The steps' mean, their deviations and the sum
of their squares are exact (half-integers), the same for every window. Every sum over a
window is taken column by column in the window's order, from 0 as Python's ``sum`` starts,
so each float is the object's float; ``tests/test_stop_index_slope.py`` compares them.

One operation differs: the object squares a residual with ``** 2`` (C's ``pow``), here it
is ``r * r``. Both are within an ulp of the exact square, but not always the same float
(glibc's ``pow`` differed for about 0.1% of random doubles; numpy's ``power`` differs from
both), so a t statistic within a relative 1e-9 of the critical value (an ulp of a square
moves it by ~1e-15) leaves its row to the objects, as
do rows with values so large or small (outside 1e-30 .. 1e30 in size, zero aside) that a
square could overflow (the object then raises) or underflow. The known-noise z-test has no
square of a residual and needs no such margin.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop.detectors.stop_arrays import (
    SUM_IN_ORDER,
    best_upto,
    finite_rows,
    first_hit,
    higher_better,
    sum_in_order,
)

MARGIN = 1e-9  # relative distance of t from the critical value below which objects decide
TINY, HUGE = 1e-30, 1e30


def stop_index(det, obs: np.ndarray):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` (a ``SlopeTest`` with its
    own rule, no fleet) on the rows of ``obs``; None where only the objects can answer."""
    if not SUM_IN_ORDER or det.fleet is not None:
        return None
    raw, v = higher_better(det, obs)
    n, m = raw.shape
    size = np.abs(raw)
    done = finite_rows(raw)
    if det.eval_n is not None:  # the object raises on these: let it
        done &= ((raw >= 0.0) & (raw <= 1.0)).all(axis=1)
    w = det.window
    stop_at = np.full(n, -1, dtype=np.int64)
    if m < w or not done.any():
        return stop_at, np.full(n, -1, dtype=np.int64), done
    known = det.sigma is not None or det.eval_n is not None
    if not known:
        done &= ((size == 0.0) | ((size >= TINY) & (size <= HUGE))).all(axis=1)
    rows = np.flatnonzero(done)
    t, crit = statistics(det, v[rows])
    if known:
        unsure = np.zeros(rows.size, dtype=bool)
    else:
        near = np.isfinite(t) & (np.abs(t + crit) <= MARGIN * (np.abs(t) + crit))
        unsure = near.any(axis=1)
    at = first_hit(t < -crit, w - 1)
    at[unsure] = -1
    stop_at[rows] = at
    done[rows[unsure]] = False
    return stop_at, best_upto(v, stop_at), done


def statistics(det, vr: np.ndarray) -> tuple[np.ndarray, float]:
    """``(t, crit)``: the object's test statistic for the window ending at each eval
    w - 1 .. m - 1 of each row of ``vr`` (higher-is-better values, m >= w), and the critical
    value it is compared with (a stop where ``t < -crit``)."""
    with np.errstate(all="ignore"):  # as the object's floats: inf and nan, no warnings
        return _statistics(det, vr)


def _statistics(det, vr):
    w = det.window
    k = vr.shape[1] - w + 1
    cols = [vr[:, i: i + k] for i in range(w)]  # column i of every window
    # The steps of a window are a + 1, ..., a + w: their deviations from their mean are
    # i - (w - 1) / 2 whatever a, exactly (as is the object's mean, a sum of integers / w).
    dx = [float(i) - (w - 1) / 2 for i in range(w)]
    sxx = sum(d * d for d in dx)  # exact: half-integers; the object's ** 2 is exact too
    my = sum_in_order(cols) / w
    dy = [c - my for c in cols]
    slope = sum_in_order([d * e for d, e in zip(dx, dy)]) / sxx
    if det.sigma is not None or det.eval_n is not None:
        if det.sigma is not None:
            sigma = det.sigma
        else:  # stated_noise.binomial_sigma at the window's mean, as _known_sigma asks
            p = np.minimum(np.maximum(det._sign * my, 0.0), 1.0)
            q = (p * det.eval_n + 2.0) / (det.eval_n + 4.0)
            sigma = np.sqrt(q * (1.0 - q) / det.eval_n)
        return slope / (sigma / math.sqrt(sxx)), det._z_crit  # sigma > 0 either way
    resid = sum_in_order([(e - slope * d) ** 2 for d, e in zip(dx, dy)])  # r * r, not pow
    se = np.sqrt(resid / (w - 2) / sxx)
    t = np.where(se == 0.0, np.where(slope == 0.0, 0.0, np.copysign(np.inf, slope)),
                 slope / se)
    return t, det._t_crit
