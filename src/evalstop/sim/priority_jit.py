"""The numba twin of the checkpoint loop (``engine._run``) for a plain priority base
(LossAware, Tiresias, SRTF-Est or SJF-Est, alone or under the plain overlay) with planned
stops.

The same loop, compiled: every eval is an event on a heap of (time, seq, job), taken at
the time, in the order and with the float expressions of ``engine._run``; and
``PriorityScheduler``'s calls (``submit``, ``on_eval``, ``on_end``, ``schedule`` with
``_fill``, ``_yield_at_checkpoints`` and ``_preempt_for_head``) are made at the same
points with the same arguments. Its heaps (the wait queue (key, seq, job), the victims'
max-heap (-key, version, job), the events) are totally ordered by unique sequence
numbers, so they pop in the same order as ``heapq`` on the Python tuples; and
``_enough_above`` reads only whether enough GPUs sit above a limit, which the heap's
layout does not change. The victims' heap is pushed to only when a running key rises
above the job's entry there (``_push_victim``), as in ``PriorityScheduler``. The
engine's version check is kept as each job's live event's seq (-1: none). A call after only checkpoints is skipped when ``_acts`` says it would do
nothing, as ``PriorityScheduler.schedule`` answers it at once. No fastmath: each float
comes from the Python expression, in its order.

Keys (``PriorityScheduler.twin_key``): est x (1 - progress) (SRTF-Est), Tiresias' level
x 2**32 + arrival (level by ``bisect_right`` on attained GPU-seconds), a (job, evals
seen) LossAware's latest loss drop (``_loss_drop``, from the loss rows), or est (SJF-Est).

SJF-Est with planned stops runs on the planned loop's twin (``planned_jit``); this one
runs it only where it is asked at evals. ``tests/test_sim_priority_jit.py``
compares every field of the result with the checkpoint loop's. A change to ``engine._run``
or ``PriorityScheduler`` must be made here too. Only ``run_kernel`` is called from outside
(by ``evalstop.sim.priority_twin``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evalstop.sim.numba_arrays import (
    F1,
    F2,
    I1,
    I2,
    _borrow,
    _grow,
    _helper,
    _mark,
    _step,
    _theapify,
    _tpop,
    _tpush,
    _tsiftup,
    f8,
    i8,
)

INF = np.inf
NAN = np.nan
KEY_REMAINING, KEY_LEVELS, KEY_LOSS_DROP, KEY_FIXED = 0, 1, 2, 3

# Per-job floats (JF) and ints (JI): the engine's lists and the views' fields, then the
# scheduler's ``_running`` entry (RKEY, RVER: the version, -1 when not in it).
START, FINISH, GPU_S, SEG_S, SEG_OH, SEG_P0, PROG, ATT, RKEY, WKEY = range(10)
NEXT, EVSEQ, RUN, NPRE, RVER, MOVED, STARTING, KEPT, NSEEN, WENT = range(10)
# Per-job inputs: floats (JS) and ints (JG).
DUR, EST, ARR = range(3)
GPUS, END = range(2)
# Scalars (S): heap sizes, the scheduler's counter, len(_running), and the lengths of
# ``start``, ``preempt`` and ``_checkpointed``; then what a call after only checkpoints
# needs (``PriorityScheduler._acts``): whether an end or arrival came since the last call,
# the GPUs that call left free, whether a checkpoint raised a running key, and whether a
# fill or the victims' search would act (-1: not yet known since the last call).
S_EV, S_Q, S_W, S_SEQ, S_NRUN, S_NST, S_NPR, S_NCK = range(8)
S_DIRTY, S_FREE, S_ROSE, S_FILLS, S_VICTIMS = range(8, 13)
# Configuration (C): the key rule, preempt_on_arrival, preempt_at_checkpoint, depth.
C_KIND, C_POA, C_PAC, C_DEPTH = range(4)


@_step
def _loss_drop(L, i, c):
    """``LossAware.key`` once job i has reported its first ``c`` losses (row i of ``L``):
    the same IEEE operations, in the same order, as on Python's floats."""
    if c < 2:
        return -INF
    first = L[i, 0]
    if not (first == first and abs(first) != INF) or first == 0.0:  # not isfinite, or 0
        return -INF
    drop = (L[i, c - 2] - L[i, c - 1]) / abs(first)
    return -drop if drop == drop and abs(drop) != INF else 0.0


