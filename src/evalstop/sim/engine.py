"""The discrete-event simulator: a heap of eval-checkpoint events, arrivals in time order,
a pool of ``n_gpus`` GPU slots, and a scheduler deciding who runs.

At one instant the order is fixed: eval checkpoints (and the completions and stops they
cause) free GPUs first, then arrivals join the queue, then the scheduler is asked once.
A job is evaluated when its progress reaches each point of the workload's eval grid; the
last point (progress 1.0) is its completion. A preempted job keeps its progress and pays
``restart_overhead_s`` (GPUs held, no progress) when it next starts.

The scheduler sees ``JobView``s only. The simulator alone reads the hidden workload.

Two paths, one result. When the EvalStop overlay's rule is per-job (every shipped rule),
each job's stop point is found before the run (``evalstop.sim.stops``), so no detector is
called in the loop; a plain priority base then runs on the planned loop
(``evalstop.sim.planned``: an event per run of a job, not per eval), and a scheduler that
needs no checkpoints (FIFO) gets one event per job, the job's end (stop or completion), at
the time that eval's event would have had (``evalstop.sim.ends``). Otherwise (a rule that pools
jobs, or ``plan_stops=False``) every eval is an event and the detector is asked at each.
The cyclic garbage collector is paused during the loop: the loop makes no cycles, and a
collector scanning a heap that grows with the trace made big runs superlinear.
"""

from __future__ import annotations

import gc
import heapq
import math
import time

import numpy as np

from evalstop.schedulers.base import Scheduler
from evalstop.schedulers.overlay import EvalStop
from evalstop.sim import planned
from evalstop.sim.ends import run_ends
from evalstop.sim.result import SimResult
from evalstop.sim.stops import plan_for, plannable
from evalstop.sim.view import JobView
from evalstop.workload.model import Workload


def check_fits(workload: Workload, n_gpus: int) -> None:
    if n_gpus < 1:
        raise ValueError(f"the cluster needs at least one GPU, got {n_gpus}")
    if workload.n_jobs and int(workload.gpus.max()) > n_gpus:
        i = int(np.argmax(workload.gpus))
        raise ValueError(
            f"job {workload.job_id[i]!r} asks for {int(workload.gpus[i])} GPUs "
            f"but the cluster has {n_gpus}"
        )


def _flat(table: np.ndarray, shape: tuple[int, int]) -> memoryview:
    """A (job, eval) table as a flat read-only view of its float64 values, row-major."""
    if table.shape != shape:  # flat indexing would not notice a short row
        raise ValueError(f"workload table has shape {table.shape}, not {shape}")
    return memoryview(np.ascontiguousarray(table, dtype=np.float64).reshape(-1)).toreadonly()


def simulate(
    workload: Workload,
    n_gpus: int,
    scheduler: Scheduler,
    *,
    restart_overhead_s: float = 120.0,
    record_timeline: bool = True,
    plan_stops: bool = True,
) -> SimResult:
    """Run ``workload`` on ``n_gpus`` GPUs under ``scheduler`` (a fresh one per run).
    ``plan_stops=False`` forces the event path (the detector asked at every eval); the
    result is the same either way."""
    if not restart_overhead_s >= 0:
        raise ValueError(f"restart_overhead_s must be >= 0, got {restart_overhead_s}")
    check_fits(workload, n_gpus)
    scheduler.bind(n_gpus=n_gpus, restart_overhead_s=restart_overhead_s)
    wall0 = time.perf_counter()
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        plan = plan_for(workload, scheduler) if plan_stops else None
        key_rule = None if plan is None else planned.rule(scheduler, workload)
        if key_rule is not None:
            return planned.run(workload, n_gpus, scheduler, restart_overhead_s,
                               record_timeline, plan, wall0, key_rule)
        if plan is not None and not scheduler.needs_checkpoints:
            return run_ends(workload, n_gpus, scheduler, plan, record_timeline, wall0)
        return _run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan,
                    wall0)
    finally:
        if gc_was_on:
            gc.enable()


def twin_use(workload, scheduler, plan_stops: bool = True):
    """The compiled loop that ``simulate`` would ask ``evalstop.jit`` for on this run, as
    ``(name, n_jobs, n_evals)``, or None (for ``jit.expect``): the planned loop's twin, by
    key rule, for a plain priority base with planned stops."""
    if not (plan_stops and plannable(scheduler)):
        return None
    rule = planned.rule(scheduler, workload)
    return None if rule is None else (planned.TWINS[rule], workload.n_jobs, 0)


