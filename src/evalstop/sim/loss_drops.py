"""LossAware's keys and yields in the planned loop (``sim.planned``, key rule ``"loss"``).

LossAware never preempts for the head; a running job's key, its latest loss drop, is read
only when the job yields at a checkpoint, and there only against the waiting head, which
stays as it is between two calls, like the free GPUs. So a call after only checkpoints
can act only where a checkpointed job's GPUs, with the free ones, fit the head (or where
the last call left a fill a repeat would make, as for Tiresias, ``yields.unsettled_test``).
Running jobs' next evals are indexed by GPU class (``yields.eval_index``, one per power of
two), so the loop's next call is the next eval of a job big enough to let the head in: on
1x Philly under load the head is mostly a big job that one-GPU jobs cannot make room for.
The key at an eval is ``loss_aware.drop_key`` of the workload's loss row, as
``LossAware.key`` makes it.
"""

from __future__ import annotations

import math
import operator

from evalstop.schedulers.loss_aware import drop_key
from evalstop.sim import yields


def key_of(jobs):
    """``key(i, k)``: LossAware's key for job i as of its eval k (its losses up to k)."""
    loss, m, inf = jobs.loss, jobs.m, math.inf

    def key(i, k):
        c = i * m
        return -inf if k < 1 else drop_key(loss[c], loss[c + k - 1], loss[c + k])

    return key


def _classes(n):
    """The GPU class (1, 2-3, 4-7, ...) of a job of g GPUs, or of a need of g GPUs, for g
    up to n, at index g (classes[0] = 0: any)."""
    return [max(g, 1).bit_length() - 1 for g in range(n + 1)]


def indexes(jobs, round_of):
    """``yields.eval_index`` per GPU class: ``track(i)``; ``hits(t, call, lo, hi)``, the
    checkpoints in the batch before call ``call`` at t of classes lo to hi - 1; and
    ``next_time(t, call, min_gpus, exact)``, the next eval of a job of at least
    ``min_gpus`` GPUs (inf: none), or, unless ``exact``, a time no later (a class whose
    first entry comes after t is not asked: that entry may be a run's that has ended); and
    the class of each number of GPUs (``_classes``)."""
    cls = _classes(max(jobs.gpus))
    n_classes = cls[-1] + 1
    tracks, ats = zip(*(yields.eval_index(jobs, round_of) for _ in range(n_classes)))
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
    jobs checkpointed in this call's batch, in the checkpoint loop's order: each yields to
    the waiting head if its key there is worse by more than ``margin`` and the head fits
    in the free GPUs and its own; a fill follows each yield. Until the first yield only a
    job of the GPUs the head lacks can yield, so the smaller jobs' checkpoints are read
    only after it (those ranked before it could not have yielded)."""
    wait, wait_big, live, moved, segs, gpus = (jobs.wait, jobs.wait_big, jobs.live, jobs.moved,
                                               jobs.segs, jobs.gpus)
    yield_ = yields.yielding(jobs, fill, refresh, enqueue)
    _, hits, _, cls = index
    by_rank, n_classes = operator.itemgetter(0), cls[-1] + 1

    def ranked(found, cid):
        out = [(rank(segs[i], k), i, k) for i, k in found if moved[i] != cid]
        if len(out) > 1:
            out.sort(key=by_rank)
        return out

    def yields_(free, t, call, cid, preempted, wseq):
        need = gpus[yields.head(jobs)[2]] - free
        lo = cls[need] if need > 0 else 0
        found, r = ranked(hits(t, call, lo, n_classes), cid), 0
        while r < len(found):
            at_rank, i, k = found[r]
            r += 1
            if not (wait or wait_big):
                break
            if live[i] is None or moved[i] == cid:
                continue
            head_key, _, h = yields.head(jobs)
            if gpus[h] <= free + gpus[i]:
                ki = key(i, k)
                if ki > head_key + margin:
                    free, wseq = yield_(i, ki, free, t, call, cid, preempted, wseq)
                    if lo:  # the smaller jobs' checkpoints ranked after this one
                        more = [e for e in ranked(hits(t, call, 0, lo), cid) if at_rank < e[0]]
                        found, r, lo = sorted(found[r:] + more, key=by_rank), 0, 0
        return free, wseq

    return yields_


def next_call(jobs, depth, index):
    """``next_at(free, t, call)``: with jobs waiting after this call, the time of the
    checkpoint loop's next call that may act: the next eval of any running job when a
    fill would act (``yields.unsettled_test``'s first clause), else the next eval of a job
    that, with the free GPUs, fits the head (inf: none), or a time before it (a call
    there does nothing)."""
    fills, next_time, gpus = yields.fill_would_act(jobs, depth), index[2], jobs.gpus

    def next_at(free, t, call):
        if fills(free):  # the very next eval: a fill there starts a job
            return next_time(t, call, 1, True)
        return next_time(t, call, gpus[yields.head(jobs)[2]] - free, False)

    return next_at
