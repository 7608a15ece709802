"""Compiled twin of ``block-cusum`` past its first merge (used when numba is installed, see
``evalstop.jit``): ``BlockCusum._observe`` and ``_judge`` run job by job, eval by eval, from
the eval at which the history first reaches ``2 * blocks`` block means on.

Up to that eval every block is one eval and the rule is ``cusum-drop`` with two gates,
which ``cusum_drop_jit`` (or ``cusum_drop_array``) plans; ``block_cusum_array`` explains
why, and hands here only the rows that have not stopped by then. The state there follows
from the row alone: the first ``2 * blocks`` evals merged pairwise into ``blocks`` means of
2 evals, the start level (the first level window's, over the evals themselves), and the
best level found again over the merged means, as ``_refind`` does.

Each float is the object's, as in ``cusum_drop_jit``: windows sorted and summed left to
right from 0.0, ``statistics.median``'s middle or mean of the two middles, the noise
estimate's sums in the order of the values, Python's ``min``/``max``, no fastmath. The
noise module's constants arrive as arguments (numba freezes globals into its cache).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from evalstop import jit
from evalstop.detectors import cusum_drop_jit
from evalstop.detectors.cusum_drop_jit import _smoothed, _sort_into, best_upto, diff_scale

jit.forget_stale(__file__, cusum_drop_jit)

OWN, STATED, BINOMIAL = 0, 1, 2  # as ``cusum_drop_jit``


@njit(cache=True)
def _own_block_sigma(means, nm, lags, min_diffs, clip_n, clipped_mean_abs, mean_abs, mad_n01,
                     d, srt, dv):
    """``BlockCusum._own_block_sigma`` of ``means[:nm]`` (fewer than ``noise.MAX_VALUES``:
    ``block_cusum_array.covers``); -1.0 where it is None."""
    lag, best = 1, -1.0
    while lag <= lags:
        nd = nm - 2 * lag
        if nd < min_diffs:
            break
        for i in range(lag, nm - lag):
            d[i - lag] = means[i - lag] - 2.0 * means[i] + means[i + lag]
        s = diff_scale(d, nd, srt, dv, clip_n, clipped_mean_abs, mean_abs, mad_n01)
        s = s / math.sqrt(6.0) * (1.0 + 1.0 / math.sqrt(nd))
        if lag == 1 or s > best:  # max(best, s)
            best = s
        lag *= 2
    return best


@njit(cache=True)
def _refind(means, nm, width, smooth, trim, buf):
    """``BlockCusum._refind`` over ``means[:nm]``: (have, level, since)."""
    have, level, since = False, 0.0, 0
    for end in range(width, nm + 1):
        _sort_into(buf, means, end - width, width)
        lv = _smoothed(buf, width, smooth, trim)
        if not have or lv > level:
            have, level, since = True, lv, nm - end
    return have, level, since


@njit(cache=True)
def _judge(means, nm, b, n, have, level, since, start, thr, k, clip, min_evals, rel, gmin,
           hn, lags, sign, noise, sigma, eval_n, need, min_diffs, clip_n, clipped_mean_abs,
           mean_abs, mad_n01, d, srt, dv):
    """Whether ``BlockCusum._judge`` stops after n evals (b >= 2 evals per block).

    Two exact gates first, as in ``cusum_drop_jit``: fewer than ``need`` blocks below the
    level cannot bring W to h <= thr[n] (``cusum_drop_array._min_drops``), and with a
    stated noise, whose floor s_0 the rule's s never undercuts, the CUSUM of
    min((L - m) / s_0, clip) over the blocks below L (0 for the others) is at least W
    (division, w + z - k and max(0, .) round monotonically), so below thr[n] it stops
    nothing; both skip the noise estimate over the blocks."""
    if not have or since == 0 or n < min_evals:
        return False
    s0 = nm - min(since, nm)
    below = 0
    for i in range(s0, nm):
        below += means[i] < level
    if below == 0 or below < need:  # none: the object returns before its noise estimate
        return False
    # _block_sigma: the stated (or binomial) noise of one eval over sqrt(b) is a floor that
    # the job's own estimate over the block means may raise
    floor = -1.0
    if noise == STATED:
        floor = sigma / math.sqrt(b)
    elif noise == BINOMIAL:
        p = sign * level
        p = max(p, 0.0)
        p = min(p, 1.0)
        q = (p * eval_n + 2.0) / (eval_n + 4.0)
        floor = math.sqrt(q * (1.0 - q) / eval_n) / math.sqrt(b)
    if floor > 0.0:
        w = 0.0
        for i in range(s0, nm):
            z = min((level - means[i]) / floor, clip) if means[i] < level else 0.0
            w = max(0.0, w + z - k)
        if w < thr[n]:
            return False
    s = _own_block_sigma(means, nm, lags, min_diffs, clip_n, clipped_mean_abs, mean_abs,
                         mad_n01, d, srt, dv)
    if s < 0.0 or floor >= 0.0 and floor > s:
        s = floor
    if s < 0.0:
        return False
    w, run_from = 0.0, s0
    for i in range(s0, nm):
        v = means[i]
        if s > 0.0:
            z = (level - v) / s
            z = min(z, clip)
        elif v < level:  # noise-free scores: any block below the level is a full drop
            z = clip
        elif v == level:
            z = 0.0
        else:
            z = -np.inf
        if w == 0.0:
            run_from = i
        t_ = w + z - k
        w = max(0.0, t_)
    if w < thr[n]:
        return False
    acc = 0.0
    for i in range(run_from, nm):
        acc += means[i]
    now = acc / (nm - run_from)
    gain = level - start
    gain = max(gain, 0.0)
    if rel > 0.0 and level - now < rel * gain:
        return False
    return not (n > hn and gain < gmin * s)


@njit(cache=True)
def long_rows(raw, rows, sign, thr, k, clip, smooth, min_evals, trim, w0, blocks, wblocks,
              rel, gmin, hn, lags, noise, sigma, eval_n, need, min_diffs, clip_n, clipped_mean_abs,
              mean_abs, mad_n01, stop_at, kept):
    """Fill ``stop_at[j]`` and ``kept[j]`` for the rows j in ``rows`` of ``raw`` (job,
    eval; finite; at least ``2 * blocks`` evals) that a fresh ``BlockCusum`` has not
    stopped before its first merge: its stop eval index from that merge on and the best
    eval up to it, or -1. ``thr[n]``: the threshold after n evals; ``w0``: the first
    level window's width (the start level's)."""
    m = raw.shape[1]
    top = 2 * blocks
    vals = np.empty(m)
    means = np.empty(top)
    buf = np.empty(max(smooth, blocks, 1))
    d = np.empty(top)
    srt = np.empty(top)
    dv = np.empty(top)
    for j in rows:
        for i in range(m):
            vals[i] = sign * raw[j, i]
        _sort_into(buf, vals, 0, w0)
        start = _smoothed(buf, w0, smooth, trim)
        b, nm = 2, blocks  # the first merge, after eval 2 * blocks
        for i in range(blocks):
            means[i] = ((0.0 + vals[2 * i]) + (0.0 + vals[2 * i + 1])) / 2.0
        have, level, since = _refind(means, nm, wblocks, smooth, trim, buf)
        stop = -1
        open_sum, open_n = 0.0, 0
        for n in range(top, m + 1):
            if n > top:
                open_sum += vals[n - 1]
                open_n += 1
                if open_n < b:
                    continue
                means[nm] = open_sum / open_n
                nm += 1
                open_sum, open_n = 0.0, 0
                if nm >= top:  # merge neighbours pairwise: the blocks double
                    for i in range(0, nm - 1, 2):
                        means[i // 2] = (means[i] + means[i + 1]) / 2.0
                    nm //= 2
                    b *= 2
                    have, level, since = _refind(means, nm, wblocks, smooth, trim, buf)
                else:
                    since += 1
                    if wblocks <= nm:
                        _sort_into(buf, means, nm - wblocks, wblocks)
                        lv = _smoothed(buf, wblocks, smooth, trim)
                        if not have or lv > level:
                            have, level, since = True, lv, 0
            if _judge(means, nm, b, n, have, level, since, start, thr, k, clip, min_evals,
                      rel, gmin, hn, lags, sign, noise, sigma, eval_n, need, min_diffs, clip_n,
                      clipped_mean_abs, mean_abs, mad_n01, d, srt, dv):
                stop = n - 1
                break
        stop_at[j] = stop
        if stop >= 0:
            kept[j] = best_upto(vals, stop)