def _run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0):
    """The checkpoint loop: every eval an event."""
    jobs = _Jobs(workload, plan)
    tl_t, tl_used = _loop(jobs, n_gpus, scheduler, _hooks(scheduler, plan),
                          restart_overhead_s, record_timeline)
    return _result(jobs, workload, tl_t, tl_used, n_gpus, scheduler, wall0)


class _Jobs:
    """The workload's columns and each job's state in the checkpoint loop, as plain lists:
    indexing them is several times cheaper than indexing numpy arrays.

    The (job, eval) tables are the exception. Turning every cell into a Python float up
    front (tolist) took ~25% of a Philly run: the conversion, and then the garbage
    collector walking those millions of floats' row lists on every full collection; and
    most jobs are stopped before their last evals are read. A flat float64 memoryview, read
    at ``i * m + j``, makes a float only for the cells observed, is as cheap to index, and
    yields the same values."""

    __slots__ = ("n", "m", "last", "grid", "dur", "gpus", "arrival", "obs", "loss", "proxy",
                 "ids", "types", "tenants", "est", "start_s", "finish_s", "stopped",
                 "stop_eval", "kept_eval", "end_progress", "gpu_s", "seg_start", "seg_p0",
                 "seg_oh", "next_eval", "version", "views", "end_eval", "plan_stop",
                 "plan_kept")

    def __init__(self, workload: Workload, plan):
        n, m = self.n, self.m = workload.n_jobs, workload.n_evals
        last = self.last = m - 1
        self.grid = [float(x) for x in workload.eval_progress]
        self.dur = workload.duration_s.tolist()
        self.gpus = workload.gpus.tolist()
        self.arrival = workload.arrival_s.tolist()
        self.obs, self.loss, self.proxy = (_flat(workload.eval_obs, (n, m)),
                                           _flat(workload.loss, (n, m)),
                                           _flat(workload.proxy, (n, m)))
        self.ids, self.types = workload.job_id, workload.type.tolist()
        self.tenants, self.est = workload.tenant.tolist(), workload.est_duration_s.tolist()
        self.start_s, self.finish_s = [math.nan] * n, [math.nan] * n
        self.stopped, self.stop_eval, self.kept_eval = [False] * n, [-1] * n, [last] * n
        self.end_progress, self.gpu_s = [0.0] * n, [0.0] * n
        self.seg_start, self.seg_p0, self.seg_oh = [0.0] * n, [0.0] * n, [0.0] * n
        self.next_eval = [0] * n  # the eval index of each job's next event
        self.version = [0] * n
        self.views: list[JobView | None] = [None] * n
        if plan is None:  # the event path: ends come from the scheduler's answers
            self.end_eval, self.plan_stop, self.plan_kept = [last] * n, [False] * n, [last] * n
        else:
            self.end_eval, self.plan_stop = plan.end_eval.tolist(), plan.stopped.tolist()
            self.plan_kept = (plan.kept_eval + 1).tolist()  # as a best step


def _hooks(scheduler, plan):
    """``on_eval`` (None when not called), ``submit``, ``schedule`` and ``on_end`` to call."""
    on_eval, submit, schedule = scheduler.on_eval, scheduler.submit, scheduler.schedule
    on_end = scheduler.on_end
    if plan is not None:
        base = getattr(scheduler, "base", scheduler)
        # The detector is not asked (its stops are planned); the base still is, if it
        # listens.
        on_eval = base.on_eval if type(base).on_eval is not Scheduler.on_eval else None
        if base is not scheduler and all(
                getattr(type(scheduler), f) is getattr(EvalStop, f)
                for f in ("submit", "schedule", "on_end")):
            # The overlay only forwards these (and drops detectors it never made here):
            # a call less per job and per instant.
            submit, schedule, on_end = base.submit, base.schedule, base.on_end
    return on_eval, submit, schedule, on_end


