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
called in the loop; and a scheduler that needs no checkpoints (FIFO) then gets one event
per job instead of one per eval: the job's end (stop or completion), at the time that
eval's event would have had (``evalstop.sim.ends``). Otherwise (a rule that pools
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

from evalstop import jit
from evalstop.schedulers.base import Scheduler
from evalstop.schedulers.overlay import EvalStop
from evalstop.sim import priority_twin, srtf_loop
from evalstop.sim.ends import run_ends
from evalstop.sim.result import SimResult
from evalstop.sim.stops import plan_for
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
        if plan is not None and not scheduler.needs_checkpoints:
            return run_ends(workload, n_gpus, scheduler, plan, record_timeline, wall0)
        compiled = _compiled(workload, n_gpus, scheduler, restart_overhead_s, record_timeline,
                             plan, wall0)
        if compiled is not None:
            return compiled
        return _run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan,
                    wall0)
    finally:
        if gc_was_on:
            gc.enable()


def _compiled(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0):
    """``_run`` by its compiled twin (``sim.priority_jit``) for a plain priority base with
    planned stops, where the twin pays; None: ``_run`` runs. SRTF-Est keeps its own loop."""
    if plan is None or srtf_loop.fits(scheduler) or priority_twin.plain(scheduler) is None:
        return None
    twin = jit.twin("evalstop.sim.priority_jit", workload.n_jobs, workload.n_evals)
    return None if twin is None else priority_twin.run(
        twin, workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0)


