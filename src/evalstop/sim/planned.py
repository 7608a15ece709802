"""The planned loop: SRTF-Est, Tiresias, SJF-Est and LossAware with planned stops, the
checkpoint loop's result without an event per eval.

Each hears a running job's evals only to re-key it (SJF-Est not even that), and reads
those keys only in a scheduling call. So here each run of a job (from a start to its end or preemption) gets
one event, its end (planned stop or completion), and a job's last checkpoint is found when
the scheduler looks at the job, from its run's start, overhead and progress with the
expression the checkpoint loop uses for each eval's event time (the same float). A base
states its key rule (``rule``):

* ``"remaining"`` (SRTF-Est): the key falls at every eval, so the victims' heap holds
  each job's key as of when it was last looked at, an upper bound, and the top is
  refreshed until it stays on top (the job the checkpoint loop would find there).
* ``"levels"`` (Tiresias, ``sim.levels``): the key changes only at a level crossing, found
  when the run starts and made an event. Tiresias also yields at checkpoints and is asked
  after every instant's evals; ``sim.yields`` makes only the calls of the checkpoint loop
  that can act, and tests the jobs checkpointed at a call's instant for a yield.
* ``"fixed"`` (SJF-Est): the key is the estimate and nothing preempts, so a call only
  fills.
* ``"loss"`` (LossAware, ``sim.loss_drops``): the key changes at every eval but is read
  only by a yield at that eval, which needs the waiting head to fit in the free GPUs and
  the job's own; the loop calls at the next eval of a job big enough for that.

Ties between equal keys go, in the checkpoint loop, to the key set first. When keys tie,
``_Rank`` recovers that order: it is the order in which the checkpoint loop would have
processed the two checkpoints (or starts) that set them (see ``_chain``).

The scheduling itself is ``PriorityScheduler``'s (fill in key order ``depth`` deep, the
yields at checkpoints, then preempt for the head), restated over plain lists for speed: a
change there must be made here too. Every start, finish, stop and preemption is the
checkpoint loop's (``engine._run``); ``tests/test_sim_srtf_loop.py`` and
``tests/test_sim_planned_{levels,fixed,loss}.py`` compare them on random traces with many
ties and on Philly slices, so a difference shows there. ``ENABLED = False`` sends them all
back to that loop (SJF-Est to the ends loop).

With numba installed (the ``fast`` extra), ``run`` hands the loop to its compiled twin
``evalstop.sim.planned_jit`` when ``evalstop.jit`` says so (by default for large
workloads; ``EVALSTOP_JIT=1`` always, ``0`` never); the twin makes every decision and float
of the loop here (the same tests compare the two). The Python loop stays the reference:
it is what runs without numba or on small workloads.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort

import numpy as np

from evalstop import jit
from evalstop.schedulers.loss_aware import LossAware
from evalstop.schedulers.overlay import plain_base
from evalstop.schedulers.sjf import SJFEst
from evalstop.schedulers.srtf import SRTFEst, remaining_s
from evalstop.schedulers.tiresias import Tiresias, queue_key, queue_level
from evalstop.sim import levels, loss_drops, yields
from evalstop.sim.result import planned_result

ENABLED = True
# The compiled twin, by key rule (``jit.COSTS`` has a saving for each).
TWIN, TWIN_LEVELS = "evalstop.sim.planned_jit", "evalstop.sim.planned_jit:levels"
TWINS = {"remaining": TWIN, "levels": TWIN_LEVELS, "fixed": "evalstop.sim.planned_jit:fixed",
         "loss": "evalstop.sim.planned_jit:loss"}
_RULE_IDS = {"remaining": 0, "levels": 1, "fixed": 2, "loss": 3}  # (``run_kernel``'s)
# The scheduler's calls restated here (and in the twins): patched on the instance, they
# keep the checkpoint loop.
_HOOKS = ("bind", "submit", "schedule", "on_eval", "on_end", "key", "twin_key", "_fill",
          "_started", "_set_running_key", "_push_worst", "_live_top", "_compact", "_preempt",
          "_preempt_for_head", "_enough_above", "_yield_at_checkpoints")


# The bases this loop restates, each with the flags it restates it with: whether the
# waiting head preempts running jobs, whether a running job yields at its checkpoint, and
# whether the scheduler is asked after an instant's evals. The key rule is the base's own
# (``PriorityScheduler.twin_key``).
_BASES = {SRTFEst: (True, False, False), SJFEst: (False, False, False),
          Tiresias: (True, True, True), LossAware: (False, True, True)}


def _plain(scheduler):
    """``scheduler``'s base when this loop restates it: exactly one of ``_BASES`` (alone or
    under the plain overlay), with its flags, no restated method patched; else None."""
    if not ENABLED:
        return None
    for cls, flags in _BASES.items():
        base = plain_base(scheduler, cls, _HOOKS)
        if base is not None:
            have = (bool(base.preempt_on_arrival), bool(base.preempt_at_checkpoint),
                    bool(scheduler.reschedule_on_eval))
            return base if have == flags else None
    return None


def rule(scheduler, workload):
    """The key rule this loop runs ``scheduler`` by (``twin_key``'s): ``"remaining"``
    (SRTF-Est), ``"levels"`` (Tiresias, whose arrivals its keys can order), ``"fixed"``
    (SJF-Est) or ``"loss"`` (LossAware, ``sim.loss_drops``); None: the checkpoint loop
    runs."""
    base = _plain(scheduler)
    key = None if base is None else base.twin_key(workload)
    return None if key is None else key[0]


def _round(seg, j):
    """How many scheduling calls at its time came before eval ``j`` of ``seg`` was
    processed. An eval due when its predecessor (the previous eval, or the segment's
    start) is processed, at the same time, is processed in the same batch as that
    predecessor; and an eval due at once at its segment's start (no overhead, restarted
    at that eval's progress) comes after that scheduling call."""
    s, oh, p0, d, j0, call, _, grid = seg
    b = s + oh
    t = b + (grid[j] - p0) * d
    while j > j0 and b + (grid[j - 1] - p0) * d == t:
        j -= 1
    return call + 1 if j == j0 and s == t else 0


def _chain(seg, j):
    """The checkpoint loop's processing order of what set a key, as a sequence compared
    lexicographically: eval ``j`` of segment ``seg`` (``j < j0``: its start). Events of one
    time and batch pop in push order, and an eval's event is pushed when its predecessor
    is processed; so two evals of one time and batch compare as their predecessors do,
    down to the starts (time, call, then order within the call)."""
    s, oh, p0, d, j0, call, order, grid = seg
    b = s + oh
    while j >= j0:
        yield (b + (grid[j] - p0) * d, _round(seg, j), 0)
        j -= 1
    yield (s, call, 1, order)


class _Rank:
    """Orders two evals' entries when key, time and batch tie: by their predecessors
    (see ``_chain``). Rarely compared."""

    __slots__ = ("j", "seg")

    def __init__(self, seg, j):
        self.seg, self.j = seg, j

    def __lt__(self, other):
        for a, b in zip(_chain(self.seg, self.j - 1), _chain(other.seg, other.j - 1)):
            if a != b:
                return a < b
        return False


def run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0,
        key_rule=None):
    """``engine._run`` for a scheduler that has a ``rule`` (``key_rule``, when the caller
    has it), with its stop ``plan``."""
    base = getattr(scheduler, "base", scheduler)
    depth, margin = base.depth, base.margin
    key_rule = key_rule or rule(scheduler, workload)
    thresholds = base.thresholds if key_rule == "levels" else None
    twin = jit.twin(TWINS[key_rule], workload.n_jobs)
    if twin is not None:
        out = _run_twin(twin, workload, n_gpus, scheduler, depth, margin, restart_overhead_s,
                        record_timeline, plan, wall0, thresholds, key_rule)
        if out is not None:
            return out
    jobs = _Jobs(workload, plan, n_gpus, restart_overhead_s, thresholds, key_rule)
    tl_t, tl_used = _loop(jobs, scheduler, depth, margin, record_timeline)
    # Every job ran to its planned end (or the loop raised).
    return planned_result(workload, plan, np.array(jobs.grid), start_s=np.array(jobs.start_s),
                          finish_s=np.array(jobs.finish_s), gpu_s=np.array(jobs.gpu_s),
                          n_preemptions=np.array(jobs.n_pre, dtype=np.int64), tl_t=tl_t,
                          tl_used=tl_used, n_gpus=n_gpus, scheduler=scheduler, wall0=wall0)


