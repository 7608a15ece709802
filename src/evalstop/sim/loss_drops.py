"""LossAware's keys and next call in the planned loop (``sim.planned``, key rule
``"loss"``; its yields are ``yields.yielder``'s).

LossAware never preempts for the head; a running job's key, its latest loss drop, is read
only when the job yields at a checkpoint, and there only against the waiting head, which
stays as it is between two calls, like the free GPUs. So a call after only checkpoints
can act only where a checkpointed job's GPUs, with the free ones, fit the head (or where
the last call left a fill a repeat would make, as for Tiresias, ``yields.unsettled_test``).
Running jobs' next evals are indexed by GPU class (``yields.class_indexes``, one per power
of two), so the loop's next call is the next eval of a job big enough to let the head in: on
1x Philly under load the head is mostly a big job that one-GPU jobs cannot make room for.
The key at an eval is ``loss_aware.drop_key`` of the workload's loss row, as
``LossAware.key`` makes it.
"""

from __future__ import annotations

import math

from evalstop.schedulers.loss_aware import drop_key
from evalstop.sim import yields


def key_of(jobs):
    """``key(i, k)``: LossAware's key for job i as of its eval k (its losses up to k)."""
    loss, m, inf = jobs.loss, jobs.m, math.inf

    def key(i, k):
        c = i * m
        return -inf if k < 1 else drop_key(loss[c], loss[c + k - 1], loss[c + k])

    return key


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
