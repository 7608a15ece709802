"""The numba twin of ``planned.run``: the same loop, compiled, for its four key rules
(SRTF-Est's remaining time; Tiresias' levels, with its crossings and its unsettled calls;
SJF-Est's fixed key; LossAware's loss drop). Tiresias and LossAware share the yields at
checkpoints and the index of running jobs' evals per GPU class.

``planned.run`` spends its time in Python's heap operations (SRTF-Est on 1x Philly: 137k
starts, 237k pops, 370k pushes). Here the same loop runs over numpy arrays. The victims'
heap, the level crossings and the wait queue are array heaps whose pushes, pops, replaces
and heapifies are ``heapq``'s algorithms step for step (so each holds its entries in the
same places, and the in-place reading of the victims' heap visits them in the same order),
entries stored by value and compared field by field as Python compares the tuples;
``_Rank``'s tie rule is ``_rank_less`` (the two ``_chain`` sequences compared element by
element). Two heaps differ from Python's, as nothing reads the order in which their
entries of one time leave: the ends (every end at an instant is handled before the call,
each on its own job), a 4-ary heap ordered by time alone (``numba_arrays._kpush``: a
replaced top costs under half the binary heap's), and the evals' index, a timing wheel per
GPU class (``numba_wheel``; see ``_at``).
No fastmath: every float is computed with the expression, and in the order, of the
Python loop, so times, keys and GPU-seconds are the same floats.
``tests/test_sim_srtf_loop.py`` and ``tests/test_sim_planned_levels.py`` compare the twin
with the Python loop and with the checkpoint loop.

A change to the steps in ``planned``, ``levels``, ``yields`` or ``loss_drops`` must be
made here too. Only
``run_kernel`` is called from outside; it returns the arrays ``run`` builds its result
from, and a count of jobs left waiting on an idle cluster (-1: none) for ``run`` to raise
on. Its buffers are sized by the bounds of one scheduling call, which hold because every
job needs at least one GPU (``Workload.validate``), and grown between calls.

Only ``run_kernel`` makes arrays and counts references to them. The loop itself (``_loop``)
and every helper run without numba's reference counts (``numba_arrays._helper``) while
``run_kernel`` holds the arrays, and hand back to it when an array must grow.

Compiling all this takes tens of CPU-seconds, once: the result is cached (``cache=True``)
and later processes load it (numba's import included, about a second).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types

from evalstop import jit
from evalstop.schedulers import loss_aware, srtf, tiresias
from evalstop.schedulers.loss_aware import drop_key
from evalstop.schedulers.srtf import remaining_s
from evalstop.schedulers.tiresias import queue_key, queue_level
from evalstop.sim import numba_arrays, numba_victims, numba_wheel
from evalstop.sim.numba_arrays import (
    F1,
    F2,
    I1,
    I2,
    _bisect_left,
    _delete,
    _grow,
    _helper,
    _insort,
    _kheapify,
    _kpop,
    _kpush,
    _mark,
    _row,
    _step,
    _theapify,
    _tless,
    _tpop,
    _tpush,
    f8,
    i8,
)
from evalstop.sim.numba_victims import (
    W_BATCH,
    W_CALL,
    W_D,
    W_FLAG,
    W_J0,
    W_JOB,
    W_NKEY,
    W_OH,
    W_ORD,
    W_ORDER,
    W_P0,
    W_S,
    W_SERIAL,
    W_TIME,
    _copy,
    _rank_less,
    _round,
    _wheapify,
    _wpop,
    _wpush_from,
    _wsiftdown,
    _wsiftup,
)
from evalstop.sim.numba_wheel import (
    C_CUR,
    C_MIN,
    C_N,
    MASK,
    NB,
    _bucket,
    _free,
    _link,
    _low,
    _next_slot,
    _put,
    _relink,
    _take,
)

jit.forget_stale(__file__, numba_arrays, numba_victims, numba_wheel, srtf, tiresias, loss_aware)
INF = np.inf
NAN = np.nan
# The bases' keys: their own functions, compiled into the loop.
_remaining_s, _queue_level, _queue_key, _drop_key = (
    _step(f) for f in (remaining_s, queue_level, queue_key, drop_key))

# Per-job floats (JF columns) and ints (JI columns). A running job has one segment (a run
# from a start to its end or preemption): SEG_* describe it.
# KEY: the key of the job's live entry; CROSS_T, LVL: its next level crossing and its level
# (Tiresias, ``sim.levels``).
START, FINISH, GPU_S, PROG, END_T, NXT, SEG_S, SEG_OH, SEG_P0, SEG_D, KEY, CROSS_T = range(12)
N_PRE, DONE, LIVE, MOVED, GONE, SEG_J0, SEG_CALL, SEG_ORDER, LVL = range(9)
# The per-job inputs, packed in two arrays (JS floats, JG ints): every array a helper is
# passed costs a dozen words per call, and with the arrays of Tiresias' steps added the
# twin ran SRTF-Est 24% slower.
J_DUR, J_EST, J_AKEY = range(3)
J_GPUS, J_END = range(2)

# Scalars shared by the helpers (numba functions cannot assign their caller's locals);
# S_CR: the size of the crossings' heap; S_LV: the key rule (0:
# SRTF-Est's remaining time, 1: Tiresias' levels, 2: SJF-Est's fixed key, 3: LossAware's).
S_EV, S_W, S_Q, S_B, S_ORDER, S_WSEQ, S_EA_BOUND, S_SERIAL, S_PRE, S_CR, S_LV = range(11)
S_OVER = 11  # 1: more evals fell at one instant than the hits' rows hold (see run_kernel)
S_RAN = 12  # the runs started in this call (Tiresias, LossAware; see _ran)
S_B0 = 13  # the multi-GPU wait queue's first row (``numba_arrays._insort``)
F_EA_LIMIT = 0

# ---- the loop -------------------------------------------------------------------------
# Argument types of the loop's helpers, by group: the shared state (S, SF, JF, JI), the
# victims' heap (WF, WI), a heap of (float, int, int) (the ends; the level crossings), the
# inputs (JS, JG, grid, thr).
ST, WH, TH, IN = (I1, F1, F2, I2), (F2, I2), (F1, I1, I1), (F2, I2, F1, F1)
# The evals' index keys each run's next eval by (time, job, eval << 32 | the run's start
# order): the order tells a live run's entry from a stale one (``segs[i] is seg``).
_LOW = (1 << 32) - 1


@_helper(F1, I1, I1, i8, F2, i8)
def _drop_stale(F, A, B, n, JF, col):
    """The first n entries of a heap of (time, job, int) less those whose time is no longer
    the job's ``col`` (an end or a crossing since cleared or moved), moved to the front;
    returns their count (the caller makes them a heap again)."""
    k = 0
    for r in range(n):
        if JF[A[r], col] == F[r]:
            F[k], A[k], B[k] = F[r], A[r], B[r]
            k += 1
    return k


@_step
def _head(S, QF, QA, QB, BK, BS, BJ):
    """The waiting head's key and job (the queue not empty)."""
    r = S[S_B0] + S[S_B] - 1
    if S[S_Q] and not (S[S_B] and _tless(BK[r], BS[r], BJ[r], QF[0], QA[0], QB[0])):
        return QF[0], QB[0]
    return BK[r], BJ[r]


