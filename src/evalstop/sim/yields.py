"""Yields at checkpoints in the planned loop (``sim.planned``), for the bases that make
them (Tiresias, LossAware): the checkpoint loop's calls that can act, without an event
per eval.

``PriorityScheduler`` hears every checkpoint and is asked after each instant's, but a call
after only checkpoints acts only when the state the last call left is unsettled (see
``PriorityScheduler._acts``): a fill would start a waiting job (one cut short by
``depth``), or running jobs above the waiting head's key hold the GPUs it lacks (jobs
started in that call, which it could not take; or a job that would yield). Keys change only
at level crossings, which are events. So after each call the loop asks ``unsettled``; only
then does it need the next checkpoint of any running job (``next_checkpoint``), where the
checkpoint loop's next call acts. Every call tests the jobs checkpointed at its instant
for a yield (``yielder``), in the order the checkpoint loop processed their evals.

A job yields only if the waiting head fits in the free GPUs and its own, and between two
calls neither changes; so running jobs' next evals are kept in one index per GPU class
(``class_indexes``: 1, 2-3, 4-7, ...), and a call reads the checkpoints of the classes
that could let the head in first, the smaller ones only after a yield. Both bases use the
same index and the same yield step; only the key at a checkpoint differs (Tiresias' is
the job's live key, LossAware's is made from its loss row, ``sim.loss_drops``).
"""

from __future__ import annotations

import heapq
import math
import operator
from bisect import bisect_left


def head(jobs):
    """The waiting head's entry (key, seq, job); the queue is not empty."""
    wait, wait_big = jobs.wait, jobs.wait_big
    head = wait[0] if wait else wait_big[0]
    if wait_big and wait_big[0] < head:
        head = wait_big[0]
    return head


def eval_index(jobs, round_of):
    """``track(i)``: job i's run starts. ``at(t, call)``: the running jobs' evals (before
    their ends) at t that the checkpoint loop processes in the batch before call ``call``
    at t, as (job, eval), and the time of the next eval of any running job after that
    batch (t itself: one due at once at a start in this call; inf: none).

    Queries come in time order, so a heap of each run's next eval not yet passed, advanced
    lazily, answers them: a query pops only the entries it passes, and an entry skips the
    evals between two queries at once. (A map from every eval time of a run, filled when
    it starts, answered faster but cost more to fill: on Philly, runs are often preempted
    long before their last evals.)"""
    segs, grid, end_eval, end_t, n_gpus = (jobs.segs, jobs.grid, jobs.end_eval, jobs.end_t,
                                           jobs.n_gpus)
    ck: list = []  # (time, job, eval, run)
    push, pop = heapq.heappush, heapq.heappop

    def track(i):
        seg = segs[i]
        j = seg[4]
        if j < end_eval[i]:
            push(ck, (seg[0] + seg[1] + (grid[j] - seg[2]) * seg[3], i, j, seg))
        if len(ck) > 64 + 4 * n_gpus:
            # (A run preempted in the call being made still counts: it may be restarted in
            # it, on the same run; its end time is cleared only after the call.)
            ck[:] = [e for e in ck if segs[e[1]] is e[3] and end_t[e[1]] == end_t[e[1]]]
            heapq.heapify(ck)

    def at(t, call):
        hits, later = [], []
        while ck and ck[0][0] <= t:
            e = pop(ck)
            tk, i, k, seg = e
            if segs[i] is not seg or end_t[i] != end_t[i]:
                continue  # the run ended or was preempted
            if tk == t and round_of(seg, k) > call:
                later.append(e)  # due at once at its start in this call: after it
                continue
            b, p0, d, end = seg[0] + seg[1], seg[2], seg[3], end_eval[i]
            tk = b + (grid[k] - p0) * d
            while tk <= t:
                if tk == t and round_of(seg, k) == call:
                    hits.append((i, k))
                k += 1
                if k == end:
                    break
                tk = b + (grid[k] - p0) * d
            else:
                push(ck, (tk, i, k, seg))
        for e in later:
            push(ck, e)
        while ck and (segs[ck[0][1]] is not ck[0][3] or end_t[ck[0][1]] != end_t[ck[0][1]]):
            pop(ck)
        return hits, ck[0][0] if ck else math.inf

    at.heap = ck  # (its top: no run's next eval comes before it; it may be stale)
    return track, at


def yielding(jobs, fill, refresh, enqueue):
    """``yield_(i, key, free, t, call, cid, preempted, wseq)``: running job i yields at its
    checkpoint (``PriorityScheduler._preempt``): it joins the queue with ``key``, and a
    fill follows on the GPUs it frees. Returns the free GPUs and the queue's counter."""
    live, moved, gone, nxt, gpus = jobs.live, jobs.moved, jobs.gone, jobs.nxt, jobs.gpus

    def yield_(i, key, free, t, call, cid, preempted, wseq):
        if nxt[i] <= t:
            refresh(i, t)  # its settlement reads its last eval
        moved[i] = gone[i] = cid
        preempted.append(i)
        live[i] = None
        wseq += 1
        enqueue((key, wseq, i))
        return fill(free + gpus[i], t, call, cid), wseq

    return yield_


def _classes(n):
    """The GPU class (1, 2-3, 4-7, ...) of a job of g GPUs, or of a need of g GPUs, for g
    up to n, at index g (classes[0] = 0: any)."""
    return [max(g, 1).bit_length() - 1 for g in range(n + 1)]