def _run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0):
    if plan is not None and srtf_loop.fits(scheduler):  # SRTF-Est: no checkpoint events
        return srtf_loop.run(workload, n_gpus, scheduler, restart_overhead_s,
                             record_timeline, plan, wall0)
    n, m = workload.n_jobs, workload.n_evals
    grid = [float(x) for x in workload.eval_progress]
    last = m - 1
    dur = workload.duration_s.tolist()
    gpus = workload.gpus.tolist()
    arrival = workload.arrival_s.tolist()
    # Plain lists: indexing them is several times cheaper than indexing numpy arrays.
    # The (job, eval) tables are the exception. Turning every cell into a Python float up
    # front (tolist) took ~25% of a Philly run: the conversion, and then the garbage
    # collector walking those millions of floats' row lists on every full collection; and
    # most jobs are stopped before their last evals are read. A flat float64 memoryview, read
    # at ``i * m + j``, makes a float only for the cells observed, is as cheap to index, and
    # yields the same values.
    obs, loss, proxy = (_flat(workload.eval_obs, (n, m)), _flat(workload.loss, (n, m)),
                        _flat(workload.proxy, (n, m)))
    ids, types, tenants = workload.job_id, workload.type.tolist(), workload.tenant.tolist()
    est = workload.est_duration_s.tolist()

    nan = math.nan
    start_s = [nan] * n
    finish_s = [nan] * n
    stopped = [False] * n
    stop_eval = [-1] * n
    kept_eval = [last] * n
    end_progress = [0.0] * n
    gpu_s = [0.0] * n
    seg_start = [0.0] * n
    seg_p0 = [0.0] * n
    seg_oh = [0.0] * n
    next_eval = [0] * n  # the eval index of each job's next event
    version = [0] * n
    views: list[JobView | None] = [None] * n

    on_eval, submit, schedule = scheduler.on_eval, scheduler.submit, scheduler.schedule
    on_end = scheduler.on_end
    if plan is None:  # the event path: ends come from the scheduler's answers
        end_eval, plan_stop, plan_kept = [last] * n, [False] * n, [last] * n
    else:
        end_eval, plan_stop = plan.end_eval.tolist(), plan.stopped.tolist()
        plan_kept = (plan.kept_eval + 1).tolist()  # as a best step
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
    resched_on_eval = scheduler.reschedule_on_eval
    heap: list = []
    push, pop = heapq.heappush, heapq.heappop
    seq = 0
    free = n_gpus
    ai = 0
    tl_t: list[float] = [0.0]
    tl_used: list[int] = [0]
    inf = math.inf

    def end(i: int, t: float, was_stopped: bool, j: int, best_step) -> None:
        nonlocal free
        v = views[i]
        finish_s[i] = t
        gpu_s[i] += gpus[i] * (t - seg_start[i])
        end_progress[i] = grid[j]
        if was_stopped:
            stopped[i] = True
            stop_eval[i] = j
            kept_eval[i] = j if best_step is None else int(best_step) - 1
        free += gpus[i]
        version[i] += 1
        v.running = False
        v.progress = grid[j]
        on_end(v, t, was_stopped)
        # Only the checkpoint loop calls this; no one needs the history now, and dropping
        # it keeps big traces in memory.
        v.steps = v.evals = v.losses = v.proxies = []

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
                end(i, t, True, j, plan_kept[i])
                changed = True
            elif d is not None and d.stop:
                end(i, t, True, j, d.best_step)
                changed = True
            elif j == last:
                end(i, t, False, j, None)
                changed = True
            else:
                next_eval[i] = j + 1
                seq += 1
                push(heap, (seg_start[i] + seg_oh[i] + (grid[j + 1] - seg_p0[i]) * dur[i],
                            seq, i, version[i]))
                if resched_on_eval:
                    changed = True
        # 2. Arrivals at t join the queue.
        while ai < n and arrival[ai] == t:
            v = views[ai] = JobView(ai, ids[ai], types[ai], tenants[ai], gpus[ai], arrival[ai], est[ai])
            submit(v, t)
            ai += 1
            changed = True
        if not changed:
            continue
        # 3. One scheduling decision for the instant.
        to_start, to_preempt = schedule(t, free)
        if to_preempt:
            restarting = {v.index for v in to_start}
            kept_running = set()
            for v in to_preempt:
                i = v.index
                if not v.running:
                    raise RuntimeError(f"scheduler {scheduler.name} preempted idle job {v.job_id}")
                if i in restarting:  # preempted and restarted at once: it simply keeps running
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
                raise RuntimeError(f"scheduler {scheduler.name} started job {v.job_id} twice")
            free -= gpus[i]
            if free < 0:
                raise RuntimeError(f"scheduler {scheduler.name} over-allocated GPUs at t={t}")
            if start_s[i] != start_s[i]:
                start_s[i] = t
            v.running = True
            p0 = seg_p0[i] = v.progress
            seg_start[i] = t
            seg_oh[i] = restart_overhead_s if v.n_preemptions else 0.0
            version[i] += 1
            seq += 1
            push(heap, (t + seg_oh[i] + (grid[next_eval[i]] - p0) * dur[i], seq, i, version[i]))
        if record_timeline:
            used = n_gpus - free
            if used != tl_used[-1]:
                if tl_t[-1] == t:
                    tl_used[-1] = used
                else:
                    tl_t.append(t)
                    tl_used.append(used)
        # Idle: no GPU in use (every job holds at least one). The heap may still hold stale
        # events of preempted jobs, so it is no test of idleness.
        if free == n_gpus and ai >= n and scheduler.queue_length:
            raise RuntimeError(
                f"scheduler {scheduler.name} left {scheduler.queue_length} jobs waiting "
                "on an idle cluster"
            )

    stop_eval_a = np.array(stop_eval, dtype=np.int64)
    stopped_a = np.array(stopped, dtype=bool)
    # Every job ends, and each of its evals up to its end is observed exactly once (stale
    # events of preempted jobs are not), whichever path ran.
    n_evals_seen = int(np.where(stopped_a, stop_eval_a + 1, m).sum())
    res = SimResult(
        start_s=np.array(start_s),
        finish_s=np.array(finish_s),
        stopped=stopped_a,
        stop_eval=stop_eval_a,
        kept_eval=np.array(kept_eval, dtype=np.int64),
        end_progress=np.array(end_progress),
        gpu_s=np.array(gpu_s),
        n_preemptions=np.array([0 if v is None else v.n_preemptions for v in views], dtype=np.int64),
        timeline_t=np.array(tl_t),
        timeline_used=np.array(tl_used, dtype=np.int64),
        n_gpus=n_gpus,
        scheduler=scheduler.name,
        detector=getattr(scheduler, "detector_spec", None),
        n_events=n_evals_seen + n,
        n_eval_events=n_evals_seen,
        wall_s=time.perf_counter() - wall0,
    )
    res._arrival = workload.arrival_s
    return res