@_step
def _enqueue(key, i, S, QF, QA, QB, BK, BS, BJ, JG):
    """``planned._queuer``'s ``enqueue``, the counter advanced."""
    S[S_WSEQ] += 1
    if JG[i, J_GPUS] == 1:
        S[S_Q] = _tpush(QF, QA, QB, S[S_Q], key, S[S_WSEQ], i)
    else:
        S[S_B0], S[S_B] = _insort(BK, BS, BJ, S[S_B0], S[S_B], key, S[S_WSEQ], i)


@_helper(i8, i8, *ST, *TH, I2, F1, F1, i8)
def _cross_next(i, lo, S, SF, JF, JI, CF, CA, CB, JG, grid, thr, n_gpus):
    """``levels.crosser``'s ``cross_next``: job i's next level crossing, the first eval
    from ``lo`` whose attained GPU-seconds reach the next threshold."""
    level, hi = JI[i, LVL], JG[i, J_END] - 1
    if level >= thr.shape[0] or lo > hi:
        JF[i, CROSS_T] = NAN
        return
    th = thr[level]
    s, oh, p0, d = JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D]
    b, g0, g = s + oh, JF[i, GPU_S], JG[i, J_GPUS]
    if g0 + g * ((b + (grid[hi] - p0) * d) - s) < th:
        JF[i, CROSS_T] = NAN
        return
    while lo < hi:
        mid = (lo + hi) // 2
        if g0 + g * ((b + (grid[mid] - p0) * d) - s) >= th:
            hi = mid
        else:
            lo = mid + 1
    tc = b + (grid[lo] - p0) * d
    JF[i, CROSS_T] = tc
    S[S_CR] = _tpush(CF, CA, CB, S[S_CR], tc, i, 0)
    if S[S_CR] > 64 + 4 * n_gpus:
        S[S_CR] = _drop_stale(CF, CA, CB, S[S_CR], JF, CROSS_T)
        _theapify(CF, CA, CB, S[S_CR])


@_step
def _runs(i, code, JF, JI):
    """Whether an index entry of job i with ``code`` is of its run still going (not
    ended, not preempted)."""
    return JI[i, SEG_ORDER] == code & _LOW and JF[i, END_T] == JF[i, END_T]


@_helper(i8, I1, F2, I2, F1, I1, I1, I1, I1, I2, F1, i8)
def _track(i, CK, JF, JI, KF, KA, KB, KN, KH, JG, grid, n_gpus):
    """``yields.eval_index``'s ``track``: job i's run starts (in one class's wheel, see
    ``numba_wheel``)."""
    j = JI[i, SEG_J0]
    if j < JG[i, J_END]:
        te = JF[i, SEG_S] + JF[i, SEG_OH] + (grid[j] - JF[i, SEG_P0]) * JF[i, SEG_D]
        _put(CK, KF, KA, KB, KN, KH, te, i, (j << 32) | JI[i, SEG_ORDER])
    if CK[C_N] > 64 + 4 * n_gpus:  # (the stale entries dropped, as ``track`` does)
        for s in range(NB):
            e = _take(KH, s)
            while e >= 0:
                nx = KN[e]
                if _runs(KA[e], KB[e], JF, JI):
                    _link(KF, KN, KH, e, s)
                else:
                    _free(CK, KN, e)
                e = nx


@_step
def _at(t, call, S, CK, JF, JI, KF, KA, KB, KN, KH, HI, JG, grid):
    """``yields.eval_index``'s ``at`` on one class's wheel: the hits, (job, eval) in HI's
    first rows (as many as it returns; a count past HI's rows sets ``S_OVER``), and the
    next eval's time. Only the slots from the last query's bucket to t's are read; an entry
    due at t at once at its start in this call is left for after it."""
    nh = 0
    bt = _bucket(t, KF)
    span, s0 = min(bt - CK[C_CUR] + 1, NB), CK[C_CUR] & MASK
    CK[C_CUR] = bt
    off = 0
    while off < span:
        s = _next_slot(KH, (s0 + off) & MASK)
        d = (s - s0) & MASK
        if s < 0 or d < off or d >= span:
            break
        off = d + 1
        if KF[KH[s]] > t:
            continue  # (its earliest entry not due: none is)
        e = _take(KH, s)
        while e >= 0:
            nx, tk, i, code = KN[e], KF[e], KA[e], KB[e]
            e_ = e
            e = nx
            if tk > t:  # (left, stale or not, without reading its job)
                _link(KF, KN, KH, e_, s)
                continue
            if not _runs(i, code, JF, JI):
                _free(CK, KN, e_)  # the run ended or was preempted
                continue
            s_, oh, p0, dd = JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D]
            j0, c0, k = JI[i, SEG_J0], JI[i, SEG_CALL], code >> 32
            if tk == t and _round(s_, oh, p0, dd, j0, c0, grid, k) > call:
                _link(KF, KN, KH, e_, s)  # (after this call)
                continue
            b, end, more = s_ + oh, JG[i, J_END], True
            tk = b + (grid[k] - p0) * dd
            while tk <= t:
                if tk == t and _round(s_, oh, p0, dd, j0, c0, grid, k) == call:
                    if nh < HI.shape[0]:
                        HI[nh, 0], HI[nh, 1] = i, k
                    else:
                        S[S_OVER] = 1
                    nh += 1
                k += 1
                if k == end:
                    more = False
                    break
                tk = b + (grid[k] - p0) * dd
            if more:
                KF[e_], KB[e_] = tk, (k << 32) | (code & _LOW)
                _link(KF, KN, KH, e_, _bucket(tk, KF) & MASK)
            else:
                _free(CK, KN, e_)
    nxt = _first(bt, CK, JF, JI, KF, KA, KB, KN, KH)
    KF[_low(KF)] = nxt  # (every entry left is at t or later)
    return min(nh, HI.shape[0]), nxt


@_step
def _first(bt, CK, JF, JI, KF, KA, KB, KN, KH):
    """The earliest time of a live entry in one class's wheel whose entries are all of
    bucket ``bt`` or later (INF: none), its row in ``C_MIN``. Only a slot's first, its
    earliest entry, is read (and dropped if stale): the others' jobs are not."""
    s0, off, CK[C_MIN] = bt & MASK, 0, -1
    while off < NB:
        s = _next_slot(KH, (s0 + off) & MASK)
        d = (s - s0) & MASK
        if s < 0:
            return INF
        if d < off:
            break
        m = KH[s]  # (the slot's earliest)
        if _bucket(KF[m], KF) != bt + d:
            off = d + 1  # (a later turn: every entry of the slot is)
        elif _runs(KA[m], KB[m], JF, JI):
            CK[C_MIN] = m
            return KF[m]
        else:  # (stale: dropped, the others put back so that the earliest is first)
            _take(KH, s)
            _relink(KF, KN, KH, KN[m], s)
            _free(CK, KN, m)
            if KH[s] < 0:
                off = d + 1
    best = INF
    for s in range(NB):  # every live entry a turn or more ahead (rare)
        e = KH[s]
        while e >= 0:
            if KF[e] < best and _runs(KA[e], KB[e], JF, JI):
                best, CK[C_MIN] = KF[e], e
            e = KN[e]
    return best