@_step
def _key(i, C, JF, JI, JS, thr, KT):
    """``key(job, now)`` of the base, from the job's view as it stands."""
    kind = C[C_KIND]
    if kind == KEY_REMAINING:
        return JS[i, EST] * (1.0 - JF[i, PROG])
    if kind == KEY_LEVELS:
        x = JF[i, ATT]
        lo, hi = 0, thr.shape[0]
        while lo < hi:  # bisect_right
            mid = (lo + hi) // 2
            if x < thr[mid]:
                hi = mid
            else:
                lo = mid + 1
        return lo * 4294967296.0 + JS[i, ARR]
    if kind == KEY_FIXED:
        return JS[i, EST]
    return _loss_drop(KT, i, JI[i, NSEEN])  # (KT: the loss rows)


@_step
def _set_running_key(i, key, C, S, JF, JI, WF, WA, WB):
    S[S_SEQ] += 1
    version = S[S_SEQ]
    if JI[i, RVER] < 0 or key > JF[i, RKEY]:
        S[S_ROSE] = 1
    if JI[i, RVER] < 0:
        S[S_NRUN] += 1
        JI[i, WENT] = -1  # its entries in the victims' heap are of an earlier run
    JI[i, RVER] = version
    JF[i, RKEY] = key
    if C[C_POA] and (JI[i, WENT] < 0 or key > JF[i, WKEY]):
        _push_victim(i, S, JF, JI, WF, WA, WB)


@_step
def _holds(i, version, JI):
    """Whether the victims' heap entry of ``version`` is job i's entry (not stale)."""
    return JI[i, RVER] >= 0 and JI[i, WENT] == version


@_step
def _push_victim(i, S, JF, JI, WF, WA, WB):
    """Job i's running key and version into the victims' heap (``_worst``), as
    ``PriorityScheduler._push_worst``: only when the key rose above the job's entry
    (``WENT``, ``WKEY``); an entry whose key is not below the job's key, with an older
    version, sorts before the job's own entry, so it bounds it, and the search refreshes
    it when it reaches the top (``_live_top``)."""
    S[S_W] = _tpush(WF, WA, WB, S[S_W], -JF[i, RKEY], JI[i, RVER], i)
    JI[i, WENT], JF[i, WKEY] = JI[i, RVER], JF[i, RKEY]
    if S[S_W] > 64 + 4 * S[S_NRUN]:  # _compact
        k = 0
        for r in range(S[S_W]):
            if _holds(WB[r], WA[r], JI):
                WF[k], WA[k], WB[k] = WF[r], WA[r], WB[r]
                k += 1
        S[S_W] = k
        _theapify(WF, WA, WB, k)


@_helper(i8, f8, i8, I1, I1, F2, I2, F2, F1, F2, F1, I1, I1, I1)
def _started(i, key, cid, C, S, JF, JI, JS, thr, KT, WF, WA, WB, starts):
    if JI[i, NPRE]:  # the wait key predates the progress made before preemption
        key = _key(i, C, JF, JI, JS, thr, KT)
    starts[S[S_NST]] = i
    S[S_NST] += 1
    JI[i, MOVED] = cid
    if C[C_POA] or C[C_PAC]:
        _set_running_key(i, key, C, S, JF, JI, WF, WA, WB)
    else:
        if JI[i, RVER] < 0:
            S[S_NRUN] += 1
        JI[i, RVER] = 0
        JF[i, RKEY] = key


@_helper(i8, i8, I1, I1, F2, I2, F2, I1, F1, F2, F1, I1, I1, I1, I1)
def _preempt(i, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, preempts):
    JI[i, MOVED] = cid
    if JI[i, RVER] >= 0:
        S[S_NRUN] -= 1
        JI[i, RVER] = -1
    preempts[S[S_NPR]] = i
    S[S_NPR] += 1
    key = _key(i, C, JF, JI, JS, thr, KT)  # as it waits: progress as of its last checkpoint
    S[S_SEQ] += 1
    S[S_Q] = _tpush(QF, QA, QB, S[S_Q], key, S[S_SEQ], i)
    WCNT[G[i]] += 1