class _Jobs:
    """The loop's inputs and state, as plain lists (cheaper to index than numpy arrays),
    shared by the loop and the scheduling steps made for it (``_starter`` and the rest)."""

    __slots__ = ("n", "n_gpus", "overhead", "grid", "dur", "gpus", "arrival", "est",
                 "end_eval", "start_s", "finish_s", "gpu_s", "segs", "done", "nxt", "prog",
                 "n_pre", "live", "end_t", "moved", "gone", "events", "wait", "wait_big",
                 "worst", "ea", "th", "akey", "lvl", "cross", "cross_t", "rule", "preempts",
                 "loss", "m")

    def __init__(self, workload, plan, n_gpus, restart_overhead_s, thresholds=None,
                 rule="remaining"):
        n = self.n = workload.n_jobs
        self.n_gpus, self.overhead = n_gpus, restart_overhead_s
        # Whether the head preempts (SRTF-Est, Tiresias): then running jobs sit in the
        # victims' heap ``worst``.
        self.rule, self.preempts = rule, rule in ("remaining", "levels")
        self.grid = [float(x) for x in workload.eval_progress]
        self.dur, self.gpus = workload.duration_s.tolist(), workload.gpus.tolist()
        self.arrival, self.est = workload.arrival_s.tolist(), workload.est_duration_s.tolist()
        self.end_eval = plan.end_eval.tolist()
        nan, inf = math.nan, math.inf
        self.start_s, self.finish_s, self.gpu_s = [nan] * n, [nan] * n, [0.0] * n
        self.segs = [None] * n  # running segment: (start, overhead, p0, dur, j0, call, order, grid)
        self.done = [-1] * n  # the last eval processed, as of when SRTF-Est last looked
        self.nxt = [inf] * n  # the time of the eval after it (inf: none before the job's end)
        self.prog = [0.0] * n  # JobView.progress: as of that eval, or of the preemption
        self.n_pre = [0] * n
        self.live = [None] * n  # the job's current entry in ``worst``; None when not running
        self.end_t = [nan] * n  # the time of the job's live end event (nan: none)
        self.moved = [0] * n  # the scheduling call that started or preempted the job
        self.gone = [0] * n  # the scheduling call that preempted it (0 once restarted in it)
        self.events = []  # (time, job): ends only
        # PriorityScheduler._wait, (key, seq, job), split in two: one-GPU jobs (a heap) and
        # the rest (a sorted list, short on every trace we have). A job that does not fit is
        # skipped by moving along the list, not popped and pushed back (on Philly, 2.4 times
        # a job).
        self.wait, self.wait_big = [], []
        # Running jobs, worst first: (-key, time, call, 1, order, job) for a key set at a
        # start, (-key, time, batch, 0, _Rank, job) for one set at an eval: the checkpoint
        # loop's (-key, version) order.
        self.worst = []
        # What the last in-place count that fell short (enough_above) found, [limit, bound]:
        # running jobs with keys above the limit held at most ``bound`` GPUs. Keys only fall
        # while a job runs, so only a start can add to that; ``start`` adds its GPUs when
        # its key is above the limit, and until the bound reaches what the head is short
        # of, the count would fall short again (on Philly this answers 35k of the 56k
        # counts).
        self.ea = [inf, 0]
        # The key rule: SRTF-Est's remaining time (``th`` None), or Tiresias' levels by the
        # thresholds ``th``, with each job's level as of its last checkpoint (or start),
        # and its next level crossing (a time in ``cross_t`` and the heap
        # ``cross``; nan: none). ``akey``: the key of an arriving job.
        self.th = None if thresholds is None else tuple(thresholds)
        self.akey = _arrival_keys(workload, rule).tolist()
        self.lvl, self.cross, self.cross_t = [0] * n, [], [nan] * n
        # LossAware: the loss table, read at ``i * m + k`` (``engine._Jobs`` says why).
        self.m, self.loss = workload.n_evals, None
        if rule == "loss":
            from evalstop.sim.engine import _flat  # (engine imports this module)

            self.loss = _flat(workload.loss, (n, self.m))