def class_indexes(jobs, round_of):
    """``eval_index`` per GPU class: ``track(i)``; ``hits(t, call, lo, hi)``, the
    checkpoints in the batch before call ``call`` at t of classes lo to hi - 1; and
    ``next_time(t, call, min_gpus, exact)``, the next eval of a job of at least
    ``min_gpus`` GPUs (inf: none), or, unless ``exact``, a time no later (a class whose
    first entry comes after t is not asked: that entry may be a run's that has ended); and
    the class of each number of GPUs (``_classes``)."""
    cls = _classes(max(jobs.gpus))
    n_classes = cls[-1] + 1
    tracks, ats = zip(*(eval_index(jobs, round_of) for _ in range(n_classes)))
    heaps, gpus, inf = [a.heap for a in ats], jobs.gpus, math.inf

    def track(i):
        tracks[cls[gpus[i]]](i)

    def hits(t, call, lo, hi):
        out = []
        for c in range(lo, hi):
            ck = heaps[c]
            if ck and ck[0][0] <= t:
                found = ats[c](t, call)[0]
                if found:
                    out += found
        return out

    def next_time(t, call, min_gpus, exact):
        nxt = inf
        for c in range(cls[min_gpus] if min_gpus > 0 else 0, n_classes):
            ck = heaps[c]
            if exact or (ck and ck[0][0] <= t):
                t_c = ats[c](t, call)[1]
            else:
                t_c = ck[0][0] if ck else inf
            if t_c < nxt:
                nxt = t_c
        return nxt

    return track, hits, next_time, cls


def yielder(jobs, margin, fill, refresh, enqueue, rank, index, key):
    """``yields(free, t, call, cid, preempted, wseq)``: ``_yield_at_checkpoints`` for the
    jobs checkpointed in this call's batch (``index``, a ``class_indexes``), in the
    checkpoint loop's order: each yields to the waiting head if its key there
    (``key(i, k)``) is worse by more than ``margin`` and the head fits in the free GPUs
    and its own; a fill follows each yield. Until the first yield only a job of the GPUs
    the head lacks can yield, so the smaller jobs' checkpoints are read only after it
    (those ranked before it could not have yielded). Where there is a victims' heap (a
    base that preempts: Tiresias), its top bounds every running key, so below the head
    nothing is read."""
    wait, wait_big, live, moved, segs, gpus, worst = (
        jobs.wait, jobs.wait_big, jobs.live, jobs.moved, jobs.segs, jobs.gpus, jobs.worst)
    yield_ = yielding(jobs, fill, refresh, enqueue)
    _, hits, _, cls = index
    by_rank, n_classes = operator.itemgetter(0), cls[-1] + 1

    def ranked(found, cid):
        out = [(rank(segs[i], k), i, k) for i, k in found if moved[i] != cid]
        if len(out) > 1:
            out.sort(key=by_rank)
        return out

    def yields_(free, t, call, cid, preempted, wseq):
        head_key, _, h = head(jobs)
        if jobs.preempts and (not worst or -worst[0][0] <= head_key + margin):
            return free, wseq  # (no running key above the head's)
        need = gpus[h] - free
        lo = cls[need] if need > 0 else 0
        found, r = ranked(hits(t, call, lo, n_classes), cid), 0
        while r < len(found):
            at_rank, i, k = found[r]
            r += 1
            if not (wait or wait_big):
                break
            if live[i] is None or moved[i] == cid:
                continue
            head_key, _, h = head(jobs)
            if gpus[h] <= free + gpus[i]:
                ki = key(i, k)
                if ki > head_key + margin:
                    free, wseq = yield_(i, ki, free, t, call, cid, preempted, wseq)
                    if lo:  # the smaller jobs' checkpoints ranked after this one
                        more = [e for e in ranked(hits(t, call, 0, lo), cid) if at_rank < e[0]]
                        found, r, lo = sorted(found[r:] + more, key=by_rank), 0, 0
        return free, wseq

    return yields_


def fill_would_act(jobs, depth):
    """``fills(free)``: whether a fill on ``free`` GPUs would start one of the first
    ``depth`` waiting jobs (the queue not empty)."""
    wait, wait_big, gpus = jobs.wait, jobs.wait_big, jobs.gpus
    depth = math.ceil(min(depth, 2**62))  # the jobs a fill looks at: ``looked < depth``

    def fills(free):
        if free <= 0:
            return False
        n_ahead = bisect_left(wait_big, wait[0]) if wait else len(wait_big)
        if wait and n_ahead < depth:
            return True
        for k in range(min(n_ahead, depth)):
            if gpus[wait_big[k][2]] <= free:
                return True
        return False

    return fills


def unsettled_test(jobs, depth, margin):
    """``unsettled(free)``: whether the scheduler's next call after only checkpoints would
    act on the state this call left (the queue not empty): a fill would start one of the
    first ``depth`` waiting jobs, or running jobs above the head's key plus ``margin`` hold
    the GPUs the head lacks (counted as the victims' search of a call would, none moved)."""
    worst, live, gpus, ea = jobs.worst, jobs.live, jobs.gpus, jobs.ea
    fills = fill_would_act(jobs, depth)

    def unsettled(free):
        if fills(free):
            return True
        head_key, _, h = head(jobs)
        short, limit = gpus[h] - free, head_key + margin
        if limit >= ea[0] and ea[1] < short:
            return False
        held, stack, n_w = 0, [0] if worst else [], len(worst)
        while stack:
            k = stack.pop()
            e = worst[k]
            if -e[0] <= limit:
                continue
            if live[e[5]] is e:
                held += gpus[e[5]]
                if held >= short:
                    return True
            k = 2 * k + 1
            if k < n_w:
                stack.append(k)
                if k + 1 < n_w:
                    stack.append(k + 1)
        ea[0], ea[1] = limit, held
        return False

    return unsettled