@_helper(i8, I1, I1, I1, F1, I1, I1, F1, I1, I1)
def _one_fits(free, C, S, G, QF, QA, QB, AF, AA, AB):
    """Whether one of the first ``depth`` waiting jobs in key order asks for at most
    ``free`` GPUs: the queue read in place, in key order, through a small heap of the
    frontier's (key, seq, position in the queue)."""
    n = S[S_Q]
    m = _tpush(AF, AA, AB, 0, QF[0], QA[0], 0)
    looked = 0
    while m and looked < C[C_DEPTH]:
        _, _, k, m = _tpop(AF, AA, AB, m)
        looked += 1
        if G[QB[k]] <= free:
            return True
        c = 2 * k + 1
        if c < n:
            m = _tpush(AF, AA, AB, m, QF[c], QA[c], c)
            if c + 1 < n:
                m = _tpush(AF, AA, AB, m, QF[c + 1], QA[c + 1], c + 1)
    return False


@_helper(i8, i8, I1, I1, F2, I2, F2, I1, F1, F2, F1, I1, I1, I1, F1, I1, I1, F1, I1, I1, I1)
def _fill(free, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA, WB, SKF, SKA, SKB,
          starts):
    if free <= 0 or S[S_Q] == 0:
        return free
    g = 1
    while g <= free and WCNT[g] == 0:
        g += 1
    if g > free or not _one_fits(free, C, S, G, QF, QA, QB, SKF, SKA, SKB):
        # No waiting job that the loop below would look at fits: it would pop them and
        # push them back, which leaves the queue's entries, and so its order, as they were.
        return free
    n_skip = 0
    looked = 0
    while S[S_Q] and looked < C[C_DEPTH] and free > 0:
        key, s, i, S[S_Q] = _tpop(QF, QA, QB, S[S_Q])
        looked += 1
        if G[i] <= free:
            free -= G[i]
            WCNT[G[i]] -= 1
            _started(i, key, cid, C, S, JF, JI, JS, thr, KT, WF, WA, WB, starts)
        else:
            SKF[n_skip], SKA[n_skip], SKB[n_skip] = key, s, i
            n_skip += 1
    for r in range(n_skip):
        S[S_Q] = _tpush(QF, QA, QB, S[S_Q], SKF[r], SKA[r], SKB[r])
    return free


@_helper(f8, i8, i8, I1, F2, I2, I1, F1, I1, I1, I1)
def _enough_above(limit, short, cid, S, JF, JI, G, WF, WA, WB, stack):
    """``PriorityScheduler._enough_above`` on the victims' heap as the twin keeps it: a
    job counts at its entry (``WENT``) by its running key; an entry's key bounds its
    subtree's running keys."""
    n = S[S_W]
    top = 0
    if n:
        stack[0] = 0
        top = 1
    while top:
        top -= 1
        k = stack[top]
        if -WF[k] <= limit:
            continue
        i = WB[k]
        if (_holds(i, WA[k], JI) and JF[i, RKEY] > limit and JI[i, RUN] != 0
                and JI[i, MOVED] != cid):
            short -= G[i]
            if short <= 0:
                return True
        k = 2 * k + 1
        if k < n:
            stack[top] = k
            top += 1
            if k + 1 < n:
                stack[top] = k + 1
                top += 1
    return False


@_helper(i8, i8, f8, I1, I1, F2, I2, F2, I1, F1, F2, F1, I1, I1, I1, F1, I1, I1, F1, I1, I1,
         F1, I1, I1, I1, I1, I1, I1)
