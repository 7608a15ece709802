"""Compiled twin of ``block-cusum`` past its first merge (used when numba is installed, see
``evalstop.jit``): ``BlockCusum._observe`` and ``_judge`` run job by job, eval by eval, from
the eval at which the history first reaches ``2 * blocks`` block means on.

Up to that eval every block is one eval and the rule is ``cusum-drop`` with two gates,
which ``cusum_drop_jit`` (or ``cusum_drop_array``) plans; ``block_cusum_array`` explains
why, and hands here only the rows that have not stopped by then. The state there follows
from the row alone: the first ``2 * blocks`` evals merged pairwise into ``blocks`` means of
2 evals, the start level (the first level window's, over the evals themselves), and the
best level found again over the merged means, as ``_refind`` does.

With a path after ``hn`` evals on (issue 46), ``rule_rows`` runs the whole rule instead,
from each row's first eval: the blocks of one eval and the growing level window before the
first merge, the collapse test at every eval after ``hn`` (``collapse_test``: the median of
the reference evals, the run's mean |D| clipped as ``PairHistory`` adds it), the dead-run
and ``idle`` tests at each judged block (``dead_test``), and the ``wander`` and ``last``
gates after the CUSUM's. It gives the stop and kept evals only, as every plan does: a stop
reason is the object's to write.

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
from evalstop.detectors.cusum_drop_jit import (
    _median,
    _sigma_hat,
    _smoothed,
    _sort_into,
    best_upto,
    diff_scale,
)

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
def _merge(means, nm):
    """``BlockCusum._merge`` of ``means[:nm]``: neighbours averaged pairwise (the blocks
    double); the new count."""
    for i in range(0, nm - 1, 2):
        means[i // 2] = (means[i] + means[i + 1]) / 2.0
    return nm // 2


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
def _cusum(means, s0, nm, level, s, k, clip):
    """``BlockCusum._judge``'s W over ``means[s0:nm]`` with the noise s, and where its
    current excursion above 0 began: (W, run_from)."""
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
    return w, run_from


@njit(cache=True)
def _mean(means, lo, nm):
    """``sum(means[lo:nm]) / (nm - lo)``, summed left to right."""
    acc = 0.0
    for i in range(lo, nm):
        acc += means[i]
    return acc / (nm - lo)


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
    w, run_from = _cusum(means, s0, nm, level, s, k, clip)
    if w < thr[n]:
        return False
    now = _mean(means, run_from, nm)
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
                if nm >= top:
                    nm, b = _merge(means, nm), 2 * b
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


# ---- the whole rule, the paths after hn evals included (issue 46) ---------------------
# ``nc``: the noise module's constants (MAX_VALUES, MIN_DIFFS, CLIP, CLIPPED_MEAN_ABS,
# MEAN_ABS, MAD_N01); ``cc``: collapse_test's (REF, MIN_PAST, CLIP_PAST, PAST_SD, GAIN_Z)
# and dead_test's (FLOOR_SHARE, PEAK_SHARE, MIN_PINNED), as ``block_cusum_array`` packs them.


@njit(cache=True)
def _eval_sigma(level, sign, noise, sigma, eval_n):
    """``BlockCusum._eval_sigma`` with a level (no fleet); -1.0 where it is None."""
    if noise == STATED:
        return sigma
    if noise == BINOMIAL:
        p = sign * level
        p = max(p, 0.0)
        p = min(p, 1.0)
        q = (p * eval_n + 2.0) / (eval_n + 4.0)
        return math.sqrt(q * (1.0 - q) / eval_n)
    return -1.0


@njit(cache=True)
def _own(means, nm, lags, nc, d, srt, dv):
    return _own_block_sigma(means, nm, lags, int(nc[1]), nc[2], nc[3], nc[4], nc[5], d, srt,
                            dv)


@njit(cache=True)
def _hat(vals, n, last, nc, d, srt):
    """``noise.sigma_hat`` of the ``last`` values up to ``vals[n - 1]``; -1.0 for None."""
    return _sigma_hat(vals, n, min(last, int(nc[0])), int(nc[1]), nc[2], nc[3], nc[4], nc[5],
                      d, srt)


@njit(cache=True)
def _block_sigma(means, nm, b, one, lags, nc, d, srt, dv):
    """``BlockCusum._block_sigma`` (no fleet), ``one`` the eval's noise (-1.0: None)."""
    if b == 1:
        return one if one >= 0.0 else _hat(means, nm, nm, nc, d, srt)
    own = _own(means, nm, lags, nc, d, srt, dv)
    floor = -1.0 if one < 0.0 else one / math.sqrt(b)
    if own < 0.0 or floor >= 0.0 and floor > own:  # max(own, floor), None left out
        return floor
    return own