@_step
def _fills(free, depth, S, QF, QA, QB, BK, BS, BJ, JG):
    """``yields.fill_would_act``'s ``fills``: whether a fill on ``free`` GPUs would start
    one of the first ``depth`` waiting jobs (the queue not empty)."""
    if free <= 0:
        return False
    n_ahead = (_bisect_left(BK, BS, BJ, S[S_B0], S[S_B], QF[0], QA[0], QB[0], 0) if S[S_Q]
               else S[S_B])
    if S[S_Q] and n_ahead < depth:
        return True
    for k in range(min(n_ahead, depth)):
        if JG[BJ[_row(S[S_B0], S[S_B], k)], J_GPUS] <= free:
            return True
    return False


@_step
def _children(k, n_w, stack, top):
    """The children of node k of a binary heap of ``n_w`` entries pushed on ``stack`` (of
    ``top`` entries): the depth-first reads of the victims' heap in place, which skip a
    subtree whose root's stored key is at most the limit; returns the new ``top``."""
    k = 2 * k + 1
    if k < n_w:
        stack[top] = k
        top += 1
        if k + 1 < n_w:
            stack[top] = k + 1
            top += 1
    return top


@_helper(i8, i8, f8, *ST, *WH, F1, I1, I1, F1, I1, I1, I1, I2)
def _unsettled(free, depth, margin, S, SF, JF, JI, WF, WI, QF, QA, QB, BK, BS, BJ, stack, JG):
    """``yields.unsettled_test``'s ``unsettled``: whether the next call after only
    checkpoints would act on the state this call left (the queue not empty)."""
    if _fills(free, depth, S, QF, QA, QB, BK, BS, BJ, JG):
        return True
    head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
    short, limit = JG[h, J_GPUS] - free, head_key + margin
    if limit >= SF[F_EA_LIMIT] and S[S_EA_BOUND] < short:
        return False
    held, top, n_w = 0, 0, S[S_W]
    if n_w:
        stack[0], top = 0, 1
    while top:
        top -= 1
        k = stack[top]
        if -WF[k, W_NKEY] <= limit:
            continue
        if JI[WI[k, W_JOB], LIVE] == WI[k, W_SERIAL]:
            held += JG[WI[k, W_JOB], J_GPUS]
            if held >= short:
                return True
        top = _children(k, n_w, stack, top)
    SF[F_EA_LIMIT], S[S_EA_BOUND] = limit, held
    return False


@_step
def _start(i, key, t, call, cid, S, SF, JF, JI, WF, WI, EF, EA, EB, JS, JG, grid, ran,
           n_gpus, overhead):
    """``start`` in ``planned`` (``_starter``)."""
    JI[i, MOVED] = cid
    S[S_ORDER] += 1
    order = S[S_ORDER]
    S[S_SERIAL] += 1
    n = S[S_W]
    restarted = JI[i, GONE] == cid
    if restarted:
        # Preempted and restarted in one call: the checkpoint loop keeps it running on the
        # same segment; only its key (the wait key) is set anew, as at a start.
        JI[i, GONE] = 0
    else:
        if JI[i, N_PRE]:
            if S[S_LV] == 0:
                key = _remaining_s(JS[i, J_EST], JF[i, PROG])  # the wait key predates the progress
            oh = overhead
        else:
            oh = 0.0
        if JF[i, START] != JF[i, START]:
            JF[i, START] = t
        p0 = JF[i, PROG]
        d = JS[i, J_DUR]
        te = t + oh + (grid[JG[i, J_END]] - p0) * d
        JF[i, END_T] = te
        S[S_EV] = _kpush(EF, EA, EB, S[S_EV], te, i, 0)
        j = JI[i, DONE] + 1
        JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D] = t, oh, p0, d
        JI[i, SEG_J0], JI[i, SEG_CALL], JI[i, SEG_ORDER] = j, call, order
        JF[i, NXT] = t + oh + (grid[j] - p0) * d if j < JG[i, J_END] else INF
        if S[S_LV] & 1:  # Tiresias, LossAware
            ran[S[S_RAN]] = i  # its crossing and its first eval, after the call (_ran)
            S[S_RAN] += 1
    if S[S_LV] >= 2:  # SJF-Est, LossAware: nothing preempts, no victims' heap
        JI[i, LIVE] = S[S_SERIAL]
        return
    JF[i, KEY] = key
    WF[n, W_NKEY], WF[n, W_TIME] = -key, t
    WI[n, W_BATCH], WI[n, W_FLAG], WI[n, W_ORD] = call, 1, order
    WI[n, W_JOB], WI[n, W_SERIAL] = i, S[S_SERIAL]
    JI[i, LIVE] = S[S_SERIAL]
    _wsiftdown(WF, WI, 0, n, grid)
    n += 1
    S[S_W] = n
    if key > SF[F_EA_LIMIT]:
        S[S_EA_BOUND] += JG[i, J_GPUS]
    if not restarted and not order & 63 and n > 64 + 2 * n_gpus:
        # Drop entries of jobs no longer running (looked at every 64th start; at most
        # n_gpus jobs run). Not after a restart in its own call (the Python loop returns
        # before this).
        k = 0
        for r in range(n):
            if JI[WI[r, W_JOB], LIVE] == WI[r, W_SERIAL]:
                if k != r:
                    _copy(WF, WI, r, WF, WI, k)
                k += 1
        S[S_W] = k
        _wheapify(WF, WI, k, grid)


@_helper(i8, f8, *ST, *IN, F2, I2, i8)
def _refresh(i, t, S, SF, JF, JI, JS, JG, grid, thr, DF, DI, y):
    """``refresh``: job i's entry as of its last eval at or before t, written to row y of
    (DF, DI); it becomes the job's live entry."""
    s, oh, p0, d = JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D]
    j0, call = JI[i, SEG_J0], JI[i, SEG_CALL]
    b = s + oh
    k, end = JI[i, DONE] + 1, JG[i, J_END]
    while k + 1 < end and b + (grid[k + 1] - p0) * d <= t:
        k += 1
    JI[i, DONE] = k
    JF[i, NXT] = b + (grid[k + 1] - p0) * d if k + 1 < end else INF
    g = grid[k]
    JF[i, PROG] = g
    tk = b + (g - p0) * d
    if S[S_LV] == 1:
        # (J_AKEY holds the arrival: an arriving job's key is ``queue_key(0, arrival)``.)
        level = _queue_level(thr, JF[i, GPU_S] + JG[i, J_GPUS] * (tk - s))
        JI[i, LVL] = level
        key = _queue_key(level, JS[i, J_AKEY])
    else:
        key = _remaining_s(JS[i, J_EST], g)
    JF[i, KEY] = key
    S[S_SERIAL] += 1
    DF[y, W_NKEY], DF[y, W_TIME] = -key, tk
    DF[y, W_S], DF[y, W_OH], DF[y, W_P0], DF[y, W_D] = s, oh, p0, d
    DI[y, W_BATCH] = _round(s, oh, p0, d, j0, call, grid, k)
    DI[y, W_FLAG], DI[y, W_ORD], DI[y, W_JOB], DI[y, W_SERIAL] = 0, k, i, S[S_SERIAL]
    DI[y, W_J0], DI[y, W_CALL], DI[y, W_ORDER] = j0, call, JI[i, SEG_ORDER]
    JI[i, LIVE] = S[S_SERIAL]


