"""``cusum-drop`` over many jobs at once: the rule of ``CusumDrop._observe``, eval by eval,
as numpy operations on all jobs' rows, for the simulator's planned stops.

It repeats the object's arithmetic operation for operation (sorted windows summed left to
right, ``statistics.median``'s middle or mean of the two middles, the noise estimate's sums
in the order of the values, the binomial noise of ``eval_n`` at the level), so each float
is the object's float and each decision the object's decision; ``tests/test_sim_fastpath.py``
compares them. Where that would not hold it answers nothing and the objects decide: rows
with a non-finite score (or, with ``eval_n``, a score outside [0, 1], which the object
rejects), histories longer than the noise estimate's window, a fleet noise (it pools jobs),
an option this module does not know, and Python 3.12+, whose ``sum`` of floats is
compensated.

The level. With ``smooth_min`` the level window after n evals is
w(n) = min(S, max(M, ceil(n / 2))), and each time it widens the object finds the best level
again over the whole history at the new width; between widenings it keeps the running best.
Either way the level after n evals is the best smoothed window of width w(n) among those
ending at evals w(n)..n (the earliest on ties), so it is computed here that way, one width
at a time; without ``smooth_min`` the width is S throughout.

The cost is in sorting windows. A window of width w ending at eval e is the window of width
w - 1 ending at e - 1 with one more value, so the sorted windows of each width are built
from the previous width's by one branch-free insertion, not sorted anew.
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

# The spec options repeated here; a detector setting any other (an option added to the rule
# later) is left to the objects.
SUPPORTED = frozenset({"h", "k", "clip", "smooth", "min_evals", "trim", "smooth_min", "sigma",
                       "eval_n"})
# Jobs per block: bounds the (eval, job) work arrays (the 8x Philly trace is 660k jobs) and
# keeps each row of them in cache; larger blocks pay numpy's per-call cost less often.
BLOCK = 16384
# The level's windows are many arrays per job: fewer jobs at a time keep them in cache.
LEVEL_BLOCK = 2048


def covers(det) -> bool:
    """Whether this module repeats ``det``'s rule exactly (else the objects decide)."""
    if sys.version_info >= (3, 12) or getattr(det, "fleet", None) is not None:
        return False
    return all(key in SUPPORTED or getattr(det, key, None) is None for key in type(det).PARAMS)


def _sum_in_order(rows) -> np.ndarray:
    """``sum`` of each column's values, first row to last (Python's sum of floats up to
    3.11); arrays here are (eval, job), so each step is one contiguous row."""
    acc = rows[0].copy()
    for r in rows[1:]:
        acc += r
    return acc


def _median(sorted_rows) -> np.ndarray:
    """``statistics.median`` of each column of rows sorted along axis 0."""
    n = len(sorted_rows)
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