def _arrival_keys(workload, rule):
    """Each job's key when it arrives: its estimate (SRTF-Est, SJF-Est), queue 0 by its
    arrival (Tiresias), or LossAware's for a job without losses."""
    if rule == "levels":
        return queue_key(0, np.asarray(workload.arrival_s, dtype=np.float64))
    if rule == "loss":
        return np.full(workload.n_jobs, -math.inf)
    return np.asarray(workload.est_duration_s, dtype=np.float64)


def _starter(jobs, on_run):
    """``start(i, key, t, call, cid)``: job i starts (or, preempted in this call, keeps
    running) with wait key ``key``; ``on_run(i, j)`` (Tiresias) is told of a new run
    from eval j."""
    moved, gone, live, worst, gpus, n_pre, est, prog = (jobs.moved, jobs.gone, jobs.live,
                                                        jobs.worst, jobs.gpus, jobs.n_pre,
                                                        jobs.est, jobs.prog)
    start_s, dur, end_t, grid, end_eval, events, done, segs, nxt = (
        jobs.start_s, jobs.dur, jobs.end_t, jobs.grid, jobs.end_eval, jobs.events,
        jobs.done, jobs.segs, jobs.nxt)
    ea, restart_overhead_s, n_gpus, preempts = jobs.ea, jobs.overhead, jobs.n_gpus, jobs.preempts
    push, heapify, inf = heapq.heappush, heapq.heapify, math.inf
    remaining = on_run is None  # SRTF-Est: a restart's key is as of its preemption
    order = 0

    def start(i, key, t, call, cid):
        nonlocal order
        moved[i] = cid
        order += 1
        if gone[i] == cid:
            # Preempted and restarted in one call: the checkpoint loop keeps it running
            # on the same segment; only its key (the wait key) is set anew, as at a start.
            gone[i] = 0
            e = live[i] = (-key, t, call, 1, order, i)
            if preempts:
                push(worst, e)
            if key > ea[0]:
                ea[1] += gpus[i]
            return
        if n_pre[i]:
            if remaining:
                key = remaining_s(est[i], prog[i])  # the wait key predates the progress made
            oh = restart_overhead_s
        else:
            oh = 0.0
        if start_s[i] != start_s[i]:
            start_s[i] = t
        p0 = prog[i]
        d = dur[i]
        te = end_t[i] = t + oh + (grid[end_eval[i]] - p0) * d
        push(events, (te, i))
        j = done[i] + 1
        segs[i] = (t, oh, p0, d, j, call, order, grid)
        nxt[i] = t + oh + (grid[j] - p0) * d if j < end_eval[i] else inf
        if not remaining:
            on_run(i, j)
        e = live[i] = (-key, t, call, 1, order, i)
        if not preempts:
            return  # SJF-Est, LossAware: no victims' heap
        push(worst, e)
        if key > ea[0]:
            ea[1] += gpus[i]
        # Drop entries of jobs no longer running (looked at every 64th start; at most
        # n_gpus jobs run).
        if not order & 63 and len(worst) > 64 + 2 * n_gpus:
            worst[:] = [e for e in worst if live[e[5]] is e]
            heapify(worst)

    return start