@_helper(i8, f8, i8, i8, i8, *ST, *WH, *TH, F1, I1, I1, F1, I1, I1, F2, I2, F1, I1, i8, f8)
def _fill(free, t, call, cid, depth, S, SF, JF, JI, WF, WI, EF, EA, EB, QF, QA, QB, BK, BS,
          BJ, JS, JG, grid, ran, n_gpus, overhead):
    """``fill``: the queue in key order, at most ``depth`` deep, starting each job that
    fits."""
    looked = b = 0
    while looked < depth and free > 0:
        if free == 1:
            # Only a one-GPU job fits: the multi-GPU jobs ahead of it are skipped at once.
            if S[S_Q] == 0:
                break
            r = _row(S[S_B0], S[S_B], b)
            if b < S[S_B] and _tless(BK[r], BS[r], BJ[r], QF[0], QA[0], QB[0]):
                k = _bisect_left(BK, BS, BJ, S[S_B0], S[S_B], QF[0], QA[0], QB[0], b)
                looked += k - b
                b = k
                if looked >= depth:
                    break
            key, _, i, S[S_Q] = _tpop(QF, QA, QB, S[S_Q])
            _start(i, key, t, call, cid, S, SF, JF, JI, WF, WI, EF, EA, EB, JS, JG, grid,
                   ran, n_gpus, overhead)
            return 0
        r = _row(S[S_B0], S[S_B], b)
        if S[S_Q] and not (b < S[S_B] and _tless(BK[r], BS[r], BJ[r], QF[0], QA[0], QB[0])):
            key, _, i, S[S_Q] = _tpop(QF, QA, QB, S[S_Q])
            free -= 1
            looked += 1
            _start(i, key, t, call, cid, S, SF, JF, JI, WF, WI, EF, EA, EB, JS, JG, grid,
                   ran, n_gpus, overhead)
            continue
        if b == S[S_B]:
            break
        looked += 1
        i = BJ[r]
        if JG[i, J_GPUS] <= free:
            key = BK[r]
            S[S_B0], S[S_B] = _delete(BK, BS, BJ, S[S_B0], S[S_B], b)
            free -= JG[i, J_GPUS]
            _start(i, key, t, call, cid, S, SF, JF, JI, WF, WI, EF, EA, EB, JS, JG, grid,
                   ran, n_gpus, overhead)
        else:
            b += 1
    return free


@_helper(f8, i8, f8, i8, *ST, *WH, F2, I2, I1, *IN)
def _enough_above(limit, short, t, cid, S, SF, JF, JI, WF, WI, FRF, FRI, stack, JS, JG,
                  grid, thr):
    """``enough_above``: whether running jobs not started in this call, with keys above
    ``limit``, hold ``short`` GPUs; the heap is read in place (a subtree whose root's
    stored key is at most ``limit`` holds no candidate), refreshed entries pushed after."""
    n_w = S[S_W]
    top = 0
    if n_w:
        stack[0] = 0
        top = 1
    n_fresh = 0
    held = 0
    while top:
        top -= 1
        k = stack[top]
        if -WF[k, W_NKEY] <= limit:
            continue
        i = WI[k, W_JOB]
        if JI[i, LIVE] == WI[k, W_SERIAL]:
            if JI[i, MOVED] != cid:
                nkey = WF[k, W_NKEY]
                if JF[i, NXT] <= t:
                    _refresh(i, t, S, SF, JF, JI, JS, JG, grid, thr,
                             FRF, FRI, n_fresh)
                    nkey = FRF[n_fresh, W_NKEY]
                    n_fresh += 1
                if -nkey > limit:
                    short -= JG[i, J_GPUS]
                    if short <= 0:
                        break
                    held += JG[i, J_GPUS]
            elif -WF[k, W_NKEY] > limit:
                held += JG[i, J_GPUS]
        top = _children(k, n_w, stack, top)
    for r in range(n_fresh):
        S[S_W] = _wpush_from(FRF, FRI, r, WF, WI, S[S_W], grid)
    if short > 0:
        SF[F_EA_LIMIT], S[S_EA_BOUND] = limit, held
    return short <= 0


@_step
def _none_above(limit, S, WF):
    """Whether no running job's key is above ``limit``: the victims' top's stored key
    bounds every key."""
    return S[S_W] == 0 or -WF[0, W_NKEY] <= limit


@_step
def _may_preempt(need, free, limit, S, SF, WF):
    """The search's first tests, made before its call too (most calls end here): whether
    the head, of ``need`` GPUs, fits, or running jobs' keys above ``limit`` may hold the
    GPUs it lacks. The last short count (``_enough_above``) bounds what jobs above its
    limit hold."""
    if need <= free:
        return True
    if _none_above(limit, S, WF):
        return False
    return need - free == 1 or not (SF[F_EA_LIMIT] <= limit and S[S_EA_BOUND] < need - free)


@_helper(i8, f8, i8, i8, i8, f8, *ST, *WH, *TH, F1, I1, I1, F1, I1, I1, F2, I2, F2, I2, I1, I1,
         I1, *IN, I1, i8, f8)
def _preempt_for_head(free, t, call, cid, depth, margin, S, SF, JF, JI, WF, WI, EF, EA, EB,
                      QF, QA, QB, BK, BS, BJ, PPF, PPI, FRF, FRI, stack, victims, preempted,
                      JS, JG, grid, thr, ran, n_gpus, overhead):
    """``preempt_for_head``."""
    rounds = 0
    while (S[S_Q] or S[S_B]) and rounds < depth:
        rounds += 1
        head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
        need = JG[h, J_GPUS]
        if need <= free:
            free = _fill(free, t, call, cid, depth, S, SF, JF, JI, WF, WI, EF, EA, EB, QF,
                         QA, QB, BK, BS, BJ, JS, JG, grid, ran, n_gpus, overhead)
            continue
        limit = head_key + margin
        if not _may_preempt(need, free, limit, S, SF, WF):
            break
        if need - free > 1:
            if not _enough_above(limit, need - free, t, cid, S, SF, JF, JI, WF, WI, FRF,
                                 FRI, stack, JS, JG, grid, thr):
                break
        n_vic = n_pop = 0
        gain = 0
        while S[S_W] and free + gain < need:
            i = WI[0, W_JOB]
            if JI[i, LIVE] != WI[0, W_SERIAL]:
                S[S_W] = _wpop(WF, WI, S[S_W], grid)  # ended or preempted
                continue
            if JF[i, NXT] <= t and JI[i, MOVED] != cid:  # (a key set in this call stands)
                _refresh(i, t, S, SF, JF, JI, JS, JG, grid, thr, WF,
                         WI, 0)
                _wsiftup(WF, WI, S[S_W], 0, grid)  # heapreplace
                continue
            if -WF[0, W_NKEY] <= limit:
                break
            _copy(WF, WI, 0, PPF, PPI, n_pop)
            n_pop += 1
            S[S_W] = _wpop(WF, WI, S[S_W], grid)
            if JI[i, MOVED] == cid:
                continue
            victims[n_vic] = i
            n_vic += 1
            gain += JG[i, J_GPUS]
        if free + gain < need:
            for r in range(n_pop):
                S[S_W] = _wpush_from(PPF, PPI, r, WF, WI, S[S_W], grid)
            break
        for r in range(n_pop):
            if JI[PPI[r, W_JOB], MOVED] == cid:
                S[S_W] = _wpush_from(PPF, PPI, r, WF, WI, S[S_W], grid)
        if need == 1:  # the head, before the victims join the queue
            _, _, _, S[S_Q] = _tpop(QF, QA, QB, S[S_Q])
        else:
            S[S_B0], S[S_B] = _delete(BK, BS, BJ, S[S_B0], S[S_B], 0)
        for v in range(n_vic):
            i = victims[v]
            JI[i, MOVED] = JI[i, GONE] = cid
            preempted[S[S_PRE]] = i
            S[S_PRE] += 1
            JI[i, LIVE] = 0
            # Its key as of its last checkpoint (its entry was refreshed on top).
            _enqueue(JF[i, KEY], i, S, QF, QA, QB, BK, BS, BJ, JG)
        free += gain - need
        _start(h, head_key, t, call, cid, S, SF, JF, JI, WF, WI, EF, EA, EB, JS, JG, grid,
               ran, n_gpus, overhead)
        free = _fill(free, t, call, cid, depth, S, SF, JF, JI, WF, WI, EF, EA, EB, QF, QA,
                     QB, BK, BS, BJ, JS, JG, grid, ran, n_gpus, overhead)
    return free