def _insert(cols: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Sorted columns ``cols`` (r, ...: ascending along the first axis) with ``a`` put in
    its place: output c is max(cols[c-1], min(cols[c], a)), the values a sort gives."""
    k = cols.shape[0]
    out = np.empty((k + 1, *cols.shape[1:]))
    np.minimum(cols[0], a, out=out[0])
    for c in range(1, k):
        np.minimum(cols[c], a, out=out[c])
        np.maximum(out[c], cols[c - 1], out=out[c])
    np.maximum(cols[k - 1], a, out=out[k])
    return out


def widths(det, m: int) -> list[int]:
    """The level window's width after n = 1..m evals (``CusumDrop._observe``)."""
    s, lo = det.smooth, det.smooth_min
    if lo is None:
        return [s] * m
    return [min(s, max(lo, (n + 1) // 2)) for n in range(1, m + 1)]


def _smoothed(det, cols: list) -> np.ndarray:
    """``CusumDrop._smoothed`` of windows given as their sorted columns."""
    w = len(cols)
    if det.trim < 0:
        return _median(cols)
    t = det.trim if w == det.smooth else min(det.trim, (w - 1) // 3)
    kept = cols[t: w - t]
    mean = _sum_in_order(kept) / len(kept)
    return np.minimum(np.maximum(mean, kept[0]), kept[-1])


def levels(det, vt: np.ndarray):
    """``(level, at)``, both (eval, job): the best level after each eval and the eval count
    at which its window ended (-inf and 0 while there is no level)."""
    m, c = vt.shape
    level = np.full((m, c), -np.inf)
    at = np.zeros((m, c), dtype=np.int64)
    for b in range(0, c, LEVEL_BLOCK):
        _levels(det, vt[:, b: b + LEVEL_BLOCK], level[:, b: b + LEVEL_BLOCK],
                at[:, b: b + LEVEL_BLOCK])
    return level, at


def _levels(det, vt, level, at) -> None:
    m, c = vt.shape
    width = widths(det, m)
    spans = {}  # width -> (first, last eval count with that width), widths with a window
    for n, w in enumerate(width, 1):
        if n >= w:
            spans[w] = (spans.get(w, (n, n))[0], n)
    if not spans:
        return
    # The windows of width k needed, by the last eval count they end at: a width's own,
    # and one before each of the next width's (window(k + 1, e) = window(k, e - 1) plus
    # value e - 1).
    top = max(spans)
    last = {top: spans[top][1]}
    for k in range(top - 1, 0, -1):
        last[k] = max(spans.get(k, (0, 0))[1], last[k + 1] - 1)
    # cols[r, e - k]: the r-th smallest value of the window of width k ending at eval e,
    # for e = k..last[k] (a window of width 1 is the value itself).
    cols = vt[None, : last[1]]
    for k in range(1, top + 1):
        if k > 1:
            cols = _insert(cols[:, : last[k] - k + 1], vt[k - 1: last[k]])
        if k not in spans:
            continue
        n_lo, n_hi = spans[k]
        sm = _smoothed(det, cols[:, : n_hi - k + 1])
        best, best_e = sm[0], np.full(c, k, dtype=np.int64)
        for e in range(k, n_hi + 1):
            if e > k:
                better = sm[e - k] > best
                best = np.where(better, sm[e - k], best)
                best_e[better] = e
            if e >= n_lo:
                level[e - 1] = best
                at[e - 1] = best_e


def _min_drops(det, m: int) -> int:
    """The fewest evals below the level that can bring W to h: each adds at most clip - k
    (an eval at or above the level adds at most 0), with room for the rounding of m steps."""
    step = det.clip - det.k
    slack = 1e-9 * (det.h + det.clip + det.k) * (m + 1)
    need = 1
    while need * step * (1.0 + 1e-9) + slack < det.h:
        need += 1
    return need


def _block(det, vt: np.ndarray):
    """Stops of fresh detectors on the finite columns of ``vt`` (eval, job)."""
    m, c = vt.shape
    stop_at = np.full(c, -1, dtype=np.int64)
    kept = np.full(c, -1, dtype=np.int64)
    level, at = levels(det, vt)
    stated = det.sigma is not None or det.eval_n is not None
    need = _min_drops(det, m)
    d_all = vt[:-2] - 2.0 * vt[1:-1] + vt[2:]  # second differences, as noise.py
    best, best_at = np.full(c, -np.inf), np.zeros(c, dtype=np.int64)
    open_ = np.ones(c, dtype=bool)  # not yet stopped
    evals = np.arange(m)[:, None]
    count = np.zeros(c, dtype=np.int64)  # evals below the level since its window
    for j in range(m):
        col = vt[j]
        better = col > best
        best = np.where(better, col, best)
        best_at[better] = j
        n = j + 1
        lv, first = level[j], at[j]  # ``first``: the first eval after the level's window
        since = (first > 0) & (first < n)  # a level, set before this eval
        if j:  # the same level as before: one more eval to count
            same = since & (first == at[j - 1]) & (lv == level[j - 1])
            count = np.where(same, count + (col < lv), 0)
            redo = np.flatnonzero(since & ~same)  # the window widened: count again
        else:
            redo = np.flatnonzero(since)
        if redo.size:
            count[redo] = ((vt[:n, redo] < lv[redo]) & (evals[:n] >= first[redo])).sum(axis=0)
        if n < det.min_evals or (not stated and n - 2 < MIN_DIFFS):
            continue  # too few evals, or no noise scale yet
        # Rows with too few evals below the level cannot reach h (nor, with none, does the
        # object estimate the noise).
        rows = np.flatnonzero(open_ & (count >= need))
        if rows.size == 0:
            continue
        lv, first = lv[rows], first[rows]
        if det.sigma is not None:
            sigma = np.full(rows.size, det.sigma)
        elif det.eval_n is not None:  # stated_noise.binomial_sigma at the level
            p = np.minimum(np.maximum(det._sign * lv, 0.0), 1.0)
            q = (p * det.eval_n + 2.0) / (det.eval_n + 4.0)
            sigma = np.sqrt(q * (1.0 - q) / det.eval_n)
        else:
            sigma = _sigma_hat(d_all[: n - 2, rows])
        w = np.zeros(rows.size)
        pos = sigma > 0.0
        safe = np.where(pos, sigma, 1.0)
        for i in range(int(first.min()), n):  # the evals since the level, oldest first
            xi = vt[i, rows]
            z = np.where(pos, np.minimum((lv - xi) / safe, det.clip),
                         np.where(xi < lv, det.clip, np.where(xi == lv, 0.0, -np.inf)))
            w = np.where(i >= first, np.maximum(0.0, w + z - det.k), w)
        hit = rows[w >= det.h]
        stop_at[hit] = j
        kept[hit] = best_at[hit]
        open_[hit] = False
    return stop_at, kept


def stop_index(det, obs: np.ndarray):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` on the rows of ``obs``
    (see ``KDecline.stop_index``), or None where only the objects can answer."""
    if not covers(det):
        return None
    raw = np.asarray(obs, dtype=np.float64)
    v = det._sign * raw
    n, m = v.shape
    if m > max(MAX_VALUES, det.smooth):
        return None
    done = np.isfinite(v).all(axis=1)
    if det.eval_n is not None:  # the object raises on these: let it
        done &= ((raw >= 0.0) & (raw <= 1.0)).all(axis=1)
    stop_at = np.full(n, -1, dtype=np.int64)
    kept = np.full(n, -1, dtype=np.int64)
    if m == 0 or not done.any():
        return stop_at, kept, done
    rows = np.flatnonzero(done)
    for b in range(0, rows.size, BLOCK):
        part = rows[b: b + BLOCK]
        stop_at[part], kept[part] = _block(det, np.ascontiguousarray(v[part].T))
    return stop_at, kept, done