def _refresher(jobs):
    """``refresh(i, t)``: job i's entry as of its last eval at or before t (one is due:
    ``nxt[i] <= t``), with the key the base gives it there: SRTF-Est's remaining time, or
    Tiresias' level (``sim.levels``) from the GPU-seconds attained by then, which it
    records."""
    segs, done, end_eval, grid, nxt, prog, est = (jobs.segs, jobs.done, jobs.end_eval,
                                                  jobs.grid, jobs.nxt, jobs.prog, jobs.est)
    lvl, th, gpu_s, gpus, arrival = jobs.lvl, jobs.th, jobs.gpu_s, jobs.gpus, jobs.arrival
    inf, levels = math.inf, jobs.th is not None

    def refresh(i, t):
        seg = segs[i]
        s, oh, p0, d, _, _, _, _ = seg
        b = s + oh
        k, end = done[i] + 1, end_eval[i]
        while k + 1 < end and b + (grid[k + 1] - p0) * d <= t:
            k += 1
        done[i] = k
        nxt[i] = b + (grid[k + 1] - p0) * d if k + 1 < end else inf
        g = prog[i] = grid[k]
        tk = b + (g - p0) * d
        if levels:
            level = lvl[i] = queue_level(th, gpu_s[i] + gpus[i] * (tk - s))
            key = queue_key(level, arrival[i])
        else:  # (LossAware's entry is not read: a yield keys the job at its eval)
            key = remaining_s(est[i], g)
        return (-key, tk, _round(seg, k), 0, _Rank(seg, k), i)

    return refresh