@_step
def _rank_row(y, i, k, JF, JI, YF, YI):
    """Row y of (YF, YI): eval k of job i's run, as ``_rank_less`` reads it."""
    YF[y, W_S], YF[y, W_OH], YF[y, W_P0], YF[y, W_D] = (
        JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D])
    YI[y, W_ORD], YI[y, W_JOB] = k, i
    YI[y, W_J0], YI[y, W_CALL], YI[y, W_ORDER] = JI[i, SEG_J0], JI[i, SEG_CALL], JI[i, SEG_ORDER]


@_step
def _rank_insert(y, r0, YF, YI, perm, grid):
    """Row y sorted into ``perm``'s positions r0 to y by insertion, after its equals
    (Python's sort is stable)."""
    x = y
    while x > r0 and _rank_less(YF, YI, y, perm[x - 1], grid):
        perm[x] = perm[x - 1]
        x -= 1
    perm[x] = y


# ---- Yields at checkpoints (Tiresias, LossAware: ``yields.yielder``) -------------------
# Running jobs' next evals in one index per GPU class (1, 2-3, 4-7, ...): the rows of
# KF2, KA2, KB2, with their sizes in CKS (``yields.class_indexes``).


@_step
def _loss_key(L, i, k):
    """``loss_drops.key_of``'s ``key``: LossAware's key for job i as of its eval k."""
    return -INF if k < 1 else _drop_key(L[i, 0], L[i, k - 1], L[i, k])


@_step
def _cls(g):
    """The GPU class of g GPUs (``loss_drops._classes``; 0 for g <= 1)."""
    c = 0
    while g > 1:
        g >>= 1
        c += 1
    return c


@_step
def _due(c, t, CKS, KF2):
    """Whether class c's index may hold an eval due at t (its lower bound is not later)."""
    return CKS[c, C_N] != 0 and KF2[c, _low(KF2[c])] <= t


@_step
def _hit_rows(t, call, cid, lo, hi, nf, after, r0, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2,
              KH, YF, YI, perm, JG, grid):
    """``yields.class_indexes``' ``hits`` of classes lo to hi - 1, each a row for ``_rank_less`` in
    YF, YI from row nf (not a job moved in this call; only one ranked after row ``after``,
    if that is not -1), sorted into ``perm`` from position r0; returns the rows' count."""
    for c in range(lo, hi):
        if not _due(c, t, CKS, KF2):
            continue
        nh, _ = _at(t, call, S, CKS[c], JF, JI, KF2[c], KA2[c], KB2[c], KN2[c], KH[c], HI, JG,
                    grid)
        for r in range(nh):
            i = HI[r, 0]
            if JI[i, MOVED] == cid:
                continue
            if nf == YF.shape[0] - 1:
                S[S_OVER] = 1  # (more hits than rows: the Python loop runs)
                return nf
            _rank_row(nf, i, HI[r, 1], JF, JI, YF, YI)
            if after >= 0 and not _rank_less(YF, YI, after, nf, grid):
                continue
            _rank_insert(nf, r0, YF, YI, perm, grid)
            nf += 1
    return nf


@_step
def _yield_class(free, t, margin, S, WF, QF, QA, QB, BK, BS, BJ, CKS, KF2, JG):
    """The GPU class from which ``_yields`` reads this call's checkpoints first: the
    smallest whose jobs' GPUs, with the free ones, fit the waiting head. -1 where it would
    find none to yield: no running key above the head's (Tiresias), or no eval due at t in
    that class or a larger one (most calls). Then ``_yields``, a call of 40 arguments, is
    not made."""
    head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
    if S[S_LV] == 1 and _none_above(head_key + margin, S, WF):
        return -1
    lo = _cls(JG[h, J_GPUS] - free)
    for c in range(lo, CKS.shape[0]):
        if _due(c, t, CKS, KF2):
            return lo
    return -1


@_helper(i8, i8, f8, i8, i8, i8, f8, *ST, *WH, *TH, I2, F2, I2, I2, I2, I2, I2, F1, I1, I1,
         F1, I1, I1, F2, I2, I1, I1, *IN, I1, i8, f8, F2)
def _yields(lo, free, t, call, cid, depth, margin, S, SF, JF, JI, WF, WI, EF, EA, EB, CKS,
            KF2, KA2, KB2, HI, KN2, KH, QF, QA, QB, BK, BS, BJ, YF, YI, perm, preempted,
            JS, JG, grid, thr, ran, n_gpus, overhead, L):
    """``yields.yielder``'s ``yields``: the jobs checkpointed in this call's batch, in the
    checkpoint loop's order, each yielding to the waiting head if its key there (its live
    key for Tiresias, its loss drop for LossAware) is worse by more than ``margin`` and the
    head fits in the free GPUs and its own; classes from ``lo`` (``_yield_class``), the
    smaller classes' checkpoints read only after a first yield."""
    levels, n_cls = S[S_LV] == 1, CKS.shape[0]
    nf = _hit_rows(t, call, cid, lo, n_cls, 0, -1, 0, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2,
                   KH, YF, YI, perm, JG, grid)
    r = 0
    while r < nf:
        y = perm[r]
        r += 1
        if S[S_Q] == 0 and S[S_B] == 0:
            break
        i = YI[y, W_JOB]
        if JI[i, LIVE] == 0 or JI[i, MOVED] == cid:
            continue
        head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
        if JG[h, J_GPUS] > free + JG[i, J_GPUS]:
            continue
        key = JF[i, KEY] if levels else _loss_key(L, i, YI[y, W_ORD])
        if not key > head_key + margin:
            continue
        if JF[i, NXT] <= t:
            # Its settlement reads its last eval (the spare last row, not kept).
            _refresh(i, t, S, SF, JF, JI, JS, JG, grid, thr, YF, YI, YF.shape[0] - 1)
        JI[i, MOVED] = JI[i, GONE] = cid
        preempted[S[S_PRE]] = i
        S[S_PRE] += 1
        JI[i, LIVE] = 0
        _enqueue(key, i, S, QF, QA, QB, BK, BS, BJ, JG)
        free = _fill(free + JG[i, J_GPUS], t, call, cid, depth, S, SF, JF, JI, WF, WI, EF,
                     EA, EB, QF, QA, QB, BK, BS, BJ, JS, JG, grid, ran, n_gpus, overhead)
        if lo:  # the smaller jobs' checkpoints ranked after this one
            nf = _hit_rows(t, call, cid, 0, lo, nf, y, r, S, CKS, JF, JI, KF2, KA2, KB2, HI,
                           KN2, KH, YF, YI, perm, JG, grid)
            lo = 0
    return free