@njit(cache=True)
def _collapses(vals, n, level, start, one, total, count, fast, frel, cc, nc, buf, d, srt):
    """Whether ``collapse_test.collapse_fall`` finds a collapse in the last evals up to
    ``vals[n - 1]`` (n >= RECENT), the pairs' history at ``total``/``count``."""
    ref = int(cc[0])
    gain = level - start
    _sort_into(buf, vals, n - 2 - ref, ref)
    a, b = vals[n - 2], vals[n - 1]
    fall = _median(buf, ref) - (b if b > a else a)
    if gain <= 0.0 or fall < frel * gain:
        return False
    past = total / count if count >= int(cc[1]) else -1.0
    if one < 0.0 and past < 0.0:
        one = _hat(vals, n - 2, ref, nc, d, srt)
    scale = one  # max() of (one, PAST_SD * past, 0.0), the None ones (-1.0) left out
    if past >= 0.0:
        x = cc[3] * past
        if scale < 0.0 or x > scale:
            scale = x
    scale = max(scale, 0.0)
    return not (fall < fast * scale or gain < cc[4] * fast * scale)


@njit(cache=True)
def _at_floor(means, lo, nm, start, gain, sigma, w0, scale, cc):
    """``dead_test.at_floor`` of ``means[lo:nm]``."""
    if nm == lo or gain <= 0.0:
        return False
    low, high = means[lo], means[lo]
    for i in range(lo, nm):
        low = means[i] if means[i] < low else low
        high = means[i] if means[i] > high else high
    if nm - lo >= int(cc[7]) and low == high and high <= start:
        return True
    if gain < scale:
        return False
    floor = start + cc[5] * gain + sigma / math.sqrt(w0)
    return _mean(means, lo, nm) <= floor and high <= start + cc[6] * gain


@njit(cache=True)
def _must_last(last, n, fall, gain):
    """``BlockCusum._must_last``."""
    depth = 1.0
    if gain > 0.0:
        depth = fall / gain
        depth = min(depth, 1.0)
    return last * n * (1.0 - depth)