def _filler(jobs, depth, start):
    """``fill(free, t, call, cid)``: the queue in key order, at most ``depth`` deep,
    starting each job that fits; returns the GPUs left free."""
    wait, wait_big, gpus = jobs.wait, jobs.wait_big, jobs.gpus
    pop = heapq.heappop

    def fill(free, t, call, cid):
        looked = b = 0
        nb = len(wait_big)
        while looked < depth and free > 0:
            if free == 1:
                # Only a one-GPU job fits: the multi-GPU jobs ahead of it are looked at and
                # skipped, all at once.
                if not wait:
                    break
                if b < nb and wait_big[b] < wait[0]:
                    k = bisect_left(wait_big, wait[0], b)
                    looked += k - b
                    b = k
                    if looked >= depth:
                        break
                e = pop(wait)
                start(e[2], e[0], t, call, cid)
                return 0
            looked += 1
            if b < nb:
                e = wait_big[b]
                if not (wait and wait[0] < e):  # (entries are unique: no tie)
                    i = e[2]
                    if gpus[i] <= free:
                        del wait_big[b]
                        nb -= 1
                        free -= gpus[i]
                        start(i, e[0], t, call, cid)
                    else:
                        b += 1
                    continue
            elif not wait:
                break
            e = pop(wait)  # a one-GPU job: it fits
            free -= 1
            start(e[2], e[0], t, call, cid)
        return free

    return fill


def _counter(jobs, refresh):
    """``enough_above(limit, short, t, cid)``: whether running jobs not started in this
    call, with keys above ``limit``, hold ``short`` GPUs. Most of the time they do not (a
    big job at the head of the queue), and then the search in ``preempt_for_head`` would
    pop and push back every candidate, at each arrival until the head fits; here the heap
    is read in place instead: a subtree whose root's stored key is at most ``limit`` holds
    no candidate, stored keys being upper bounds."""
    worst, live, moved, nxt, gpus, ea = (jobs.worst, jobs.live, jobs.moved, jobs.nxt,
                                         jobs.gpus, jobs.ea)
    push = heapq.heappush

    def enough_above(limit, short, t, cid):
        n_w = len(worst)
        stack = [0] if n_w else []
        fresh = []
        held = 0  # the GPUs of every running job above the limit, this call's starts too
        while stack:
            k = stack.pop()
            e = worst[k]
            if -e[0] <= limit:
                continue
            i = e[5]
            if live[i] is e:
                if moved[i] != cid:
                    if nxt[i] <= t:
                        e = live[i] = refresh(i, t)
                        fresh.append(e)  # pushed below; the heap is not moved while read
                    if -e[0] > limit:
                        short -= gpus[i]
                        if short <= 0:
                            break
                        held += gpus[i]
                elif -e[0] > limit:
                    held += gpus[i]
            k = 2 * k + 1
            if k < n_w:
                stack.append(k)
                if k + 1 < n_w:
                    stack.append(k + 1)
        for e in fresh:
            push(worst, e)
        if short > 0:
            ea[0], ea[1] = limit, held
        return short <= 0

    return enough_above


