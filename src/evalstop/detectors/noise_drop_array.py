"""``noise-drop`` over many jobs at once: ``NoiseDrop._observe`` eval by eval as numpy
operations on all rows, for the simulator's planned stops.

The best level after eval j is the running maximum of the medians of the windows of S evals
ending at S - 1 .. j (``statistics.median``: the middle of a sorted window, or the mean of
the two middles as ``(a + b) / 2``). The noise is asked, as by the object, only at evals
where each of the last N evals lies below the level; the job's own estimate then repeats
``noise.sigma_hat`` operation for operation (``cusum_drop_array._sigma_hat``: sorted
medians, clipped deviations summed in the values' order), a stated ``eval_n`` the binomial
noise at the level. So each float is the object's float; ``tests/test_stop_index_noise_drop.py``
compares the two. Rows with a non-finite value, with values beyond 1e100 in size (a second
difference could overflow, and Python's ``sorted`` and numpy's sort then disagree on NaN),
or, with ``eval_n``, outside [0, 1] (the object raises) are left to the objects; so are
histories longer than the object keeps, and a fleet noise (it pools jobs).
"""

from __future__ import annotations

import numpy as np

from evalstop.detectors.cusum_drop_array import _sigma_hat
from evalstop.detectors.noise import MAX_VALUES, MIN_DIFFS
from evalstop.detectors.stop_arrays import SUM_IN_ORDER, best_upto, finite_rows, higher_better

HUGE = 1e100


def stop_index(det, obs: np.ndarray):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` (a ``NoiseDrop`` with its
    own rule, no fleet) on the rows of ``obs``; None where only the objects can answer."""
    stated = det.sigma is not None or det.eval_n is not None
    if det.fleet is not None or not (stated or SUM_IN_ORDER):
        return None
    raw, v = higher_better(det, obs)
    n, m = raw.shape
    s, need = det.smooth, det.n
    if m > MAX_VALUES:
        return None  # the object's noise estimate forgets the oldest values
    done = finite_rows(raw) & (np.abs(raw) <= HUGE).all(axis=1)
    if det.eval_n is not None:  # the object raises on these: let it
        done &= ((raw >= 0.0) & (raw <= 1.0)).all(axis=1)
    stop_at = np.full(n, -1, dtype=np.int64)
    first = max(s, need) - 1  # the first eval with a level and N evals to test
    if m <= first or not done.any():
        return stop_at, np.full(n, -1, dtype=np.int64), done
    rows = np.flatnonzero(done)
    vr = v[rows]
    level = levels(det, vr)
    # Each of the last N evals below the level, at eval j (j >= first).
    below = np.ones((rows.size, m - first), dtype=bool)
    for i in range(need):
        below &= vr[:, first - i: m - i] < level[:, first:]
    at = np.full(rows.size, -1, dtype=np.int64)
    d_all = (vr[:, :-2] - 2.0 * vr[:, 1:-1] + vr[:, 2:]).T  # second differences, as noise.py
    for j in range(first, m):
        cand = np.flatnonzero(below[:, j - first] & (at < 0))
        if not stated and j + 1 - 2 < MIN_DIFFS:
            continue  # no noise estimate yet: no stop
        if cand.size == 0:
            continue
        lv = level[cand, j]
        sigma = noise(det, d_all, lv, j, cand)
        bar = lv - det.m * sigma
        hit = np.ones(cand.size, dtype=bool)
        for i in range(need):
            hit &= vr[cand, j - i] < bar
        at[cand[hit]] = j
    stop_at[rows] = at
    return stop_at, best_upto(v, stop_at), done


def levels(det, vr: np.ndarray) -> np.ndarray:
    """The object's best level after each eval (row, eval) of each row of ``vr``
    (higher-is-better values); -inf while there is none (the object's None)."""
    s = det.smooth
    level = np.full(vr.shape, -np.inf)
    if vr.shape[1] < s:
        return level
    # Medians of the windows ending at evals s - 1 .. m - 1, then their running best.
    win = np.sort(np.lib.stride_tricks.sliding_window_view(vr, s, axis=1), axis=2)
    if s % 2:
        med = win[:, :, s // 2]
    else:
        med = (win[:, :, s // 2 - 1] + win[:, :, s // 2]) / 2
    level[:, s - 1:] = np.maximum.accumulate(med, axis=1)
    return level


def noise(det, d_all: np.ndarray, lv: np.ndarray, j: int, cand: np.ndarray):
    """``NoiseAware._noise`` of rows ``cand`` after eval j, at their levels ``lv``, given
    every row's second differences ``d_all`` (difference, row); at least MIN_DIFFS of them
    for the job's own estimate."""
    if det.sigma is not None:
        return det.sigma
    if det.eval_n is not None:  # stated_noise.binomial_sigma at the level
        p = np.minimum(np.maximum(det._sign * lv, 0.0), 1.0)
        q = (p * det.eval_n + 2.0) / (det.eval_n + 4.0)
        return np.sqrt(q * (1.0 - q) / det.eval_n)
    return _sigma_hat(d_all[: j - 1, cand])
