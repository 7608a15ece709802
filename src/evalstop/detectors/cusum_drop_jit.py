"""Compiled twin of ``cusum_drop_array.stop_index`` (used when numba is installed, see
``evalstop.jit``): ``CusumDrop._observe`` run job by job, eval by eval, in compiled loops.

Each float is the object's: windows sorted and their kept values summed left to right from
0.0 (Python 3.11's ``sum``), ``statistics.median``'s middle or mean of the two middles, the
noise estimate's sums in the order of the values, Python's ``min``/``max`` (the first
argument unless the second is strictly smaller/larger), no fastmath (which would reorder
sums and fuse multiply-adds). ``cusum_drop_array`` decides which rows and options reach
here (``covers``); the tests compare this module with the objects.

The noise module's constants arrive as arguments: numba freezes globals into the compiled
code, and its on-disk cache would not notice an edit of ``noise.py``.

Most jobs never stop, and the exact level (sorted windows, rebuilt each time the window
widens) is the costly part, so three exact gates come first, cheapest first; each only
skips evals where the rule's W provably stays below h:

* W_bar (``_may_stop_at``), on 512 jobs side by side. The level after n evals, with t(n)
  values trimmed from each end of its window of width w(n), is at most the mean of the
  window's kept values (the clamp only lowers it), the (t(n) + 1)-th to (w(n) - t(n))-th
  largest of a window that ends before every eval the CUSUM then counts. The j-th largest
  of a window is at most the j-th largest of any set holding it, so for each such eval i
  the level is at most the mean of the (a + 1)-th to b-th largest of evals 0..i-1 for any
  a <= t(n) and b <= w(n) - t(n) (that mean only grows as a or b shrinks). Only n > i with
  i >= w(n) >= w(i + 1) count eval i, and t(n) only grows with n, so a = t(i + 1),
  b = min(i, min over n > i of w(n) - t(n)) serve every such n. Both means are rounded:
  each sums N <= m values of size at most ``big`` (the job's largest |value|) left to
  right, so it lies within (N / 4 + 1) eps big of its exact value; with m <= 40,000 both
  together stay below 1e-11 big, which raises the bound (past that, or with values past
  1e300, whose sums could overflow, the (a + 1)-th largest alone serves, the clamp's
  bound, exact). An eval at or above the bound adds z <= 0, any other at most ``clip``;
  this CUSUM rounds at least as high as the rule's W at every eval (w + z - k and
  max(0, .) round monotonically in w and z, and a CUSUM that starts earlier is never
  below one that starts later at 0). On 1x Philly (default rule) it leaves 140k of the
  1.64M (job, eval) pairs, in 42.7k of the 82k jobs (the top kept value alone left 241k
  pairs in 54.8k jobs).
* With the noise known (the job's own estimate does not depend on the level), the same
  bound in sigmas: the CUSUM of min((bound - x) / sigma, clip). About 13.6k pairs are
  left (7,675 jobs stop).
* Fewer than ``need`` evals below the exact level cannot bring W to h
  (``cusum_drop_array._min_drops``).

Only then is the exact level found: the best window of the current width over the
history, the earliest on ties, which is what the object holds (see ``cusum_drop_array``);
windows already looked at for an earlier eval of the same width are not looked at again.
The noise's sorted second differences grow by insertion from eval to eval.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

OWN, STATED, BINOMIAL = 0, 1, 2  # where the noise comes from (``stated_noise``)
# Jobs whose bound runs side by side: its (eval, job) arrays stay in cache. Fewer when a
# long history would make them large (at most BLOCK_BYTES).
BLOCK = 512
BLOCK_BYTES = 1 << 22


@njit(cache=True)
def _slide(buf, w, out_value, in_value):
    """The sorted window ``buf[:w]`` with ``out_value`` replaced by ``in_value``; without
    branches on the values (they mispredict on noisy scores and cost more than the work)."""
    p = 0
    for c in range(w):  # out_value's place: the count of smaller values (zeros' signs and
        p += buf[c] < out_value  # which of equal values goes do not change any float)
    for c in range(p, w - 1):
        buf[c] = buf[c + 1]
    _insert(buf, w - 1, in_value)  # in its place among the w - 1 left


@njit(cache=True)
def _insert(buf, n, x):
    """Put x in its place among the sorted ``buf[:n]`` (room for n + 1): max(s[c - 1],
    min(s[c], x)) at every place, without branches on the values (on noisy scores they
    mispredict and cost more than the work)."""
    if n == 0:
        buf[0] = x
        return
    top = buf[n - 1]
    buf[n] = x if x > top else top
    for c in range(n - 1, 0, -1):
        a = buf[c]
        a = x if x < a else a
        b = buf[c - 1]
        buf[c] = a if a > b else b
    a = buf[0]
    buf[0] = x if x < a else a


@njit(cache=True)
def _sort_into(buf, vals, lo, w):
    """``buf[:w]`` = sorted(vals[lo: lo + w]) (insertions: windows are short)."""
    for j in range(w):
        _insert(buf, j, vals[lo + j])


@njit(cache=True)
def _median(s, n):
    """``statistics.median`` of the sorted ``s[:n]``."""
    if n % 2:
        return s[n // 2]
    return (s[n // 2 - 1] + s[n // 2]) / 2


@njit(cache=True)
def _smoothed(buf, w, smooth, trim):
    """``CusumDrop._smoothed`` of the window sorted in ``buf[:w]``."""
    if trim < 0:
        return _median(buf, w)
    t = trim if w == smooth else min(trim, (w - 1) // 3)
    acc = 0.0
    for r in range(t, w - t):
        acc += buf[r]
    level = acc / (w - 2 * t)
    lo, hi = buf[t], buf[w - t - 1]
    if lo > level:  # max(level, kept[0])
        level = lo
    if hi < level:  # min(., kept[-1])
        level = hi
    return level


@njit(cache=True)
def _sigma_hat(vals, n, max_values, min_diffs, clip_n, clipped_mean_abs, mean_abs, mad_n01,
               d, srt):
    """``noise.sigma_hat`` of ``vals[:n]``; -1.0 where it is None."""
    lo = max(0, n - max_values)
    nd = n - lo - 2
    if nd < min_diffs:
        return -1.0
    for i in range(nd):
        a, b, c = vals[lo + i], vals[lo + i + 1], vals[lo + i + 2]
        d[i] = a - 2.0 * b + c
    scale = diff_scale(d, nd, srt, d, clip_n, clipped_mean_abs, mean_abs, mad_n01)
    return scale / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(nd))


@njit(cache=True)
def best_upto(vals, stop):
    """The best eval up to ``stop``, the earliest on ties (the checkpoint a stop keeps)."""
    best = 0
    for i in range(1, stop + 1):
        if vals[i] > vals[best]:
            best = i
    return best


@njit(cache=True)
def diff_scale(d, nd, srt, dv, clip_n, clipped_mean_abs, mean_abs, mad_n01):
    """``noise.diff_scale`` of ``d[:nd]``: ``srt`` is room for nd, ``dv`` too (the
    deviations, in the order of the values; ``d`` itself may serve, overwritten)."""
    _sort_into(srt, d, 0, nd)
    mid = _median(srt, nd)
    for i in range(nd):
        dv[i] = abs(d[i] - mid)
    _sort_into(srt, dv, 0, nd)
    robust_sd = _median(srt, nd) / mad_n01
    acc = 0.0
    if robust_sd > 0.0:
        cap = clip_n * robust_sd
        for i in range(nd):
            acc += cap if cap < dv[i] else dv[i]  # min(x, cap)
        return acc / nd / clipped_mean_abs
    for i in range(nd):
        acc += dv[i]
    return acc / nd / mean_abs


@njit(cache=True)
def _kth_deviation(dv, nd, kk):
    """The kk-th smallest of ``dv[:nd]`` (kk >= 1), a sequence that falls, then rises (the
    distances of sorted values from their median; rounding is monotone): the values at or
    below any bound are a run, so it is the least over runs of kk of the larger end. Runs
    side by side, without branches on the values (they would mispredict on noisy scores)."""
    best = np.inf
    for lo in range(nd - kk + 1):
        a, b = dv[lo], dv[lo + kk - 1]
        e = a if a > b else b
        best = e if e < best else best
    return best


@njit(cache=True)
def _sigma_sorted(d, sd, nd, clip_n, clipped_mean_abs, mean_abs, mad_n01, dv):
    """``noise.sigma_hat`` from the second differences ``d[:nd]`` (in the order of the
    values) and the same sorted in ``sd[:nd]``: the deviations' median is read off their
    values in ``sd``'s order (``_kth_deviation``), not sorted again. ``dv``: room for nd."""
    mid = _median(sd, nd)
    for r in range(nd):
        dv[r] = abs(sd[r] - mid)
    half = nd // 2
    if nd % 2:
        mad = _kth_deviation(dv, nd, half + 1)
    else:  # statistics.median: the mean of the two middles
        mad = (_kth_deviation(dv, nd, half) + _kth_deviation(dv, nd, half + 1)) / 2
    robust_sd = mad / mad_n01
    acc = 0.0
    if robust_sd > 0.0:
        cap = clip_n * robust_sd
        for r in range(nd):
            x = abs(d[r] - mid)
            acc += cap if cap < x else x  # min(x, cap)
        scale = acc / nd / clipped_mean_abs
    else:  # most d's equal (quantised scores)
        for r in range(nd):
            acc += abs(d[r] - mid)
        scale = acc / nd / mean_abs
    return scale / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(nd))