@_helper(i8, f8, i8, I1, I2, F2, I2, F2, I2, I2, I2, I2, I2, I2, F1)
def _class_next(c, t, call, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid):
    """The time of class c's next eval after t, by a query of its wheel (``_at``)."""
    return _at(t, call, S, CKS[c], JF, JI, KF2[c], KA2[c], KB2[c], KN2[c], KH[c], HI, JG,
               grid)[1]


@_step
def _next_eval(t, call, lo, exact, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid):
    """``yields.class_indexes``' ``next_time`` from class lo. Inlined, with the wheel's
    query a call (``_class_next``) made only where the bound is not the answer."""
    nxt = INF
    for c in range(lo, CKS.shape[0]):
        low, m = KF2[c, _low(KF2[c])], CKS[c, C_MIN]  # (low: below every live entry)
        if CKS[c, C_N] == 0:
            tc = INF
        elif low > t and m >= 0 and KF2[c, m] == low and _runs(KA2[c, m], KB2[c, m], JF, JI):
            tc = low  # (the entry at the bound is live: the earliest, nothing due)
        elif exact or low <= t:
            tc = _class_next(c, t, call, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid)
        else:
            tc = low
        if tc < nxt:
            nxt = tc
    return nxt


@_helper(f8, i8, I1, I2, F2, I2, F2, I2, I2, I2, I2, I2, I2, F1)
def _next_any(t, call, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid):
    """The next eval of any running job (Tiresias' unsettled calls): ``_next_eval`` as a
    call, which leaves the other rules' loops smaller."""
    return _next_eval(t, call, 0, 1, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid)


@_step
def _loss_next(free, t, call, depth, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, QF, QA, QB,
               BK, BS, BJ, JG, grid):
    """``loss_drops.next_call``'s ``next_at``: the next eval of any running job when a fill
    would act, else of a job of at least the GPUs the head lacks (or a time before it).
    Inlined: as a call (its arrays passed) it was a tenth of LossAware's loop."""
    exact = _fills(free, depth, S, QF, QA, QB, BK, BS, BJ, JG)
    lo = 0
    if not exact:
        head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
        lo = _cls(JG[h, J_GPUS] - free)
    return _next_eval(t, call, lo, int(exact), S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG,
                      grid)


@_helper(f8, *ST, *WH, F2, I2, *TH, *IN, i8)
def _take_crossings(t, S, SF, JF, JI, WF, WI, FRF, FRI, CF, CA, CB, JS, JG,
                    grid, thr, n_gpus):
    """``levels.taker``'s ``take_crossings``: the level crossings due at t, each job's
    entry renewed with its new key; whether any was."""
    rose = False
    while S[S_CR] and CF[0] == t:
        _, i, _, S[S_CR] = _tpop(CF, CA, CB, S[S_CR])
        if JF[i, CROSS_T] != t or JI[i, LIVE] == 0 or JF[i, NXT] > t:
            continue  # (a run preempted or ended since, or a copy already handled)
        old = JF[i, KEY]
        _refresh(i, t, S, SF, JF, JI, JS, JG, grid, thr, FRF, FRI, 0)
        S[S_W] = _wpush_from(FRF, FRI, 0, WF, WI, S[S_W], grid)
        if old <= SF[F_EA_LIMIT] < JF[i, KEY]:
            S[S_EA_BOUND] += JG[i, J_GPUS]  # now above the last short count's limit
        _cross_next(i, JI[i, DONE] + 1, S, SF, JF, JI, CF, CA, CB, JG, grid, thr,
                    n_gpus)
        rose = True
    return rose


@_step
def _ran(S, SF, JF, JI, CF, CA, CB, CKS, KF2, KA2, KB2, KN2, KH, JG, grid, thr, ran, n_gpus):
    """Tiresias' and LossAware's steps for the runs a call started (``planned``'s
    ``on_run``), made after it: each run's first eval in its class's index, and for
    Tiresias its next level crossing. Nothing in the call reads either for a run it
    started (an eval due at once comes after the call); made in ``_start``, they cost
    every start, SRTF-Est's too, the arrays of both heaps."""
    for r in range(S[S_RAN]):
        i = ran[r]
        if S[S_LV] == 1:
            _cross_next(i, JI[i, SEG_J0], S, SF, JF, JI, CF, CA, CB, JG, grid, thr, n_gpus)
        c = _cls(JG[i, J_GPUS])
        _track(i, CKS[c], JF, JI, KF2[c], KA2[c], KB2[c], KN2[c], KH[c], JG, grid, n_gpus)
    S[S_RAN] = 0


@_step
def _end_events(t, free, S, EF, EA, EB, JF, JI, JG):
    """The end events at t; returns the free GPUs and whether a job ended."""
    changed = False
    while S[S_EV] and EF[0] == t:
        i = EA[0]
        S[S_EV] = _kpop(EF, EA, EB, S[S_EV])
        if JF[i, END_T] != t:
            continue  # a preempted segment's end, or a copy of one already handled
        JF[i, END_T] = JF[i, CROSS_T] = NAN
        JF[i, FINISH] = t
        JF[i, GPU_S] += JG[i, J_GPUS] * (t - JF[i, SEG_S])
        free += JG[i, J_GPUS]
        JI[i, LIVE] = 0
        changed = True
    return free, changed


@_step
def _arrive(ai, t, free, arrival, JG, JS, S, QF, QA, QB, BK, BS, BJ):
    """The arrivals at t, from job ``ai`` on: returns the next arrival, the job to start
    at once (-1: none; they joined the queue) and whether any arrived."""
    n = arrival.shape[0]
    if ai == n or arrival[ai] != t:
        return ai, -1, False
    if (S[S_Q] == 0 and S[S_B] == 0 and JG[ai, J_GPUS] <= free
            and (ai + 1 == n or arrival[ai + 1] != t)):
        # One arrival at an empty queue, and it fits: started without queueing.
        return ai + 1, ai, True
    while ai < n and arrival[ai] == t:
        _enqueue(JS[ai, J_AKEY], ai, S, QF, QA, QB, BK, BS, BJ, JG)
        ai += 1
    return ai, -1, True


@_step
def _settle(t, cid, S, JF, JI, EF, EA, EB, preempted, JG, grid, n_gpus):
    """The preemptions of call ``cid`` at t, if any (``planned._settle``)."""
    if S[S_PRE] == 0:
        return
    for r in range(S[S_PRE]):
        i = preempted[r]
        if JI[i, GONE] != cid:
            continue  # restarted in the same call: it never stopped
        s, oh, p0, d = JF[i, SEG_S], JF[i, SEG_OH], JF[i, SEG_P0], JF[i, SEG_D]
        x = t - s - oh
        p = p0 + (x if x > 0.0 else 0.0) / d  # max(0.0, x), as Python picks
        g = grid[JI[i, DONE] + 1]
        JF[i, PROG] = g if g < p else p  # min(p, g), as Python picks
        JF[i, GPU_S] += JG[i, J_GPUS] * (t - s)
        JF[i, END_T] = JF[i, CROSS_T] = NAN
        JI[i, N_PRE] += 1
    S[S_PRE] = 0
    if S[S_EV] > 64 + 2 * n_gpus:
        # Drop preempted segments' ends (they would stay until their time).
        S[S_EV] = _drop_stale(EF, EA, EB, S[S_EV], JF, END_T)
        _kheapify(EF, EA, EB, S[S_EV])