def _preempt_for_head(free, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF,
                      WA, WB, SKF, SKA, SKB, PF, PA, PB, PV, stack, starts, preempts):
    rounds = 0
    while S[S_Q] and rounds < C[C_DEPTH]:
        rounds += 1
        head_key, h = QF[0], QB[0]
        need = G[h]
        if need <= free:
            free = _fill(free, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA,
                         WB, SKF, SKA, SKB, starts)
            continue
        if need - free > 1 and not _enough_above(head_key + margin, need - free, cid, S, JF,
                                                 JI, G, WF, WA, WB, stack):
            break
        n_pop = gain = 0
        while S[S_W] and free + gain < need:
            nkey, version, i = WF[0], WA[0], WB[0]
            if not _holds(i, version, JI):
                _, _, _, S[S_W] = _tpop(WF, WA, WB, S[S_W])  # stale
                continue
            if JI[i, RVER] != version:  # its key fell since: the scheduler's entry for it
                _, _, _, S[S_W] = _tpop(WF, WA, WB, S[S_W])
                _push_victim(i, S, JF, JI, WF, WA, WB)
                continue
            if -nkey <= head_key + margin:
                break
            PF[n_pop], PA[n_pop], PB[n_pop], S[S_W] = _tpop(WF, WA, WB, S[S_W])
            victim = JI[i, RUN] != 0 and JI[i, MOVED] != cid
            PV[n_pop] = 1 if victim else 0
            n_pop += 1
            if victim:
                gain += G[i]
        enough = free + gain >= need
        for r in range(n_pop):
            if not PV[r] or not enough:
                S[S_W] = _tpush(WF, WA, WB, S[S_W], PF[r], PA[r], PB[r])
        if not enough:
            break
        _, _, _, S[S_Q] = _tpop(QF, QA, QB, S[S_Q])  # the head, before the victims queue
        WCNT[need] -= 1
        for r in range(n_pop):
            if PV[r]:
                _preempt(PB[r], cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT,
                         preempts)
        free += gain - need
        _started(h, head_key, cid, C, S, JF, JI, JS, thr, KT, WF, WA, WB, starts)
        free = _fill(free, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA, WB,
                     SKF, SKA, SKB, starts)
    return free


@_helper(i8, i8, f8, I1, I1, F2, I2, F2, I1, F1, F2, F1, I1, I1, I1, F1, I1, I1, F1, I1, I1,
         I1, I1, I1)
def _yield_at_checkpoints(free, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT,
                          WF, WA, WB, SKF, SKA, SKB, CK, starts, preempts):
    for r in range(S[S_NCK]):
        i = CK[r]
        if S[S_Q] == 0 or JI[i, RVER] < 0 or JI[i, RUN] == 0 or JI[i, MOVED] == cid:
            continue
        head_key, h = QF[0], QB[0]
        if JF[i, RKEY] > head_key + margin and G[h] <= free + G[i]:
            _preempt(i, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, preempts)
            free += G[i]
            free = _fill(free, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA,
                         WB, SKF, SKA, SKB, starts)
    S[S_NCK] = 0
    return free


@_step
def _acts(free, cid, margin, C, S, JF, JI, G, WCNT, QF, QA, QB, WF, WA, WB, SKF, SKA, SKB, CK,
          stack):
    """Whether the call at this instant (``cid``) could start or preempt a job: always
    after an end, an arrival or a change of free GPUs; after only checkpoints,
    ``PriorityScheduler._acts``. Whether a fill would start one is read in place here
    (``_one_fits``), not from the last fill."""
    if S[S_DIRTY] or free != S[S_FREE]:
        return True
    if S[S_Q] == 0:
        return False
    head_key, h = QF[0], QB[0]
    limit = head_key + margin
    if C[C_PAC]:
        for r in range(S[S_NCK]):
            i = CK[r]
            if (JI[i, RVER] >= 0 and JI[i, RUN] != 0 and JF[i, RKEY] > limit
                    and G[h] <= free + G[i]):
                return True
    if S[S_FILLS] < 0:
        g = 1
        while g <= free and WCNT[g] == 0:
            g += 1
        fits = g <= free and _one_fits(free, C, S, G, QF, QA, QB, SKF, SKA, SKB)
        S[S_FILLS] = 1 if fits else 0
    if S[S_FILLS]:
        return True
    if not C[C_POA]:
        return False
    if S[S_ROSE] or G[h] <= free:
        return True
    if S[S_VICTIMS] < 0:
        S[S_VICTIMS] = 1 if _enough_above(limit, G[h] - free, cid, S, JF, JI, G, WF, WA, WB,
                                          stack) else 0
    return S[S_VICTIMS] != 0


@_step
def _init_jobs(dur, est, arrival, JS, JF, JI):
    """The per-job inputs, and the per-job state of a job that has not arrived."""
    for i in range(JS.shape[0]):  # (numba's slice assignment costs seconds to compile)
        JS[i, DUR], JS[i, EST], JS[i, ARR] = dur[i], est[i], arrival[i]
        JF[i, START] = JF[i, FINISH] = NAN
        JI[i, EVSEQ] = JI[i, RVER] = -1


