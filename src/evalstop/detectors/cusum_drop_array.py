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

Most jobs never stop, and about a third of the Philly trace's provably cannot: a CUSUM
with every drop at the clip, below a cheap upper bound on the level (an order statistic
of the evals so far, see ``_may_stop``), never reaches h. Only the other jobs' levels are
found.

With numba installed (the ``fast`` extra) the plan comes from a compiled twin,
``cusum_drop_jit``, the same rule job by job with the same floats (about a quarter of the
time on 1x Philly once loaded), where ``evalstop.jit`` finds that it repays numba's load
(``EVALSTOP_JIT=1``: always); ``EVALSTOP_JIT=0`` keeps this numpy version.

The cost is in sorting windows. A window of width w ending at eval e is the window of width
w - 1 ending at e - 1 with one more value, so the sorted windows of each width are built
from the previous width's by one branch-free insertion, not sorted anew.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop import jit
from evalstop.detectors.noise import (
    CLIP,
    CLIPPED_MEAN_ABS,
    MAD_N01,
    MAX_VALUES,
    MEAN_ABS,
    MIN_DIFFS,
)
from evalstop.detectors.stop_arrays import SUM_IN_ORDER, best_upto, sum_in_order

# The spec options repeated here; a detector setting any other (an option added to the rule
# later) is left to the objects.
SUPPORTED = frozenset({"h", "k", "clip", "smooth", "min_evals", "trim", "smooth_min", "sigma",
                       "eval_n"})
# Jobs per block: bounds the (eval, job) work arrays (the 8x Philly trace is 660k jobs) and
# keeps each row of them in cache; larger blocks pay numpy's per-call cost less often.
BLOCK = 32768
# The level's windows are many arrays per job: fewer jobs at a time keep them in cache.
LEVEL_BLOCK = 2048


def covers(det) -> bool:
    """Whether this module repeats ``det``'s rule exactly (else the objects decide)."""
    if not SUM_IN_ORDER or getattr(det, "fleet", None) is not None:
        return False
    return all(key in SUPPORTED or getattr(det, key, None) is None for key in type(det).PARAMS)


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
    clipped = sum_in_order(np.minimum(dev, CLIP * robust_sd)) / n_d / CLIPPED_MEAN_ABS
    plain = sum_in_order(dev) / n_d / MEAN_ABS
    scale = np.where(robust_sd > 0.0, clipped, plain)
    return scale / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(n_d))


def _insert(cols: np.ndarray, low: int, a: np.ndarray, k: int, out: np.ndarray,
            out_low: int) -> np.ndarray:
    """Windows of width k from windows of width k - 1 and one more value ``a`` each.

    ``cols[r - low]`` is the r-th smallest value of each shorter window (ranks from
    ``low``); ``out[c - out_low]`` becomes the c-th smallest of the longer one, for as many
    ranks as ``out`` holds: max(s[c-1], min(s[c], a)) with s[-1] = -inf and s[k-1] = +inf,
    the values a sort gives, one value put in its place."""
    for c in range(out_low, out_low + len(out)):
        o = out[c - out_low]
        if c == 0:
            np.minimum(cols[0 - low], a, out=o)
        elif c == k - 1:
            np.maximum(cols[c - 1 - low], a, out=o)
        else:
            np.minimum(cols[c - low], a, out=o)
            np.maximum(o, cols[c - 1 - low], out=o)
    return out