def _preempter(jobs, depth, margin, fill, enough_above, refresh, start, enqueue):
    """``preempt_for_head(free, t, call, cid, preempted, wseq)``: while the best waiting
    job does not fit, preempt the running jobs whose keys are worse than its by more than
    ``margin``, worst first, and start it (``depth`` rounds at most). Returns the free
    GPUs and the wait queue's counter; the victims are added to ``preempted``."""
    wait, wait_big, gpus, worst, live, nxt, moved, gone, ea = (
        jobs.wait, jobs.wait_big, jobs.gpus, jobs.worst, jobs.live, jobs.nxt, jobs.moved,
        jobs.gone, jobs.ea)
    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace

    def preempt_for_head(free, t, call, cid, preempted, wseq):
        rounds = 0
        while (wait or wait_big) and rounds < depth:
            rounds += 1
            head = wait[0] if wait else wait_big[0]
            if wait_big and wait_big[0] < head:
                head = wait_big[0]
            head_key, _, h = head
            need = gpus[h]
            if need <= free:
                free = fill(free, t, call, cid)
                continue
            limit = head_key + margin
            # The top's stored key bounds every key: most calls end here. Short of one GPU,
            # the search below stops at the first candidate anyway.
            if not worst or -worst[0][0] <= limit or (
                    need - free > 1 and ((limit >= ea[0] and ea[1] < need - free)
                                         or not enough_above(limit, need - free, t, cid))):
                break
            victims, popped, gain = [], [], 0
            while worst and free + gain < need:
                e = worst[0]
                i = e[5]
                if live[i] is not e:
                    pop(worst)  # ended or preempted
                    continue
                if nxt[i] <= t and moved[i] != cid:  # (a key set in this call stands)
                    e = live[i] = refresh(i, t)
                    replace(worst, e)
                    continue
                if -e[0] <= limit:
                    break
                popped.append(pop(worst))
                if moved[i] == cid:
                    continue
                victims.append(i)
                gain += gpus[i]
            if free + gain < need:
                for e in popped:
                    push(worst, e)
                break
            for e in popped:
                if moved[e[5]] == cid:
                    push(worst, e)
            if need == 1:  # the head, before the victims join the queue
                pop(wait)
            else:
                del wait_big[0]
            for i in victims:
                moved[i] = gone[i] = cid
                preempted.append(i)
                wseq += 1
                # Its key as of its last checkpoint (its entry was refreshed on top).
                enqueue((-live[i][0], wseq, i))
                live[i] = None
            free += gain - need
            start(h, head_key, t, call, cid)
            free = fill(free, t, call, cid)
        return free, wseq

    return preempt_for_head


def _settle(jobs, preempted, t, cid):
    """The preemptions of the call ``cid`` at t: each victim's progress, GPU-seconds and
    count (not a job restarted in the same call: it never stopped)."""
    segs, grid, prog, done, gpu_s, gpus, end_t, n_pre, events = (
        jobs.segs, jobs.grid, jobs.prog, jobs.done, jobs.gpu_s, jobs.gpus, jobs.end_t,
        jobs.n_pre, jobs.events)
    for i in preempted:
        if jobs.gone[i] != cid:
            continue
        s, oh, p0, d = segs[i][:4]
        p = p0 + max(0.0, t - s - oh) / d
        prog[i] = min(p, grid[done[i] + 1])
        gpu_s[i] += gpus[i] * (t - s)
        end_t[i] = jobs.cross_t[i] = math.nan
        n_pre[i] += 1
    preempted.clear()
    if len(events) > 64 + 2 * jobs.n_gpus:
        # A preempted segment's end would stay in the heap until its time: on Philly, 40
        # stale ends for each live one, paid for by every push and pop.
        events[:] = [e for e in events if end_t[e[1]] == e[0]]
        heapq.heapify(events)


def _queuer(jobs):
    """``enqueue(entry)``: a (key, seq, job) entry joins the wait queue."""
    wait, wait_big, gpus, push = jobs.wait, jobs.wait_big, jobs.gpus, heapq.heappush

    def enqueue(entry):
        if gpus[entry[2]] == 1:
            push(wait, entry)
        else:
            insort(wait_big, entry)

    return enqueue


def _steps(jobs, depth, margin):
    """The scheduling steps over ``jobs``: ``start``, ``fill`` and ``preempt_for_head``
    (None for SJF-Est and LossAware); for Tiresias also ``take_crossings``, and for it and
    LossAware ``yields`` and ``next_call`` (None for the others)."""
    refresh, on_run = _refresher(jobs), None
    if jobs.rule == "loss":
        index = yields.class_indexes(jobs, _round)
        start = _starter(jobs, lambda i, j: index[0](i))
        fill, enqueue = _filler(jobs, depth, start), _queuer(jobs)
        return (start, fill, None, None,
                yields.yielder(jobs, margin, fill, refresh, enqueue, _Rank, index,
                               loss_drops.key_of(jobs)),
                loss_drops.next_call(jobs, depth, index))
    if jobs.th is not None:
        cross_next = levels.crosser(jobs)
        index = yields.class_indexes(jobs, _round)
        track, next_time, live = index[0], index[2], jobs.live

        def on_run(i, j):
            cross_next(i, j)
            track(i)
    start = _starter(jobs, on_run)
    fill = _filler(jobs, depth, start)
    enqueue = _queuer(jobs)
    steps = (start, fill, _preempter(jobs, depth, margin, fill, _counter(jobs, refresh),
                                     refresh, start, enqueue) if jobs.preempts else None)
    if jobs.th is None:
        return (*steps, None, None, None)
    unsettled, inf = yields.unsettled_test(jobs, depth, margin), math.inf
    # A running job's key is its live entry's, set at its start or a level crossing.
    return (*steps, levels.taker(jobs, refresh, cross_next),
            yields.yielder(jobs, margin, fill, refresh, enqueue, _Rank, index,
                           lambda i, k: -live[i][0]),
            lambda free, t, call: next_time(t, call, 1, True) if unsettled(free) else inf)