@_step
def _eval(t, free, seq, changed, resched, C, S, JF, JI, JS, G, thr, KT, grid, end_eval, EF, EA,
          EB, WF, WA, WB, CK):
    """The eval on top of the events, at t (``CK`` with room for one more): its
    checkpoint, and the completion or stop it brings. Returns the free GPUs, the event
    counter and whether the instant asks for a scheduling decision."""
    # The top is popped, or replaced by the job's next eval (heapreplace): the heap holds
    # the same entries as after a pop and a push, so it pops in the same order.
    sq, i = EA[0], EB[0]
    if JI[i, EVSEQ] != sq:
        _, _, _, S[S_EV] = _tpop(EF, EA, EB, S[S_EV])
        return free, seq, changed
    j = JI[i, NEXT]
    JF[i, PROG] = grid[j]
    JF[i, ATT] = JF[i, GPU_S] + G[i] * (t - JF[i, SEG_S])
    JI[i, NSEEN] = j + 1
    if C[C_POA] or C[C_PAC]:  # the base's on_eval
        _set_running_key(i, _key(i, C, JF, JI, JS, thr, KT), C, S, JF, JI, WF, WA, WB)
    if C[C_PAC]:
        CK[S[S_NCK]] = i
        S[S_NCK] += 1
    if j == end_eval[i]:  # its planned stop, or its last eval
        _, _, _, S[S_EV] = _tpop(EF, EA, EB, S[S_EV])
        JF[i, FINISH] = t
        JF[i, GPU_S] += G[i] * (t - JF[i, SEG_S])
        JI[i, EVSEQ] = -1
        JI[i, RUN] = 0
        S[S_DIRTY] = 1
        if JI[i, RVER] >= 0:  # on_end
            S[S_NRUN] -= 1
            JI[i, RVER] = -1
        return free + G[i], seq, True
    JI[i, NEXT] = j + 1
    seq += 1
    te = JF[i, SEG_S] + JF[i, SEG_OH] + (grid[j + 1] - JF[i, SEG_P0]) * JS[i, DUR]
    EF[0], EA[0], EB[0] = te, seq, i
    _tsiftup(EF, EA, EB, S[S_EV], 0)
    JI[i, EVSEQ] = seq
    return free, seq, changed or resched


@_step
def _arrive(ai, t, arrival, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT):
    """The arrivals at t, from job ``ai`` on, join the queue: returns the next arrival."""
    n = arrival.shape[0]
    while ai < n and arrival[ai] == t:
        S[S_SEQ] += 1
        S[S_Q] = _tpush(QF, QA, QB, S[S_Q], _key(ai, C, JF, JI, JS, thr, KT), S[S_SEQ], ai)
        WCNT[G[ai]] += 1
        S[S_DIRTY] = 1
        ai += 1
    return ai


@_step
def _decide(free, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA, WB, SKF,
            SKA, SKB, PF, PA, PB, PV, stack, CK, starts, preempts):
    """``schedule`` on ``free`` GPUs: the jobs to start and to preempt, into ``starts`` and
    ``preempts`` (the engine applies them; the GPUs they leave free are not kept)."""
    S[S_NST] = S[S_NPR] = 0
    f = _fill(free, cid, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA, WB, SKF, SKA,
              SKB, starts)
    if S[S_Q] and C[C_PAC] and S[S_NCK]:
        f = _yield_at_checkpoints(f, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB,
                                  WCNT, WF, WA, WB, SKF, SKA, SKB, CK, starts, preempts)
    elif S[S_NCK]:
        S[S_NCK] = 0
    if S[S_Q] and C[C_POA]:
        _preempt_for_head(f, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT,
                          WF, WA, WB, SKF, SKA, SKB, PF, PA, PB, PV, stack, starts, preempts)