def _ender(jobs: _Jobs, on_end):
    """``end(i, t, was_stopped, j, best_step)``: job i ends at its eval j; returns the GPUs
    it frees."""
    views, finish_s, gpu_s, gpus, seg_start = (jobs.views, jobs.finish_s, jobs.gpu_s,
                                               jobs.gpus, jobs.seg_start)
    end_progress, grid, stopped, stop_eval = (jobs.end_progress, jobs.grid, jobs.stopped,
                                              jobs.stop_eval)
    kept_eval, version = jobs.kept_eval, jobs.version

    def end(i: int, t: float, was_stopped: bool, j: int, best_step) -> int:
        v = views[i]
        finish_s[i] = t
        gpu_s[i] += gpus[i] * (t - seg_start[i])
        end_progress[i] = grid[j]
        if was_stopped:
            stopped[i] = True
            stop_eval[i] = j
            kept_eval[i] = j if best_step is None else int(best_step) - 1
        version[i] += 1
        v.running = False
        v.progress = grid[j]
        on_end(v, t, was_stopped)
        # Only the checkpoint loop calls this; no one needs the history now, and dropping
        # it keeps big traces in memory.
        v.steps = v.evals = v.losses = v.proxies = []
        return gpus[i]

    return end


def _loop(jobs: _Jobs, n_gpus, scheduler, hooks, restart_overhead_s, record_timeline):
    """The event loop; returns the GPU timeline (times, GPUs in use)."""
    n, m, last, grid, dur, gpus, arrival = (jobs.n, jobs.m, jobs.last, jobs.grid, jobs.dur,
                                            jobs.gpus, jobs.arrival)
    obs, loss, proxy, ids, types, tenants, est = (jobs.obs, jobs.loss, jobs.proxy, jobs.ids,
                                                  jobs.types, jobs.tenants, jobs.est)
    seg_start, seg_p0, seg_oh, next_eval, version, views = (
        jobs.seg_start, jobs.seg_p0, jobs.seg_oh, jobs.next_eval, jobs.version, jobs.views)
    gpu_s, end_eval, plan_stop, plan_kept = (jobs.gpu_s, jobs.end_eval, jobs.plan_stop,
                                             jobs.plan_kept)
    on_eval, submit, schedule, on_end = hooks
    end = _ender(jobs, on_end)
    heap: list = []
    apply = _applier(jobs, scheduler, heap, restart_overhead_s)
    tl_t, tl_used, mark = _timeline()
    resched_on_eval = scheduler.reschedule_on_eval
    push, pop = heapq.heappush, heapq.heappop
    seq, ai, free, inf = 0, 0, n_gpus, math.inf
    while True:
        t_heap = heap[0][0] if heap else inf
        t_arr = arrival[ai] if ai < n else inf
        t = t_heap if t_heap <= t_arr else t_arr  # noqa: FURB136 (min() is slower here)
        if t == inf:
            break
        changed = False
        # 1. Eval checkpoints at t, with the completions and stops they bring.
        while heap and heap[0][0] == t:
            _, _, i, ver = pop(heap)
            if ver != version[i]:
                continue
            j = next_eval[i]
            d = None
            v = views[i]
            v.progress = grid[j]
            v.attained_gpu_s = gpu_s[i] + gpus[i] * (t - seg_start[i])
            cell = i * m + j
            v.steps.append(j + 1)
            v.evals.append(obs[cell])
            v.losses.append(loss[cell])
            v.proxies.append(proxy[cell])
            if on_eval is not None:
                d = on_eval(v, t)
            if j == end_eval[i] and plan_stop[i]:  # a planned stop
                free += end(i, t, True, j, plan_kept[i])
            elif d is not None and d.stop:
                free += end(i, t, True, j, d.best_step)
            elif j == last:
                free += end(i, t, False, j, None)
            else:
                next_eval[i] = j + 1
                seq += 1
                push(heap, (seg_start[i] + seg_oh[i] + (grid[j + 1] - seg_p0[i]) * dur[i],
                            seq, i, version[i]))
                if resched_on_eval:
                    changed = True
                continue
            changed = True
        # 2. Arrivals at t join the queue.
        while ai < n and arrival[ai] == t:
            v = views[ai] = JobView(ai, ids[ai], types[ai], tenants[ai], gpus[ai],
                                    arrival[ai], est[ai])
            submit(v, t)
            ai += 1
            changed = True
        if not changed:
            continue
        # 3. One scheduling decision for the instant.
        to_start, to_preempt = schedule(t, free)
        if to_start or to_preempt:
            free, seq = apply(to_start, to_preempt, t, free, seq)
        if record_timeline and n_gpus - free != tl_used[-1]:
            mark(t, n_gpus - free)
        # Idle: no GPU in use (every job holds at least one). The heap may still hold stale
        # events of preempted jobs, so it is no test of idleness.
        if free == n_gpus and ai >= n and scheduler.queue_length:
            raise RuntimeError(f"scheduler {scheduler.name} left {scheduler.queue_length} "
                               "jobs waiting on an idle cluster")
    return tl_t, tl_used


