"""``cusum-drop`` over many jobs at once: the rule of ``CusumDrop._observe``, eval by eval,
as numpy operations on all jobs' rows, for the simulator's planned stops.

It repeats the object's arithmetic operation for operation (sorted windows summed left to
right, ``statistics.median``'s middle or mean of the two middles, the noise estimate's sums
in the order of the values), so each float is the object's float and each decision the
object's decision; ``tests/test_sim_fastpath.py`` compares them. Where that would not hold
it answers nothing and the objects decide: rows with a non-finite score, histories longer
than the noise estimate's window, and Python 3.12+, whose ``sum`` of floats is compensated.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from evalstop.detectors.noise import CLIP, CLIPPED_MEAN_ABS, MAD_N01, MAX_VALUES, MEAN_ABS, MIN_DIFFS


def _sum_in_order(cols: np.ndarray) -> np.ndarray:
    """``sum`` of each row's values, left to right (Python's sum of floats up to 3.11)."""
    acc = cols[:, 0].copy()
    for c in range(1, cols.shape[1]):
        acc = acc + cols[:, c]
    return acc


def _median(sorted_rows: np.ndarray) -> np.ndarray:
    n = sorted_rows.shape[1]
    if n % 2:
        return sorted_rows[:, n // 2]
    return (sorted_rows[:, n // 2 - 1] + sorted_rows[:, n // 2]) / 2


def _sigma_hat(d: np.ndarray) -> np.ndarray:
    """``noise.sigma_hat`` for rows whose second differences are ``d`` (all rows alike
    long, at least MIN_DIFFS)."""
    n_d = d.shape[1]
    mid = _median(np.sort(d, axis=1))
    dev = np.abs(d - mid[:, None])
    robust_sd = _median(np.sort(dev, axis=1)) / MAD_N01
    clipped = _sum_in_order(np.minimum(dev, (CLIP * robust_sd)[:, None])) / n_d / CLIPPED_MEAN_ABS
    plain = _sum_in_order(dev) / n_d / MEAN_ABS
    scale = np.where(robust_sd > 0.0, clipped, plain)
    return scale / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(n_d))


def stop_index(det, obs: np.ndarray):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` on the rows of ``obs``
    (see ``KDecline.stop_index``), or None where only the objects can answer."""
    if sys.version_info >= (3, 12):
        return None
    v = det._sign * np.asarray(obs, dtype=np.float64)
    n, m = v.shape
    if m > max(MAX_VALUES, det.smooth):
        return None
    done = np.isfinite(v).all(axis=1)
    stop_at = np.full(n, -1, dtype=np.int64)
    kept = np.full(n, -1, dtype=np.int64)
    if m == 0 or not done.any():
        return stop_at, kept, done
    S, T = det.smooth, det.trim
    levels = np.full((n, m), np.nan)  # the smoothed level of the window ending at each eval
    if m >= S:
        windows = np.sort(np.lib.stride_tricks.sliding_window_view(v, S, axis=1), axis=2)
        for j in range(S - 1, m):
            w = windows[:, j - S + 1, :]
            if T < 0:
                levels[:, j] = _median(w)
            else:
                part = w[:, T: S - T]
                mean = _sum_in_order(part) / part.shape[1]
                levels[:, j] = np.minimum(np.maximum(mean, part[:, 0]), part[:, -1])
    d2 = v[:, :-2] - 2.0 * v[:, 1:-1] + v[:, 2:]  # second differences, as noise.py
    level = np.full(n, -np.inf)
    has_level = np.zeros(n, dtype=bool)
    since = np.zeros(n, dtype=np.int64)
    best, best_at = np.full(n, -np.inf), np.zeros(n, dtype=np.int64)
    open_ = done.copy()  # not yet stopped (rows left to the objects never are)
    for j in range(m):
        col = v[:, j]
        better = col > best
        best = np.where(better, col, best)
        best_at[better] = j
        since += 1
        if j >= S - 1:
            new = ~has_level | (levels[:, j] > level)
            level = np.where(new, levels[:, j], level)
            has_level |= new
            since[new] = 0
        if j + 1 < det.min_evals or j - 1 < MIN_DIFFS:  # too few evals, or no noise scale
            continue
        ask = open_ & has_level & (since > 0)
        if not ask.any():
            continue
        sigma = _sigma_hat(d2[:, : j - 1])
        w = np.zeros(n)
        for i in range(j + 1):  # the evals since the best level, oldest first
            x = v[:, i]
            inside = i >= j + 1 - since
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(sigma > 0.0, np.minimum((level - x) / sigma, det.clip),
                             np.where(x < level, det.clip,
                                      np.where(x == level, 0.0, -np.inf)))
            w = np.where(inside, np.maximum(0.0, w + z - det.k), w)
        hit = ask & (w >= det.h)
        stop_at[hit] = j
        kept[hit] = best_at[hit]
        open_ &= ~hit
    return stop_at, kept, done