@_step
def _apply(t, cid, free, seq, overhead, S, JF, JI, JS, G, grid, EF, EA, EB, starts, preempts):
    """The engine's application of the decision at t: the preempted jobs stop (at their
    progress as of t, up to their next eval), then the started jobs start, each with its
    next eval pushed. Returns the free GPUs and the event counter."""
    for r in range(S[S_NST]):
        JI[starts[r], STARTING] = cid
    for r in range(S[S_NPR]):
        i = preempts[r]
        if JI[i, STARTING] == cid:  # preempted and restarted at once: it keeps running
            JI[i, STARTING] = 0
            JI[i, KEPT] = cid
            continue
        x = t - JF[i, SEG_S] - JF[i, SEG_OH]
        p = JF[i, SEG_P0] + (x if x > 0.0 else 0.0) / JS[i, DUR]  # max(0.0, x)
        g = grid[JI[i, NEXT]]
        JF[i, PROG] = g if g < p else p  # min(p, g), as Python picks
        JF[i, GPU_S] += G[i] * (t - JF[i, SEG_S])
        JI[i, EVSEQ] = -1
        JI[i, RUN] = 0
        JI[i, NPRE] += 1
        free += G[i]
    for r in range(S[S_NST]):
        i = starts[r]
        if JI[i, KEPT] == cid:
            continue
        free -= G[i]
        if JF[i, START] != JF[i, START]:
            JF[i, START] = t
        JI[i, RUN] = 1
        p0 = JF[i, SEG_P0] = JF[i, PROG]
        JF[i, SEG_S] = t
        JF[i, SEG_OH] = overhead if JI[i, NPRE] else 0.0
        seq += 1
        te = t + JF[i, SEG_OH] + (grid[JI[i, NEXT]] - p0) * JS[i, DUR]
        S[S_EV] = _tpush(EF, EA, EB, S[S_EV], te, seq, i)
        JI[i, EVSEQ] = seq
    S[S_DIRTY], S[S_FREE], S[S_ROSE], S[S_FILLS], S[S_VICTIMS] = 0, free, 0, -1, -1
    return free, seq