@njit(cache=True)
def rule_rows(raw, rows, sign, thr, k, clip, smooth, min_evals, trim, smooth_min, blocks,
              wblocks, rel, gmin, hn, lags, wander, last, fast, frel, dead, idle, noise,
              sigma, eval_n, need, nc, cc, stop_at, kept):
    """Fill ``stop_at[j]`` and ``kept[j]`` for the rows j in ``rows`` of ``raw`` (job, eval;
    finite): ``BlockCusum._observe`` and ``_judge`` from the first eval on, with the paths
    after ``hn`` evals (``wander``, ``last``, ``fast``, ``dead``, ``idle``; 0: off).
    ``smooth_min`` <= 0 stands for None."""
    m = raw.shape[1]
    top = 2 * blocks
    keep = int(cc[0]) + 2 if fast > 0.0 else 3  # BlockCusum._keep
    w0 = smooth if smooth_min <= 0 else smooth_min
    vals = np.empty(m)
    means = np.empty(top)
    buf = np.empty(max(smooth, blocks, keep, 1))
    d = np.empty(max(top, keep))
    srt = np.empty(max(top, keep))
    dv = np.empty(max(top, keep))
    for j in rows:
        for i in range(m):
            vals[i] = sign * raw[j, i]
        b, nm, open_sum, open_n, width = 1, 0, 0.0, 0, w0
        have, level, since, has_start, start = False, 0.0, 0, False, 0.0
        total, count = 0.0, 0  # collapse_test.PairHistory
        stop = -1
        for n in range(1, m + 1):
            late = n > hn
            open_sum += vals[n - 1]
            open_n += 1
            if fast > 0.0 and n >= keep:
                if late and have and has_start:
                    one = _eval_sigma(level, sign, noise, sigma, eval_n)
                    if _collapses(vals, n, level, start, one, total, count, fast, frel, cc,
                                  nc, buf, d, srt):
                        stop = n - 1
                        break
                _sort_into(buf, vals, n - keep, keep - 2)
                a, c = vals[n - 2], vals[n - 1]
                x = abs(_median(buf, keep - 2) - (c if c > a else a))
                if count >= int(cc[1]):  # min(|D|, CLIP_PAST * mean) once the mean counts
                    cap = cc[2] * (total / count)
                    x = cap if cap < x else x
                total += x
                count += 1
            if open_n < b:
                continue
            means[nm] = open_sum / open_n
            nm += 1
            open_sum, open_n = 0.0, 0
            merged = nm >= top
            if merged:
                nm, b = _merge(means, nm), 2 * b
            want = wblocks
            if b == 1:
                want = smooth if smooth_min <= 0 else min(smooth, max(smooth_min,
                                                                      (nm + 1) // 2))
            if merged or want != width:
                width = want
                have, level, since = _refind(means, nm, width, smooth, trim, buf)
                if have and not has_start:
                    _sort_into(buf, means, 0, width)
                    has_start, start = True, _smoothed(buf, width, smooth, trim)
            else:
                since += 1
                if width <= nm:
                    _sort_into(buf, means, nm - width, width)
                    lv = _smoothed(buf, width, smooth, trim)
                    if not has_start:
                        has_start, start = True, lv
                    if not have or lv > level:
                        have, level, since = True, lv, 0
            if not have or since == 0 or n < min_evals:
                continue
            one = _eval_sigma(level, sign, noise, sigma, eval_n)
            if (dead > 0.0 or idle) and late:  # _no_gain
                gain = level - start
                if dead > 0.0:
                    q = max(1, math.ceil(dead * nm))
                    own1 = one if one >= 0.0 else _hat(vals, n, keep, nc, d, srt)
                    s = _block_sigma(means, nm, b, one, lags, nc, d, srt, dv)
                    if own1 >= 0.0 and s >= 0.0 and _at_floor(means, nm - q, nm, start, gain,
                                                               own1, w0, gmin * s, cc):
                        stop = n - 1
                        break
                if idle and n >= idle:
                    s = _block_sigma(means, nm, b, one, lags, nc, d, srt, dv)
                    if s >= 0.0 and gain < gmin * s:
                        stop = n - 1
                        break
            s0 = nm - min(since, nm)
            below = 0
            for i in range(s0, nm):
                below += means[i] < level
            if below == 0 or below < need:  # none: the object returns before its noise
                continue
            s = _block_sigma(means, nm, b, one, lags, nc, d, srt, dv)
            if s < 0.0:
                continue
            w, run_from = _cusum(means, s0, nm, level, s, k, clip)
            if w < thr[n]:
                continue
            fall = level - _mean(means, run_from, nm)
            gain = level - start
            gain = max(gain, 0.0)
            if rel > 0.0 and fall < rel * gain:
                continue
            if n > hn and gain < gmin * s:
                continue
            if wander > 0.0 and late:  # _wander_sd
                own = _own(means, nm, lags, nc, d, srt, dv)
                base = _hat(means, nm, nm, nc, d, srt) if one < 0.0 else one / math.sqrt(b)
                wsd = 0.0
                if own >= 0.0 and base >= 0.0:
                    x = own * own - base * base
                    wsd = math.sqrt(x if x > 0.0 else 0.0)
                if fall < wander * wsd:
                    continue
            if last > 0.0 and late and (nm - run_from) * b < _must_last(last, n, fall, gain):
                continue
            stop = n - 1
            break
        stop_at[j] = stop
        if stop >= 0:
            kept[j] = best_upto(vals, stop)