@_step
def _clear(JF, JI, S, rule):
    """The per-job floats and ints as a job that has not arrived has them; the key rule."""
    S[S_LV] = rule
    for i in range(JF.shape[0]):  # (numba's slice assignment costs seconds to compile)
        JF[i, START] = JF[i, FINISH] = JF[i, END_T] = JF[i, CROSS_T] = NAN
        JF[i, NXT] = INF
        JI[i, DONE] = -1

@_step
def _pack(JS, JG, dur, est, akey, gpus, end_eval):
    """The per-job inputs into JS and JG; returns the most GPUs a job asks for (numba's
    ``gpus.max()`` took 17 ms on 82k jobs)."""
    most = 0
    for i in range(JS.shape[0]):
        JS[i, J_DUR], JS[i, J_EST], JS[i, J_AKEY] = dur[i], est[i], akey[i]
        JG[i, J_GPUS], JG[i, J_END] = gpus[i], end_eval[i]
        most = max(most, gpus[i])
    return most


@_step
def _next_t(S, EF, CF, arrival, ai, t_any):
    """The loop's next instant: an end, an arrival, a level crossing or a call an unsettled
    state asked for (INF: none)."""
    t = EF[0] if S[S_EV] else INF
    if ai < arrival.shape[0] and arrival[ai] < t:
        t = arrival[ai]
    if S[S_CR] and CF[0] < t:
        t = CF[0]
    return t_any if t_any < t else t


@_step
def _events(t, t_any, free, ai, arrival, S, SF, JF, JI, WF, WI, FRF, FRI, EF, EA, EB, CF, CA,
            CB, QF, QA, QB, BK, BS, BJ, JS, JG, grid, thr, n_gpus):
    """The instant's ends, level crossings and arrivals: returns the free GPUs, the next
    arrival, the job to start at once (-1: none) and whether a call is due."""
    changed = t_any == t
    free, ended = _end_events(t, free, S, EF, EA, EB, JF, JI, JG)
    if (S[S_CR] and CF[0] == t
            and _take_crossings(t, S, SF, JF, JI, WF, WI, FRF, FRI, CF, CA, CB, JS, JG, grid,
                                thr, n_gpus)
            and (S[S_Q] or S[S_B])):
        changed = True  # a key rose: the victims may differ
    ai, alone, arrived = _arrive(ai, t, free, arrival, JG, JS, S, QF, QA, QB, BK, BS, BJ)
    return free, ai, alone, changed or ended or arrived


@_step
def _call(alone, free, t, call, cid, M, S, SF, JF, JI, WF, WI, EF, EA, EB, CF, CA, CB, Q, Y, V,
          PPF, PPI, FRF, FRI, stack, JS, JG, grid, thr):
    """One scheduling call (``planned._decider``'s ``decide``, or the lone arrival's
    start): returns the free GPUs and the time of the call an unsettled state asks for
    (INF: none). The loop's other arrays come in tuples: an inlined step takes at most 30
    arguments (past that Python passes them as ``*args``)."""
    depth, margin, levels, n_gpus, overhead, preempts, loss = M
    QF, QA, QB, BK, BS, BJ = Q
    HI, KN2, KH, YF, YI, perm, CKS, KF2, KA2, KB2, L = Y
    victims, preempted, ran = V
    if alone >= 0:
        free -= JG[alone, J_GPUS]
        _start(alone, JS[alone, J_AKEY], t, call, cid, S, SF, JF, JI, WF, WI, EF, EA,
               EB, JS, JG, grid, ran, n_gpus, overhead)
    elif free > 0 and (S[S_Q] or S[S_B]):
        free = _fill(free, t, call, cid, depth, S, SF, JF, JI, WF, WI, EF, EA, EB, QF,
                     QA, QB, BK, BS, BJ, JS, JG, grid, ran, n_gpus, overhead)
    lo = -1
    if (levels or loss) and (S[S_Q] or S[S_B]):
        lo = _yield_class(free, t, margin, S, WF, QF, QA, QB, BK, BS, BJ, CKS, KF2, JG)
    if lo >= 0:
        free = _yields(lo, free, t, call, cid, depth, margin, S, SF, JF, JI, WF, WI, EF, EA,
                       EB, CKS, KF2, KA2, KB2, HI, KN2, KH, QF, QA, QB, BK, BS, BJ, YF, YI,
                       perm, preempted, JS, JG, grid, thr, ran, n_gpus, overhead, L)
    if preempts and (S[S_Q] or S[S_B]):
        head_key, h = _head(S, QF, QA, QB, BK, BS, BJ)
        if _may_preempt(JG[h, J_GPUS], free, head_key + margin, S, SF, WF):
            free = _preempt_for_head(free, t, call, cid, depth, margin, S, SF, JF, JI,
                                     WF, WI, EF, EA, EB, QF, QA, QB, BK, BS, BJ, PPF,
                                     PPI, FRF, FRI, stack, victims, preempted, JS, JG,
                                     grid, thr, ran, n_gpus, overhead)
    _settle(t, cid, S, JF, JI, EF, EA, EB, preempted, JG, grid, n_gpus)
    if levels or loss:
        _ran(S, SF, JF, JI, CF, CA, CB, CKS, KF2, KA2, KB2, KN2, KH, JG, grid, thr, ran,
             n_gpus)
    if loss and (S[S_Q] or S[S_B]):
        return free, _loss_next(free, t, call, depth, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2,
                                KH, QF, QA, QB, BK, BS, BJ, JG, grid)
    if (levels and (S[S_Q] or S[S_B])
            and _unsettled(free, depth, margin, S, SF, JF, JI, WF, WI, QF, QA, QB, BK, BS,
                           BJ, stack, JG)):
        return free, _next_any(t, call, S, CKS, JF, JI, KF2, KA2, KB2, HI, KN2, KH, JG, grid)
    return free, INF


@_step
def _short(S, EF, WF, CF, tl_t, tl_n, n_gpus):
    """Which arrays lack room for what one instant can push (its crossings, then one
    call): 1 the ends, 2 the victims' heap, 4 the crossings, 8 the timeline (0: none)."""
    return ((S[S_EV] + 2 * n_gpus + 2 > EF.shape[0] - 1)
            | (S[S_W] + 4 * n_gpus + 2 > WF.shape[0] - 1) << 1
            | (S[S_CR] + 4 * n_gpus + 2 > CF.shape[0] - 1) << 2 | (tl_n == tl_t.shape[0]) << 3)


# The loop's own scalars, kept in arrays (P ints, PF floats) between its passes.
P_FREE, P_AI, P_LEFT, P_CALL, P_CID, P_TL = range(6)
PF_T_CALL, PF_T_ANY = range(2)
_b = types.boolean


@_helper(I1, F1, F1, F1, F1, F2, F2, I2, F2, I2, I1, F1, F1, I1, I1, F1, I1, I1, I1, I1, I1,
         *TH, *WH, F2, I2, F2, I2, I1, *TH, I2, I2, I2, F2, I2, I1, F2, I2, I2, I2, F1, I1, i8,
         f8, _b, i8, f8, _b, _b, _b)