@njit(cache=True)
def _width(n, smooth, smooth_min):
    """The level window's width after n evals (the object's ``_width`` then)."""
    if smooth_min <= 0:
        return smooth
    return min(smooth, max(smooth_min, (n + 1) // 2))


@njit(cache=True)
def _rank(w, smooth, trim):
    """How many values of a window of width w sit above its top kept value (``_smoothed``'s
    trim at that width)."""
    if trim < 0:
        return 0
    return trim if w == smooth else min(trim, (w - 1) // 3)


@njit(cache=True)
def _may_stop_at(vt, width, thr, k, clip, min_evals, trim, widths, lo, hi, n_top, top, slack,
                 mean_ok, ub, gate, count):
    """W_bar (the module's docstring: the mean of the reachable ranks) for the jobs
    (columns) of ``vt`` (eval, job; higher is better): ``gate[j, n]`` is whether
    job j's W may reach thr[n] (the threshold after n evals) after n evals, ``count[j]`` how many such n. Eval i is counted
    against the mean of the (lo[i] + 1)-th to hi[i]-th largest of evals 0..i-1, raised by
    ``slack[j]`` (see the module's docstring), or, where ``mean_ok[j]`` is False (values
    past 1e300, whose sums could overflow, or more than 40,000 evals), against the
    (lo[i] + 1)-th largest alone.
    ``top[r, j]`` holds the (r + 1)-th largest of job j's evals so far. Jobs are the
    inner loop, without branches on the values, so that it runs on several jobs at once
    (SIMD)."""
    m = vt.shape[0]
    for r in range(n_top):
        top[r, :width] = -np.inf
    w_bar = np.zeros(width)
    mean = np.empty(width)
    count[:width] = 0
    for n in range(1, m + 1):
        i, w_n = n - 1, widths[n]
        x = vt[i]
        if i >= w_n:
            a, b = lo[i], hi[i]
            first = top[a]
            mean[:width] = first[:width]
            for r in range(a + 1, b):
                row = top[r]
                for j in range(width):
                    mean[j] += row[j]
            for j in range(width):
                u = mean[j] / (b - a) + slack[j]
                u = u if mean_ok[j] else first[j]
                ub[i, j] = u
                # clip, or 0.0 at or above the bound; the median has no clamp: every eval
                # may be below its level
                w = w_bar[j] + clip * ((trim < 0) | (x[j] < u))
                w -= k
                w_bar[j] = w if w > 0.0 else 0.0
        # x put in its place (rank r reads r - 1 before it changes); ranks past n - 1 stay
        for r in range(min(n_top, n) - 1, 0, -1):  # -inf
            for j in range(width):
                a_ = top[r - 1, j]
                a_ = x[j] if x[j] < a_ else a_
                b_ = top[r, j]
                top[r, j] = a_ if a_ > b_ else b_
        for j in range(width):
            b_ = top[0, j]
            top[0, j] = x[j] if x[j] > b_ else b_
        # w_n >= n: the level's window ends at eval n at the earliest, nothing since
        fixed = (n >= min_evals) & (w_n < n)
        for j in range(width):
            g = fixed & (w_bar[j] >= thr[n])
            gate[j, n] = g  # job by job: read so in ``_jobs``
            count[j] += g


@njit(cache=True)
def _jobs(raw, part, n_jobs, sign, count, m, thr, k, clip, smooth, min_evals, trim, widths,
          noise, sigma, eval_n, need, max_values, min_diffs, clip_n, clipped_mean_abs,
          mean_abs, mad_n01, rel, gmin, hn, vals, buf, buf0, d, sd, srt, ub, gate, stop_at,
          kept):
    """Fill ``stop_at[j]`` and ``kept[j]`` for the rows j = ``part[:n_jobs]`` of ``raw``
    (job, eval): the eval index (0-based) at which a fresh ``CusumDrop`` stops on
    ``sign * raw[j]`` (the scores, higher is better) and the best eval up to it, or -1.
    ``widths[n]``: the level window's width after n evals. One call for many jobs: a call
    per job costs more than most jobs' work (arguments passed, arrays counted).

    ``thr[n]``: the CUSUM's threshold after n evals (h for cusum-drop). ``rel``, ``gmin``
    and ``hn``: block-cusum's gates on a W at its threshold (``BlockCusum._judge``: the
    fall over the CUSUM's current excursion at least ``rel`` of the gain, and after ``hn``
    evals a gain of at least ``gmin`` sigmas); 0, 0 and m for cusum-drop (no gate).

    ``gate[jj, n]`` (W_bar may reach h after n evals), ``count`` and ``ub[r, jj]``, W_bar's
    bound on the level for eval r, come from ``_may_stop_at``; the other gates of the
    module's docstring follow. The bound in sigmas runs from the level's earliest possible
    window on, as W_bar does, and reads W_bar's bound: at eval n it bounds every level
    that counts eval r."""
    for jj in range(n_jobs):
        j = part[jj]
        stop_at[j] = -1
        if count[jj] == 0:  # most jobs: W_bar never reaches h
            continue
        for i in range(m):  # the row, not vt's column: in cache line order
            vals[i] = sign * raw[j, i]
        stop = -1
        n_d = 0  # second differences so far, sorted into sd[:n_d] (own noise only)
        width, last, have, level, best_end = 0, 0, False, 0.0, 0  # the exact level, when found
        for n in range(1, m + 1):
            if not gate[jj, n]:
                continue
            w_n = widths[n]
            if noise == OWN and n <= max_values and n - 2 < min_diffs:
                continue  # no noise estimate yet
            s = sigma
            if noise == OWN:
                if n > max_values:  # the object's noise sees the last max_values evals only
                    s = _sigma_hat(vals, n, max_values, min_diffs, clip_n, clipped_mean_abs,
                                   mean_abs, mad_n01, srt, sd)
                    n_d = 0  # sd reused: sorted afresh if asked again
                else:
                    while n_d < n - 2:  # the new differences put in their places
                        e = vals[n_d] - 2.0 * vals[n_d + 1] + vals[n_d + 2]
                        d[n_d] = e
                        _insert(sd, n_d, e)
                        n_d += 1
                    s = _sigma_sorted(d, sd, n - 2, clip_n, clipped_mean_abs, mean_abs, mad_n01,
                                      srt)
                if s < 0.0:
                    continue
            if noise != BINOMIAL and trim >= 0:  # the same bound in sigmas
                w_sig = 0.0
                for r in range(w_n, n):
                    u = ub[r, jj]
                    if s > 0.0:
                        z = (u - vals[r]) / s
                        if clip < z:
                            z = clip
                    else:
                        z = clip if vals[r] < u else 0.0
                    w_sig = w_sig + z - k
                    if not w_sig > 0.0:
                        w_sig = 0.0
                if w_sig < thr[n]:
                    continue
            # The level after n evals: the best window of width w_n ending at w_n..n, the
            # earliest on ties (what the object holds, see ``cusum_drop_array``); windows found
            # at an earlier eval of this width are not looked at again.
            if w_n != width:
                width, last, have = w_n, w_n - 1, False
            for end in range(last + 1, n + 1):
                if end == width:
                    _sort_into(buf, vals, 0, width)
                else:
                    _slide(buf, width, vals[end - 1 - width], vals[end - 1])
                lv = _smoothed(buf, width, smooth, trim)
                if not have or lv > level:
                    have, level, best_end = True, lv, end
            last = n
            since = n - best_end
            if since == 0:
                continue
            first = best_end
            below_n = 0
            for r in range(first, n):
                if vals[r] < level:
                    below_n += 1
            if below_n < need:  # none: the object returns; fewer than need: W stays below h
                continue
            if noise == BINOMIAL:  # stated_noise.binomial_sigma at the level
                p = sign * level
                if 0.0 > p:
                    p = 0.0
                if 1.0 < p:
                    p = 1.0
                q = (p * eval_n + 2.0) / (eval_n + 4.0)
                s = math.sqrt(q * (1.0 - q) / eval_n)
            w, run_from = 0.0, first
            for r in range(first, n):
                v = vals[r]
                if w == 0.0:  # where the current excursion of W above 0 began
                    run_from = r
                if s > 0.0:
                    z = (level - v) / s
                    if clip < z:
                        z = clip
                elif v < level:  # noise-free scores: any eval below the level is a full drop
                    z = clip
                elif v == level:
                    z = 0.0
                else:
                    z = -np.inf
                t_ = w + z - k
                w = t_ if t_ > 0.0 else 0.0  # max(0.0, t_)
            if w >= thr[n] and _gain_gates(vals, run_from, n, level, s, rel, gmin, hn, buf0,
                                           widths[1], smooth, trim):
                stop = n - 1
                break
        stop_at[j] = stop
        if stop >= 0:
            kept[j] = best_upto(vals, stop)


@njit(cache=True)
def _gain_gates(vals, run_from, n, level, s, rel, gmin, hn, buf0, w0, smooth, trim):
    """``BlockCusum._judge``'s gates on a W at its threshold after n evals (all in one
    block of one eval each): the mean of ``vals[run_from:n]`` (the CUSUM's current
    excursion) at least ``rel`` of the gain below the level, and after ``hn`` evals a gain
    of at least ``gmin`` noise sigmas ``s``. The gain is the level less the start level,
    the first window's (width ``w0``, the level window's width after one eval)."""
    if not rel > 0.0 and n <= hn:  # no gate applies (cusum-drop: never)
        return True
    acc = 0.0  # sum(recent): left to right
    for r in range(run_from, n):
        acc += vals[r]
    now = acc / (n - run_from)
    _sort_into(buf0, vals, 0, w0)
    start = _smoothed(buf0, w0, smooth, trim)
    gain = max(level - start, 0.0)
    if rel > 0.0 and level - now < rel * gain:
        return False
    return not (n > hn and gain < gmin * s)


@njit(cache=True)
def _bound_ranks(m, smooth, smooth_min, trim):
    """``widths[n]``, the level window's width after n evals, and W_bar's ranks for eval i:
    the mean of the (lo[i] + 1)-th to hi[i]-th largest of the evals before it, with
    lo[i] = t(i + 1) <= t(n) and hi[i] <= w(n) - t(n) for every level after n > i evals
    that counts eval i (t and w do not shrink with n); ``n_top``: the deepest rank read."""
    widths = np.zeros(m + 1, dtype=np.int64)
    ranks = np.zeros(m + 1, dtype=np.int64)
    for n in range(1, m + 1):
        widths[n] = _width(n, smooth, smooth_min)
        ranks[n] = _rank(widths[n], smooth, trim)
    lo = np.zeros(max(m, 1), dtype=np.int64)
    hi = np.ones(max(m, 1), dtype=np.int64)
    n_top = 1
    if trim >= 0:
        lowest = m
        for i in range(m - 1, -1, -1):
            lowest = min(lowest, widths[i + 1] - ranks[i + 1])
            lo[i], hi[i] = ranks[i + 1], min(i, lowest)
            if i >= widths[i + 1]:  # eval i may be counted: top is read to rank hi[i]
                n_top = max(n_top, hi[i])
    return widths, lo, hi, n_top


@njit(cache=True)
def plan(raw, done, sign, thr, k, clip, smooth, min_evals, trim, smooth_min, noise, sigma,
         eval_n, need, max_values, min_diffs, clip_n, clipped_mean_abs, mean_abs, mad_n01,
         rel, gmin, hn, stop_at, kept):
    """Fill ``stop_at`` and ``kept`` (eval indices, -1 without a stop) for the rows of
    ``raw`` (job, eval) where ``done``; ``smooth_min`` <= 0 stands for None, ``noise`` is
    OWN, STATED (``sigma``) or BINOMIAL (``eval_n``). ``thr[n]``: the threshold after n
    evals; ``rel``, ``gmin``, ``hn``: block-cusum's gates (``_jobs``)."""
    n_rows, m = raw.shape
    widths, lo, hi, n_top = _bound_ranks(m, smooth, smooth_min, trim)
    vals = np.empty(m)
    d = np.empty(max(m, 1))
    sd = np.empty(max(m, 1))
    srt = np.empty(max(m, 1))
    buf = np.empty(max(smooth, 1))
    buf0 = np.empty(max(smooth, 1))
    block = max(1, min(BLOCK, BLOCK_BYTES // (8 * (2 * m + n_top))))
    vt = np.empty((m, block))
    top = np.empty((n_top, block))
    ub = np.empty((m, block))  # W_bar's bound on the level for each eval it counts
    slack = np.empty(block)
    mean_ok = np.empty(block, dtype=np.bool_)
    gate = np.zeros((block, m + 1), dtype=np.bool_)
    count = np.zeros(block, dtype=np.int64)
    rows = np.flatnonzero(done)
    for b in range(0, rows.size, block):
        part = rows[b: b + block]
        width = part.size
        for jj in range(width):
            slack[jj] = 0.0  # the largest |value| first
        for i in range(m):  # eval by eval: vt's rows are written in order
            for jj in range(width):
                x = sign * raw[part[jj], i]
                vt[i, jj] = x
                a_ = abs(x)
                slack[jj] = a_ if a_ > slack[jj] else slack[jj]
        for jj in range(width):
            mean_ok[jj] = (slack[jj] <= 1e300) & (m <= 40_000)  # see the docstring
            slack[jj] *= 1e-11
        _may_stop_at(vt, width, thr, k, clip, min_evals, trim, widths, lo, hi, n_top, top,
                     slack, mean_ok, ub, gate, count)
        _jobs(raw, part, width, sign, count, m, thr, k, clip, smooth, min_evals, trim, widths,
              noise, sigma, eval_n, need, max_values, min_diffs, clip_n, clipped_mean_abs,
              mean_abs, mad_n01, rel, gmin, hn, vals, buf, buf0, d, sd, srt, ub, gate,
              stop_at, kept)