def _arriver(jobs):
    """``arrive(ai, t, wseq)``: the jobs that arrive at t join the queue; returns the next
    arrival's index and the queue's counter."""
    n, arrival, akey, enqueue = jobs.n, jobs.arrival, jobs.akey, _queuer(jobs)

    def arrive(ai, t, wseq):
        while ai < n and arrival[ai] == t:
            wseq += 1
            enqueue((akey[ai], wseq, ai))
            ai += 1
        return ai, wseq

    return arrive


def _decider(jobs, depth, margin):
    """``decide(t, call, cid, free, wseq, preempted)``: the scheduler's call at t
    (``PriorityScheduler.schedule``): fill, the yields at checkpoints (Tiresias), preempt
    for the head, settle the preemptions. Returns the free GPUs, the queue's counter and
    the time of the next call that an unsettled state asks for (inf: none); with it,
    ``take_crossings`` (None for SRTF-Est) and ``start``."""
    wait, wait_big, gpus, worst = jobs.wait, jobs.wait_big, jobs.gpus, jobs.worst
    start, fill, preempt_for_head, take_crossings, yields, next_call = _steps(
        jobs, depth, margin)
    inf = math.inf

    def decide(t, call, cid, free, wseq, preempted):
        if free > 0 and (wait or wait_big):
            free = fill(free, t, call, cid)
        if not (wait or wait_big):
            return free, wseq, inf
        if yields is not None:
            free, wseq = yields(free, t, call, cid, preempted, wseq)
        if preempt_for_head is not None and (wait or wait_big):
            head = wait[0] if wait else wait_big[0]
            if wait_big and wait_big[0] < head:
                head = wait_big[0]
            # The search's first test, without the call (most calls end here).
            if gpus[head[2]] <= free or (worst and -worst[0][0] > head[0] + margin):
                free, wseq = preempt_for_head(free, t, call, cid, preempted, wseq)
        if preempted:
            _settle(jobs, preempted, t, cid)
        if next_call is not None and (wait or wait_big):
            return free, wseq, next_call(free, t, call)
        return free, wseq, inf

    return decide, take_crossings, start