def _loop(P, PF, arrival, thr, grid, L, JS, JG, JF, JI, S, SF, QF, QA, QB, BK, BS, BJ,
          victims, preempted, ran, EF, EA, EB, WF, WI, PPF, PPI, FRF, FRI, stack, CF, CA, CB,
          HI, KN2, KH, YF, YI, perm, KF2, KA2, KB2, CKS, tl_t, tl_used, depth, margin,
          levels, n_gpus, overhead, preempts, loss, record_timeline):
    """``run_kernel``'s loop, from the state in P and PF, until it ends (returns 0;
    ``P_LEFT`` set if jobs were left waiting) or arrays must grow before the next instant
    (returns ``_short``'s mask: ``run_kernel`` grows them and calls again). Apart so that it
    runs without reference counts (``_helper``), which only the growing needs."""
    M, Q = (depth, margin, levels, n_gpus, overhead, preempts, loss), (QF, QA, QB, BK, BS, BJ)
    Y, V = (HI, KN2, KH, YF, YI, perm, CKS, KF2, KA2, KB2, L), (victims, preempted, ran)
    free, ai, call, cid, tl_n = P[P_FREE], P[P_AI], P[P_CALL], P[P_CID], P[P_TL]
    t_call, t_any = PF[PF_T_CALL], PF[PF_T_ANY]
    n, short = arrival.shape[0], 0
    while True:
        t = _next_t(S, EF, CF, arrival, ai, t_any)
        if t == INF:
            break
        short = _short(S, EF, WF, CF, tl_t, tl_n, n_gpus)
        if short:
            break
        free, ai, alone, changed = _events(t, t_any, free, ai, arrival, S, SF, JF, JI, WF, WI,
                                           FRF, FRI, EF, EA, EB, CF, CA, CB, QF, QA, QB, BK,
                                           BS, BJ, JS, JG, grid, thr, n_gpus)
        if not changed:
            continue
        call, t_call, cid = (call + 1 if t == t_call else 0), t, cid + 1
        free, t_any = _call(alone, free, t, call, cid, M, S, SF, JF, JI, WF, WI, EF, EA, EB, CF,
                            CA, CB, Q, Y, V, PPF, PPI, FRF, FRI, stack, JS, JG, grid, thr)
        if record_timeline and n_gpus - free != tl_used[tl_n - 1]:
            tl_n = _mark(tl_t, tl_used, tl_n, t, n_gpus - free)
        if S[S_OVER] or (free == n_gpus and ai >= n and (S[S_Q] or S[S_B])):
            # (-2: the arrays are not to be read)
            P[P_LEFT] = -2 if S[S_OVER] else S[S_Q] + S[S_B]
            break
    P[P_FREE], P[P_AI], P[P_CALL], P[P_CID], P[P_TL] = free, ai, call, cid, tl_n
    PF[PF_T_CALL], PF[PF_T_ANY] = t_call, t_any
    return short


@njit(cache=True)
def run_kernel(arrival, dur, gpus, est, akey, thr, rule, end_eval, grid, n_gpus, depth,
               margin, overhead, record_timeline, table):
    """``planned.run``'s loop by key rule ``rule`` (0: SRTF-Est's remaining time; 1: Tiresias'
    levels, thresholds ``thr``; 2: SJF-Est's fixed key; 3: LossAware's, from the loss
    ``table``; ``akey``: arriving jobs' keys): start_s, finish_s, gpu_s, n_preemptions, the
    timeline and the jobs left waiting on an idle cluster (-1: none; -2: the twin gave up,
    too many evals at one instant)."""
    n = arrival.shape[0]
    JS, JG = np.empty((n, 3)), np.empty((n, 2), np.int64)
    most = _pack(JS, JG, dur, est, akey, gpus, end_eval)
    n_cls = _cls(most) + 1 if rule & 1 else 1
    JF, JI = np.zeros((n, 12)), np.zeros((n, 9), np.int64)
    S, SF = np.zeros(14, np.int64), np.full(1, INF)  # (SF: ea_limit)
    _clear(JF, JI, S, rule)
    QF, QA, QB = np.empty(n + 1), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    BK, BS, BJ = np.empty(2 * n + 2), np.empty(2 * n + 2, np.int64), np.empty(2 * n + 2, np.int64)
    S[S_B0] = n + 1  # (room to grow either way)
    vp = np.empty((3, 2 * n_gpus + 2), np.int64)  # (a call starts at most 2 n_gpus runs)
    ce, cw = 64 + 4 * n_gpus + 1, 128 + 8 * n_gpus + 1
    EF, EA, EB = np.empty(ce), np.empty(ce, np.int64), np.zeros(ce, np.int64)
    WF, WI = np.empty((cw, 6)), np.empty((cw, 8), np.int64)
    PPF, PPI = np.empty((cw, 6)), np.empty((cw, 8), np.int64)
    FRF, FRI, stack = np.empty((cw, 6)), np.empty((cw, 8), np.int64), np.empty(cw, np.int64)
    # Tiresias: crossings; both: a call's hits (at most the runs in it, unless evals of a
    # run fall at one time), the evals' index per class (compacted past 64 + 4 n_gpus).
    CF, CA, CB = np.empty(cw), np.empty(cw, np.int64), np.zeros(cw, np.int64)
    HI = np.empty((cw, 2), np.int64)
    YF, YI, perm = np.empty((cw + 1, 6)), np.empty((cw + 1, 8), np.int64), np.empty(cw, np.int64)
    KF2, K2I, KH, CKS = numba_wheel.new(n_cls, cw, numba_wheel.width_for(arrival, dur))
    tl_t, tl_used = np.zeros(1024), np.zeros(1024, np.int64)
    P, PF = np.zeros(6, np.int64), np.array([NAN, INF])
    P[P_FREE], P[P_LEFT], P[P_TL] = n_gpus, -1, 1
    while True:
        short = _loop(P, PF, arrival, thr, grid, table, JS, JG, JF, JI, S, SF, QF, QA, QB, BK,
                      BS, BJ, vp[0], vp[1], vp[2], EF, EA, EB, WF, WI, PPF, PPI, FRF, FRI, stack,
                      CF, CA, CB, HI, K2I[2], KH, YF, YI, perm, KF2, K2I[0], K2I[1], CKS, tl_t,
                      tl_used, depth, margin, rule == 1, n_gpus, overhead, rule < 2, rule == 3,
                      record_timeline)
        if short & 1:
            size = S[S_EV] + 4 * n_gpus + 2
            EF, EA, EB = _grow(EF, size), _grow(EA, size), _grow(EB, size)
        if short & 2:
            size = S[S_W] + 8 * n_gpus + 2
            WF, WI, PPF, PPI = _grow(WF, size), _grow(WI, size), _grow(PPF, size), _grow(PPI, size)
            FRF, FRI, stack = _grow(FRF, size), _grow(FRI, size), _grow(stack, size)
        if short & 4:
            size = S[S_CR] + 8 * n_gpus + 2
            CF, CA, CB = _grow(CF, size), _grow(CA, size), _grow(CB, size)
        if short & 8:
            tl_t, tl_used = _grow(tl_t, P[P_TL] + 1), _grow(tl_used, P[P_TL] + 1)
        if not short:
            break
    tl_n = P[P_TL]
    return (JF[:, START].copy(), JF[:, FINISH].copy(), JF[:, GPU_S].copy(),
            JI[:, N_PRE].copy(), tl_t[:tl_n].copy(), tl_used[:tl_n].copy(), P[P_LEFT])
