"""Tiresias' keys in the planned loop (``sim.planned``): a running job's key changes only
when its attained GPU-seconds cross a queue threshold, so each run of a job gets one more
event, at the first eval where they do (a level crossing), found when the run starts.

A key is ``tiresias.queue_key`` of the job's level (``tiresias.queue_level``: the
thresholds at or below the GPU-seconds attained as of its last checkpoint) and its
arrival; attained GPU-seconds there are the checkpoint loop's float: the job's GPU-seconds
before this run, plus its GPUs times the time from the run's start to that eval's event
time.
"""

from __future__ import annotations

import heapq
import math


def crosser(jobs):
    """``cross_next(i, lo)``: schedule job i's next level crossing, the first eval from
    ``lo`` (before its end) whose attained GPU-seconds reach the next threshold."""
    segs, gpu_s, gpus, grid, end_eval, lvl, th, cross, cross_t = (
        jobs.segs, jobs.gpu_s, jobs.gpus, jobs.grid, jobs.end_eval, jobs.lvl, jobs.th,
        jobs.cross, jobs.cross_t)
    n_th, nan, push, n_gpus = len(jobs.th), math.nan, heapq.heappush, jobs.n_gpus

    def cross_next(i, lo):
        level = lvl[i]
        hi = end_eval[i] - 1
        if level >= n_th or lo > hi:
            cross_t[i] = nan
            return
        thr = th[level]
        s, oh, p0, d = segs[i][:4]
        b, g0, g = s + oh, gpu_s[i], gpus[i]
        if g0 + g * ((b + (grid[hi] - p0) * d) - s) < thr:
            cross_t[i] = nan
            return
        # Attained GPU-seconds only grow along the evals (every step is monotone).
        while lo < hi:
            mid = (lo + hi) // 2
            if g0 + g * ((b + (grid[mid] - p0) * d) - s) >= thr:
                hi = mid
            else:
                lo = mid + 1
        tc = cross_t[i] = b + (grid[lo] - p0) * d
        push(cross, (tc, i))
        if len(cross) > 64 + 4 * n_gpus:
            # A preempted or ended run's crossing would stay until its time.
            cross[:] = [e for e in cross if cross_t[e[1]] == e[0]]
            heapq.heapify(cross)

    return cross_next


def taker(jobs, refresh, cross_next):
    """``take_crossings(t)``: the level crossings due at t, each job's entry among the
    running jobs renewed with its new key; whether any was."""
    cross, cross_t, live, nxt, worst, ea, gpus, done = (jobs.cross, jobs.cross_t, jobs.live,
                                                        jobs.nxt, jobs.worst, jobs.ea,
                                                        jobs.gpus, jobs.done)
    pop, push = heapq.heappop, heapq.heappush

    def take_crossings(t):
        rose = False
        while cross and cross[0][0] == t:
            i = pop(cross)[1]
            old = live[i]
            if cross_t[i] != t or old is None or nxt[i] > t:
                continue  # (a run preempted or ended since, or a copy already handled)
            e = live[i] = refresh(i, t)
            push(worst, e)
            if -old[0] <= ea[0] < -e[0]:
                ea[1] += gpus[i]  # now above the last short count's limit
            cross_next(i, done[i] + 1)
            rose = True
        return rose

    return take_crossings