def _loop(jobs, scheduler, depth, margin, record_timeline):
    """The event loop: one event per run of a job, its end (and, for Tiresias, its level
    crossings, and a call where an unsettled state asks for one). Returns the GPU
    timeline."""
    n, n_gpus, arrival, wait, wait_big, cross = (jobs.n, jobs.n_gpus, jobs.arrival, jobs.wait,
                                                 jobs.wait_big, jobs.cross)
    events, gpus, akey, end_t, cross_t, finish_s, gpu_s, segs, live = (
        jobs.events, jobs.gpus, jobs.akey, jobs.end_t, jobs.cross_t, jobs.finish_s, jobs.gpu_s,
        jobs.segs, jobs.live)
    arrive, pop = _arriver(jobs), heapq.heappop
    decide, take_crossings, start = _decider(jobs, depth, margin)
    nan, inf = math.nan, math.inf
    free, ai, wseq, t_any = n_gpus, 0, 0, inf
    tl_t, tl_used = [0.0], [0]  # the GPU timeline: times, GPUs in use from then on
    t_call, call, cid = nan, 0, 0
    preempted: list = []  # by the current call
    while True:
        t = events[0][0] if events else inf
        if ai < n and arrival[ai] < t:
            t = arrival[ai]
        if cross and cross[0][0] < t:
            t = cross[0][0]
        if t_any < t:
            t = t_any
        if t == inf:
            break
        changed = t_any == t
        while events and events[0][0] == t:
            i = pop(events)[1]
            if end_t[i] != t:
                continue  # a preempted segment's end, or a copy of one already handled
            end_t[i] = cross_t[i] = nan
            finish_s[i] = t  # (how it ended, every job's planned end, comes from the plan)
            gpu_s[i] += gpus[i] * (t - segs[i][0])
            free += gpus[i]
            live[i] = None
            changed = True
        if cross and cross[0][0] == t and take_crossings(t) and (wait or wait_big):
            changed = True  # a key rose: the victims may differ
        alone = -1
        if ai < n and arrival[ai] == t:
            changed = True
            if (not wait and not wait_big and gpus[ai] <= free
                    and (ai + 1 == n or arrival[ai + 1] != t)):
                # One arrival at an empty queue, and it fits: the call would push it and
                # pop it at once (on Philly, 42% of arrivals), and leave the queue empty.
                alone = ai
                ai += 1
            else:
                ai, wseq = arrive(ai, t, wseq)
        if not changed:
            continue
        call = call + 1 if t == t_call else 0  # the calls at t before this one
        t_call = t
        cid += 1
        if alone >= 0:
            free -= gpus[alone]
            start(alone, akey[alone], t, call, cid)
            t_any = inf
        else:
            free, wseq, t_any = decide(t, call, cid, free, wseq, preempted)
        if record_timeline:
            used = n_gpus - free
            if used != tl_used[-1]:
                if tl_t[-1] == t:
                    tl_used[-1] = used
                else:
                    tl_t.append(t)
                    tl_used.append(used)
        if free == n_gpus and ai >= n and (wait or wait_big):
            raise _left_waiting(scheduler, len(wait) + len(wait_big))
    return tl_t, tl_used


def _left_waiting(scheduler, n_waiting):
    return RuntimeError(f"scheduler {scheduler.name} left {n_waiting} jobs waiting "
                        "on an idle cluster")


def _run_twin(twin, workload, n_gpus, scheduler, depth, margin, restart_overhead_s,
              record_timeline, plan, wall0, thresholds, key_rule):
    """``run`` by the compiled twin: the same arrays, from the same inputs (None: the twin
    gave up, see ``run_kernel``)."""
    grid = np.ascontiguousarray(workload.eval_progress, dtype=np.float64)
    # ``looked < depth`` on counts: the least integer not below depth (any depth >= 1,
    # infinite included, as an int64).
    depth = math.ceil(min(depth, 2**62))
    arrival = np.ascontiguousarray(workload.arrival_s, dtype=np.float64)
    est = np.ascontiguousarray(workload.est_duration_s, dtype=np.float64)
    # (Tiresias' arrival keys are the arrivals, read by the twin's ``queue_key`` as such.)
    akey = np.ascontiguousarray(_arrival_keys(workload, key_rule))
    thr = np.empty(0) if thresholds is None else np.array(thresholds, dtype=np.float64)
    table = np.zeros((1, 1))
    if key_rule == "loss":
        table = np.ascontiguousarray(workload.loss, dtype=np.float64)
    # Fixed dtypes: one compiled signature, loaded from numba's cache.
    start_s, finish_s, gpu_s, n_pre, tl_t, tl_used, n_waiting = twin.run_kernel(
        arrival, np.ascontiguousarray(workload.duration_s, dtype=np.float64),
        np.ascontiguousarray(workload.gpus, dtype=np.int64), est, akey, thr,
        _RULE_IDS[key_rule], np.ascontiguousarray(plan.end_eval, dtype=np.int64), grid,
        int(n_gpus), depth, float(margin), float(restart_overhead_s), bool(record_timeline),
        table)
    if n_waiting == -2:
        return None
    if n_waiting >= 0:
        raise _left_waiting(scheduler, n_waiting)
    return planned_result(workload, plan, grid, start_s=start_s, finish_s=finish_s,
                          gpu_s=gpu_s, n_preemptions=n_pre, tl_t=tl_t, tl_used=tl_used,
                          n_gpus=n_gpus, scheduler=scheduler, wall0=wall0)