def widths(det, m: int) -> list[int]:
    """The level window's width after n = 1..m evals (``CusumDrop._observe``)."""
    s, lo = det.smooth, det.smooth_min
    if lo is None:
        return [s] * m
    return [min(s, max(lo, (n + 1) // 2)) for n in range(1, m + 1)]


def _kept_ranks(det, w: int) -> tuple[int, int]:
    """The ranks [lo, hi) of a sorted window of width w that ``CusumDrop._smoothed`` reads."""
    if det.trim < 0:  # the median: the middle value, or the two middle ones
        return (w - 1) // 2, w // 2 + 1
    t = det.trim if w == det.smooth else min(det.trim, (w - 1) // 3)
    return t, w - t


def _smoothed(det, w: int, cols, low: int, out: np.ndarray) -> np.ndarray:
    """``CusumDrop._smoothed`` of windows of width w given as their sorted columns (ranks
    from ``low``), into ``out``."""
    lo, hi = _kept_ranks(det, w)
    kept = cols[lo - low: hi - low]
    if det.trim < 0:  # statistics.median
        if len(kept) == 1:
            return np.copyto(out, kept[0]) or out
        np.add(kept[0], kept[1], out=out)
        out /= 2
        return out
    np.copyto(out, kept[0])
    for r in kept[1:]:  # left to right, as sum() adds them
        out += r
    out /= len(kept)
    np.maximum(out, kept[0], out=out)
    return np.minimum(out, kept[-1], out=out)


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
    # value e - 1). And the ranks of them needed, [low[k], k - high[k]): those a width's
    # level reads, and one more at each end than the next width needs.
    top = max(spans)
    last = {top: spans[top][1]}
    low, high = {}, {}
    low[top], high[top] = _kept_ranks(det, top)
    high[top] = top - high[top]
    for k in range(top - 1, 0, -1):
        last[k] = max(spans.get(k, (0, 0))[1], last[k + 1] - 1)
        low[k], high[k] = max(low[k + 1] - 1, 0), max(high[k + 1] - 1, 0)
        if k in spans:
            lo, hi = _kept_ranks(det, k)
            low[k], high[k] = min(low[k], lo), min(high[k], k - hi)
    # cols[r - low[k], e - k]: the r-th smallest value of the window of width k ending at
    # eval e, for e = k..last[k] (a window of width 1 is the value itself).
    cols = vt[None, : last[1]]
    # Work arrays reused from width to width (kept in cache, not allocated anew).
    bufs = [np.empty((top, last[1], c)), np.empty((top, last[1], c))]
    work = np.empty((2, m, c))
    best_e_all = np.empty((m, c), dtype=np.int64)
    better_all = np.empty((m, c), dtype=bool)
    ends = np.arange(m + 1)[:, None]
    for k in range(1, top + 1):
        if k > 1:
            nw = last[k] - k + 1
            out = bufs[k % 2][: k - high[k] - low[k], :nw]
            cols = _insert(cols[:, :nw], low[k - 1], vt[k - 1: last[k]], k, out, low[k])
        if k not in spans:
            continue
        n_lo, n_hi = spans[k]
        nw = n_hi - k + 1
        sm = _smoothed(det, k, cols[:, :nw], low[k], work[0, :nw])  # (end k..n_hi, job)
        # The running best and the end of the window that set it (the earliest on ties).
        best, best_e = work[1, :nw], best_e_all[:nw]
        best[0] = sm[0]
        for r in range(1, nw):
            np.maximum(best[r - 1], sm[r], out=best[r])
        # A window sets the best when it beats the best before it; the best's window is
        # the last that did (the first of it ties, as ``level > self._level`` keeps it).
        better = better_all[:nw]
        better[0] = True
        np.greater(sm[1:], best[:-1], out=better[1:])
        np.multiply(better, ends[k: k + nw], out=best_e)
        for r in range(1, nw):
            np.maximum(best_e[r - 1], best_e[r], out=best_e[r])
        level[n_lo - 1: n_hi] = best[n_lo - k:]
        at[n_lo - 1: n_hi] = best_e[n_lo - k:]


def _min_drops(det, m: int) -> int:
    """The fewest evals below the level that can bring W to h: each adds at most clip - k
    (an eval at or above the level adds at most 0), with room for the rounding of m steps."""
    step = det.clip - det.k
    slack = 1e-9 * (det.h + det.clip + det.k) * (m + 1)
    need = 1
    while need * step * (1.0 + 1e-9) + slack < det.h:
        need += 1
    return need


def _may_stop(det, vt: np.ndarray) -> np.ndarray:
    """Whether each column of ``vt`` (eval, job) may stop at all: False only where the rule
    provably never stops, so that the costly level windows are found for fewer jobs.

    The bound. The level after n evals is clamped to at most ``kept[-1]`` of its window,
    the (r(n) + 1)-th largest value of a window that ends before every eval the CUSUM
    then counts: so for each such eval i it is at most T(r(n), i), the (r(n) + 1)-th
    largest of evals 0..i-1, and r(n) (values above ``kept[-1]``) only grows with n as the
    window widens, so it is at most T(r(i + 1), i). An eval at or above that bound has
    z <= 0; any other has z <= clip. Only evals i >= w(n) >= w(i + 1) follow a window of
    width w(n). The CUSUM with those z-bars, from eval w(i + 1) on, rounds, float for
    float, at least as high as the rule's W at every eval: w + z - k and max(0, .) round
    monotonically in w and z, and W starts at 0 after the level's window where the bound
    is >= 0. A column whose bound stays below h at every eval where the rule may stop
    (``_block``'s gates) cannot stop. The median's level (trim=-1) has no clamp: it is
    left unbounded here."""
    m, c = vt.shape
    if det.trim < 0:
        return np.ones(c, dtype=bool)
    stated = det.sigma is not None or det.eval_n is not None
    width = widths(det, m)
    ranks = [w - _kept_ranks(det, w)[1] for w in width]
    top = np.full((max(ranks) + 1, c), -np.inf)  # top[r]: the (r + 1)-th largest so far
    w, z, tmp = np.zeros(c), np.empty(c), np.empty(c)
    below = np.empty(c, dtype=bool)
    may = np.zeros(c, dtype=bool)
    for i in range(m):
        x, n = vt[i], i + 1
        if i >= width[i]:  # eval i < w(i + 1) never follows a level's window
            np.less(x, top[ranks[i]], out=below)
            np.multiply(below, det.clip, out=z)  # clip, or 0.0
            w += z
            w -= det.k
            np.maximum(w, 0.0, out=w)
        if n >= det.min_evals and (stated or n - 2 >= MIN_DIFFS):
            may |= w >= det.h
        for r in range(len(top) - 1, 0, -1):  # x put in its place among the largest
            np.minimum(top[r - 1], x, out=tmp)
            np.maximum(top[r], tmp, out=top[r])
        np.maximum(top[0], x, out=top[0])
    return may


def _block(det, vt: np.ndarray, thr=None, gates=None):
    """Stops of fresh detectors on the finite columns of ``vt`` (eval, job). ``thr[n]``,
    the threshold after n evals, and ``gates`` (rel, gmin, hn) are block-cusum's
    (``_passes``); by default cusum-drop's (h throughout, no gate)."""
    m, c = vt.shape
    stop_at = np.full(c, -1, dtype=np.int64)
    level, at = levels(det, vt)
    stated = det.sigma is not None or det.eval_n is not None
    need = _min_drops(det, m)
    d_all = vt[:-2] - 2.0 * vt[1:-1] + vt[2:]  # second differences, as noise.py
    open_ = np.ones(c, dtype=bool)  # not yet stopped
    evals = np.arange(m)[:, None]
    width = widths(det, m)
    # Evals below the level since its window, counted as the evals come: a row whose level
    # changed starts again at 0 (a new window: nothing since) or, when the window widened
    # and the best level is an older window's, is counted afresh.
    below = vt < level
    changed = (at[1:] != at[:-1]) | (level[1:] != level[:-1])
    count = np.zeros(c, dtype=np.int64)
    for j in range(m):
        n = j + 1
        lv, first = level[j], at[j]  # ``first``: the first eval after the level's window
        count += below[j]
        if j:
            np.copyto(count, 0, where=changed[j - 1])
        if j == 0 or width[j] != width[j - 1]:
            redo = np.flatnonzero((first > 0) & (first < n))
            if j:
                redo = redo[changed[j - 1, redo]]
            if redo.size:
                i0 = int(first[redo].min())  # no eval before it is counted
                count[redo] = ((vt[i0:n, redo] < lv[redo]) & (evals[i0:n] >= first[redo])
                               ).sum(axis=0)
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
            # the object's noise reads the last MAX_VALUES values (smooth may keep more)
            sigma = _sigma_hat(d_all[max(0, n - MAX_VALUES): n - 2, rows])
        # z of the evals since the level (oldest first). An eval before a row's own first
        # gets z = -inf, which leaves its W at 0, as not counting it does.
        i0 = int(first.min())
        x = vt[i0:n].take(rows, axis=1)  # C order: the CUSUM below runs row by row
        pos = sigma > 0.0
        if pos.all():
            z = np.minimum((lv - x) / sigma, det.clip)
        else:  # noise-free scores: any eval below the level is a full-size drop
            z = np.where(pos, np.minimum((lv - x) / np.where(pos, sigma, 1.0), det.clip),
                         np.where(x < lv, det.clip, np.where(x == lv, 0.0, -np.inf)))
        np.copyto(z, -np.inf, where=evals[i0:n] < first)
        w = np.zeros(rows.size)
        run_from = np.zeros(rows.size, dtype=np.int64)  # where W's excursion began
        for r, zi in enumerate(z):
            if gates is not None:
                np.copyto(run_from, r, where=w == 0.0)
            w += zi
            w -= det.k
            np.maximum(w, 0.0, out=w)
        hit = w >= (det.h if thr is None else thr[n])
        if gates is not None and hit.any():
            hit &= _passes(det, gates, n, x, run_from, lv, level[width[0] - 1, rows], sigma)
        hit = rows[hit]
        stop_at[hit] = j
        open_[hit] = False
    return stop_at, best_upto(vt.T, stop_at)


def _passes(det, gates, n, x, run_from, lv, start, sigma) -> np.ndarray:
    """``BlockCusum._judge``'s gates on the rows whose W is at its threshold after n evals
    (one eval per block): the mean of ``x[run_from:]`` (each row's CUSUM excursion; x is
    (eval, row)) at least ``rel`` of the gain below the level ``lv``, and after ``hn``
    evals a gain of at least ``gmin`` sigmas. ``start``: the first window's level."""
    rel, gmin, hn = gates
    ok = np.ones(len(lv), dtype=bool)
    if not rel > 0.0 and n <= hn:
        return ok
    acc = np.zeros(len(lv))  # sum(recent), left to right (0.0 + 0.0 before each start)
    for r, xr in enumerate(x):
        acc += np.where(r >= run_from, xr, 0.0)
    now = acc / (len(x) - run_from)
    gain = np.maximum(lv - start, 0.0)
    if rel > 0.0:
        ok &= ~(lv - now < rel * gain)
    if n > hn:
        ok &= ~(gain < gmin * sigma)
    return ok


def stop_index(det, obs: np.ndarray):
    """``(stop_at, kept, done)`` for fresh detectors like ``det`` on the rows of ``obs``
    (see ``KDecline.stop_index``), or None where only the objects can answer."""
    if not covers(det):
        return None
    raw = np.asarray(obs, dtype=np.float64)
    n, m = raw.shape
    if m > max(MAX_VALUES, det.smooth):
        return None
    done = answerable(det, raw)
    stop_at = np.full(n, -1, dtype=np.int64)
    kept = np.full(n, -1, dtype=np.int64)
    if m == 0 or not done.any():
        return stop_at, kept, done
    plan_rows(det, raw, done, stop_at, kept)
    return stop_at, kept, done


def answerable(det, raw: np.ndarray) -> np.ndarray:
    """The rows of ``raw`` an array may decide: finite values (a row whose sum overflows
    goes to the objects with the non-finite ones: correct, only slower) and, with
    ``eval_n``, scores in [0, 1] (the object raises on others: let it)."""
    done = np.isfinite(raw.sum(axis=1))
    if det.eval_n is not None:
        done &= ((raw >= 0.0) & (raw <= 1.0)).all(axis=1)
    return done


def plan_rows(det, raw, done, stop_at, kept, thr=None, gates=None) -> None:
    """Fill ``stop_at`` and ``kept`` for the rows of ``raw`` (job, eval) where ``done``,
    by the compiled twin when it runs, else by numpy; ``thr`` and ``gates`` as ``_block``.
    """
    n, m = raw.shape
    twin = jit.twin("evalstop.detectors.cusum_drop_jit", n, m)
    if twin is not None:
        _planned_by(twin, det, raw, done, stop_at, kept, thr, gates)
        return
    every = bool(done.all())
    rows = None if every else np.flatnonzero(done)
    size = n if every else rows.size
    for b in range(0, size, BLOCK):
        part = slice(b, b + BLOCK) if every else rows[b: b + BLOCK]
        vt = raw[part].T.copy()  # (eval, job), higher is better
        if det._sign < 0:
            np.negative(vt, out=vt)
        may = _may_stop(det, vt)
        if may.all():
            stop_at[part], kept[part] = _block(det, vt, thr, gates)
        elif may.any():
            idx = (np.arange(b, min(b + BLOCK, size)) if every else part)[may]
            stop_at[idx], kept[idx] = _block(det, vt.compress(may, axis=1), thr,
                                             gates)  # C order


def _planned_by(twin, det, raw, done, stop_at, kept, thr=None, gates=None) -> None:
    """The same plan from the compiled twin (``cusum_drop_jit``), job by job. ``thr[n]``
    (the threshold after n evals) and ``gates`` (rel, gmin, hn) are block-cusum's
    (``block_cusum_array``); by default cusum-drop's."""
    if det.sigma is not None:
        noise, sigma, eval_n = twin.STATED, det.sigma, 0
    elif det.eval_n is not None:
        noise, sigma, eval_n = twin.BINOMIAL, 0.0, det.eval_n
    else:
        noise, sigma, eval_n = twin.OWN, 0.0, 0
    m = raw.shape[1]
    if thr is None:  # cusum-drop: h at every eval, no gate
        thr, gates = np.full(m + 1, det.h), (0.0, 0.0, m)
    twin.plan(np.ascontiguousarray(raw), done, float(det._sign), thr, det.k, det.clip,
              det.smooth, det.min_evals, det.trim,
              0 if det.smooth_min is None else det.smooth_min, noise, sigma, eval_n,
              _min_drops(det, m), MAX_VALUES, MIN_DIFFS, CLIP, CLIPPED_MEAN_ABS,
              MEAN_ABS, MAD_N01, *gates, stop_at, kept)
