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

from evalstop.detectors.noise import (
    CLIP,
    CLIPPED_MEAN_ABS,
    MAD_N01,
    MAX_VALUES,
    MEAN_ABS,
    MIN_DIFFS,
)


def _sum_in_order(rows: np.ndarray) -> np.ndarray:
    """``sum`` of each column's values, first row to last (Python's sum of floats up to
    3.11); arrays here are (eval, job), so each step is one contiguous row."""
    acc = rows[0].copy()
    for r in rows[1:]:
        acc += r
    return acc


def _median(sorted_rows: np.ndarray) -> np.ndarray:
    """``statistics.median`` of each column of an array sorted along axis 0."""
    n = sorted_rows.shape[0]
    if n % 2:
        return sorted_rows[n // 2]
    return (sorted_rows[n // 2 - 1] + sorted_rows[n // 2]) / 2


def _sigma_hat(d: np.ndarray) -> np.ndarray:
    """``noise.sigma_hat`` for the jobs (columns) whose second differences are ``d``
    (eval, job), all alike long and at least MIN_DIFFS."""
    n_d = d.shape[0]
    mid = _median(np.sort(d, axis=0))
    dev = np.abs(d - mid)
    robust_sd = _median(np.sort(dev, axis=0)) / MAD_N01
    clipped = _sum_in_order(np.minimum(dev, CLIP * robust_sd)) / n_d / CLIPPED_MEAN_ABS
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
    vt = np.ascontiguousarray(v.T)  # (eval, job): one eval of every job is one row
    levels = np.full((m, n), np.nan)  # the smoothed level of the window ending at each eval
    if m >= S:
        windows = np.sort(np.lib.stride_tricks.sliding_window_view(vt, S, axis=0), axis=2)
        for j in range(S - 1, m):
            w = np.ascontiguousarray(windows[j - S + 1].T)  # (S, job), sorted
            if T < 0:
                levels[j] = _median(w)
            else:
                part = w[T: S - T]
                mean = _sum_in_order(part) / part.shape[0]
                levels[j] = np.minimum(np.maximum(mean, part[0]), part[-1])
    level = np.full(n, -np.inf)
    has_level = np.zeros(n, dtype=bool)
    since = np.zeros(n, dtype=np.int64)
    best, best_at = np.full(n, -np.inf), np.zeros(n, dtype=np.int64)
    open_ = done.copy()  # not yet stopped (rows left to the objects never are)
    for j in range(m):
        col = vt[j]
        better = col > best
        best = np.where(better, col, best)
        best_at[better] = j
        since += 1
        if j >= S - 1:
            new = ~has_level | (levels[j] > level)
            level = np.where(new, levels[j], level)
            has_level |= new
            since[new] = 0
        if j + 1 < det.min_evals or j - 1 < MIN_DIFFS:  # too few evals, or no noise scale
            continue
        rows = np.flatnonzero(open_ & has_level & (since > 0))
        if rows.size == 0:
            continue
        x = vt[: j + 1, rows]  # (eval, asked job)
        lv = level[rows]
        first = j + 1 - since[rows]  # the first eval after the window that set the level
        # No eval below the level adds nothing to W (the object skips the noise estimate).
        below = ((x < lv) & (np.arange(j + 1)[:, None] >= first)).any(axis=0)
        rows, x, lv, first = rows[below], x[:, below], lv[below], first[below]
        if rows.size == 0:
            continue
        sigma = _sigma_hat(x[:-2] - 2.0 * x[1:-1] + x[2:])  # second differences, as noise.py
        w = np.zeros(rows.size)
        pos = sigma > 0.0
        safe = np.where(pos, sigma, 1.0)
        for i in range(int(first.min()), j + 1):  # the evals since the level, oldest first
            xi = x[i]
            z = np.where(pos, np.minimum((lv - xi) / safe, det.clip),
                         np.where(xi < lv, det.clip, np.where(xi == lv, 0.0, -np.inf)))
            w = np.where(i >= first, np.maximum(0.0, w + z - det.k), w)
        hit = rows[w >= det.h]
        stop_at[hit] = j
        kept[hit] = best_at[hit]
        open_[hit] = False
    return stop_at, kept, done