def _applier(jobs: _Jobs, scheduler, heap, restart_overhead_s):
    """``apply(to_start, to_preempt, t, free, seq)``: the scheduler's answer at t, the
    preemptions first (a job preempted and restarted at once simply keeps running), then
    the starts, each with its next eval's event; returns the free GPUs and the event
    counter."""
    finish_s, start_s, gpus, seg_p0, seg_start, seg_oh, version, grid, next_eval, dur = (
        jobs.finish_s, jobs.start_s, jobs.gpus, jobs.seg_p0, jobs.seg_start, jobs.seg_oh,
        jobs.version, jobs.grid, jobs.next_eval, jobs.dur)
    gpu_s, push, name = jobs.gpu_s, heapq.heappush, scheduler.name

    def apply(to_start, to_preempt, t, free, seq):
        if to_preempt:
            restarting = {v.index for v in to_start}
            kept_running = set()
            for v in to_preempt:
                i = v.index
                if not v.running:
                    raise RuntimeError(f"scheduler {name} preempted idle job {v.job_id}")
                if i in restarting:
                    restarting.discard(i)
                    kept_running.add(i)
                    continue
                p = seg_p0[i] + max(0.0, t - seg_start[i] - seg_oh[i]) / dur[i]
                v.progress = min(p, grid[next_eval[i]])
                gpu_s[i] += gpus[i] * (t - seg_start[i])
                version[i] += 1
                v.running = False
                v.n_preemptions += 1
                free += gpus[i]
            # Only those jobs drop out of the starts; any other running job in ``to_start``
            # is a double start, reported below.
            if kept_running:
                to_start = [v for v in to_start if v.index not in kept_running]
        for v in to_start:
            i = v.index
            if v.running or finish_s[i] == finish_s[i]:
                raise RuntimeError(f"scheduler {name} started job {v.job_id} twice")
            free -= gpus[i]
            if free < 0:
                raise RuntimeError(f"scheduler {name} over-allocated GPUs at t={t}")
            if start_s[i] != start_s[i]:
                start_s[i] = t
            v.running = True
            p0 = seg_p0[i] = v.progress
            seg_start[i] = t
            seg_oh[i] = restart_overhead_s if v.n_preemptions else 0.0
            version[i] += 1
            seq += 1
            push(heap, (t + seg_oh[i] + (grid[next_eval[i]] - p0) * dur[i], seq, i,
                        version[i]))
        return free, seq

    return apply


def _timeline():
    """The GPU timeline (times, GPUs in use from then on) and ``mark(t, used)``, called
    when the GPUs in use at t differ from the last point's."""
    tl_t: list[float] = [0.0]
    tl_used: list[int] = [0]

    def mark(t, used):
        if tl_t[-1] == t:
            tl_used[-1] = used
        else:
            tl_t.append(t)
            tl_used.append(used)

    return tl_t, tl_used, mark


def _result(jobs: _Jobs, workload, tl_t, tl_used, n_gpus, scheduler, wall0) -> SimResult:
    stop_eval_a = np.array(jobs.stop_eval, dtype=np.int64)
    stopped_a = np.array(jobs.stopped, dtype=bool)
    # Every job ends, and each of its evals up to its end is observed exactly once (stale
    # events of preempted jobs are not), whichever path ran.
    n_evals_seen = int(np.where(stopped_a, stop_eval_a + 1, jobs.m).sum())
    res = SimResult(
        start_s=np.array(jobs.start_s),
        finish_s=np.array(jobs.finish_s),
        stopped=stopped_a,
        stop_eval=stop_eval_a,
        kept_eval=np.array(jobs.kept_eval, dtype=np.int64),
        end_progress=np.array(jobs.end_progress),
        gpu_s=np.array(jobs.gpu_s),
        n_preemptions=np.array([0 if v is None else v.n_preemptions for v in jobs.views],
                               dtype=np.int64),
        timeline_t=np.array(tl_t),
        timeline_used=np.array(tl_used, dtype=np.int64),
        n_gpus=n_gpus,
        scheduler=scheduler.name,
        detector=getattr(scheduler, "detector_spec", None),
        n_events=n_evals_seen + jobs.n,
        n_eval_events=n_evals_seen,
        wall_s=time.perf_counter() - wall0,
    )
    res._arrival = workload.arrival_s
    return res