@njit(cache=True)
def run_kernel(arrival, dur, gpus, est, end_eval, grid, thr, table, kind, poa, pac,
               resched, n_gpus, depth, margin, overhead, record_timeline):
    """``engine._run``'s loop with the base's calls. Returns start_s, finish_s, gpu_s,
    n_preemptions, the timeline (times, GPUs used), the number of jobs left waiting on an
    idle cluster (-1: none; the loop stopped there) and the owners (``_o``) of the views
    it works on (``_borrow``), to drop. Every array is made here, not by a helper (so
    made, ``planned_jit``'s loop ran 4% slower)."""
    n = arrival.shape[0]
    arrival, grid, thr, KT = _borrow(arrival), _borrow(grid), _borrow(thr), _borrow(table)
    end_eval = _borrow(end_eval)
    JS_o, JF_o, JI_o = np.empty((n, 3)), np.zeros((n, 10)), np.zeros((n, 10), np.int64)
    G_o, C_o = gpus.copy(), np.array([kind, poa, pac, depth], np.int64)
    S_o = np.zeros(13, np.int64)
    S_o[S_DIRTY] = 1  # (no call yet)
    JS, JF, JI, G, C, S = (_borrow(JS_o), _borrow(JF_o), _borrow(JI_o), _borrow(G_o),
                           _borrow(C_o), _borrow(S_o))
    _init_jobs(dur, est, arrival, JS, JF, JI)
    # Capacities: a job waits at most once; in one scheduling call (each job holding a
    # GPU) at most n_gpus starts and n_gpus preemptions; ``_worst`` is compacted above
    # 64 + 4 len(_running) and at most n_gpus jobs run. The events and ``_checkpointed``
    # grow between calls.
    QF_o, QA_o, QB_o = np.empty(n + 1), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    SKF_o, SKA_o, SKB_o = np.empty(n + 1), np.empty(n + 1, np.int64), np.empty(n + 1, np.int64)
    WCNT_o = np.zeros(n_gpus + 1, np.int64)  # waiting jobs by GPUs asked
    QF, QA, QB, WCNT = _borrow(QF_o), _borrow(QA_o), _borrow(QB_o), _borrow(WCNT_o)
    SKF, SKA, SKB = _borrow(SKF_o), _borrow(SKA_o), _borrow(SKB_o)
    cap_w = 128 + 8 * n_gpus
    WF_o, WA_o, WB_o = np.empty(cap_w), np.empty(cap_w, np.int64), np.empty(cap_w, np.int64)
    PF_o, PI_o = np.empty(cap_w), np.empty((4, cap_w), np.int64)
    WF, WA, WB = _borrow(WF_o), _borrow(WA_o), _borrow(WB_o)
    PF, PA, PB, PV, stack = (_borrow(PF_o), _borrow(PI_o[0]), _borrow(PI_o[1]),
                             _borrow(PI_o[2]), _borrow(PI_o[3]))
    lists_o, CK_o = np.empty((2, n_gpus + 1), np.int64), np.empty(64 + 2 * n_gpus, np.int64)
    starts, preempts, CK = _borrow(lists_o[0]), _borrow(lists_o[1]), _borrow(CK_o)
    EF_o = np.empty(64 + 4 * n_gpus)
    EA_o, EB_o = np.empty(EF_o.shape[0], np.int64), np.empty(EF_o.shape[0], np.int64)
    EF, EA, EB = _borrow(EF_o), _borrow(EA_o), _borrow(EB_o)
    tl_t, tl_used, tl_n = np.zeros(1024), np.zeros(1024, np.int64), 1
    seq, free, ai, cid, left = 0, n_gpus, 0, 0, -1
    while True:
        t_heap = EF[0] if S[S_EV] else INF
        t_arr = arrival[ai] if ai < n else INF
        t = t_heap if t_heap <= t_arr else t_arr
        if t == INF:
            break
        changed = False
        while S[S_EV] and EF[0] == t:  # 1. eval checkpoints at t, and their ends
            if S[S_NCK] == CK.shape[0]:
                CK_o = _grow(CK_o, S[S_NCK] + 1)
                CK = _borrow(CK_o)
            free, seq, changed = _eval(t, free, seq, changed, resched, C, S, JF, JI, JS, G,
                                       thr, KT, grid, end_eval, EF, EA, EB, WF, WA, WB, CK)
        a0 = ai  # 2. arrivals at t join the queue
        ai = _arrive(ai, t, arrival, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT)
        if not (changed or ai != a0):
            continue
        if not _acts(free, cid + 1, margin, C, S, JF, JI, G, WCNT, QF, QA, QB, WF, WA, WB, SKF,
                     SKA, SKB, CK, stack):
            S[S_NCK] = 0  # a call after only checkpoints would do nothing
            continue
        if S[S_EV] + n_gpus + 2 > EF.shape[0]:  # 3. one scheduling decision for the instant
            size = S[S_EV] + 4 * n_gpus + 2
            EF_o, EA_o, EB_o = _grow(EF_o, size), _grow(EA_o, size), _grow(EB_o, size)
            EF, EA, EB = _borrow(EF_o), _borrow(EA_o), _borrow(EB_o)
        cid += 1
        _decide(free, cid, margin, C, S, JF, JI, JS, G, thr, KT, QF, QA, QB, WCNT, WF, WA, WB,
                SKF, SKA, SKB, PF, PA, PB, PV, stack, CK, starts, preempts)
        free, seq = _apply(t, cid, free, seq, overhead, S, JF, JI, JS, G, grid, EF, EA, EB,
                           starts, preempts)
        if record_timeline and n_gpus - free != tl_used[tl_n - 1]:
            if tl_n == tl_t.shape[0]:
                tl_t, tl_used = _grow(tl_t, tl_n + 1), _grow(tl_used, tl_n + 1)
            tl_n = _mark(_borrow(tl_t), _borrow(tl_used), tl_n, t, n_gpus - free)
        if free == n_gpus and ai >= n and S[S_Q]:
            left = S[S_Q]
            break
    owners = (WCNT_o, JS_o, JF_o, JI_o, G_o, C_o, S_o, QF_o, QA_o, QB_o, SKF_o, SKA_o, SKB_o, WF_o,
              WA_o, WB_o, PF_o, PI_o, lists_o, CK_o, EF_o, EA_o, EB_o)
    return (JF_o[:, START].copy(), JF_o[:, FINISH].copy(), JF_o[:, GPU_S].copy(),
            JI_o[:, NPRE].copy(), tl_t[:tl_n].copy(), tl_used[:tl_n].copy(), left, owners)
