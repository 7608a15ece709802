"""The simulator's loop when only job ends matter: every stop is planned and the scheduler
needs no checkpoints (FIFO). Each job has one event, its end; the rest of the result
follows from the start times and the plan, so it is computed with numpy after the loop.

Same result as the checkpoint loop of ``evalstop.sim.engine`` (``tests/test_sim_fastpath.py``
compares every field). A job starts once, from progress 0 and without overhead, so its end
event's time ``t + 0.0 + (grid[end] - 0.0) * dur`` is ``t + grid[end] * dur``, bit for bit;
``grid[end] * dur`` is the same product in numpy as in Python, so it is computed for all
jobs at once, and the finish times are the starts plus it, after the loop, as the loop
would have added them. Ends at one instant are told to the scheduler in job order.

The scheduler is not asked at an instant when every GPU is busy: one that needs no
checkpoints may not preempt, and every job needs a GPU, so it could start nothing. A
``JobView`` is made for every job before the loop (one ``map`` call; the scheduler still
meets each at its arrival), and a scheduler whose ``on_end`` is the base class's (which
does nothing) is not called at ends.

Plain FIFO (alone or under the plain overlay) gets the loop with its rule written in
(``_fifo_starts``): the queue of job indices, its head blocking the rest, no ``JobView``
and no call per event. A subclass or a patched method keeps the general loop; the tests
compare both with the checkpoint loop.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

import numpy as np

from evalstop.schedulers.base import Scheduler
from evalstop.schedulers.fifo import FIFO
from evalstop.schedulers.overlay import EvalStop, plain_base
from evalstop.sim.result import planned_result
from evalstop.sim.stops import StopPlan
from evalstop.sim.view import JobView


class _View(JobView):
    """A ``JobView`` whose eval history stays empty (no checkpoint is simulated): empty
    tuples, not four new lists per job."""

    __slots__ = ()

    def __init__(self, index, job_id, type, tenant, gpus, arrival_s, est_duration_s):
        self.index = index
        self.job_id = job_id
        self.type = type
        self.tenant = tenant
        self.gpus = gpus
        self.arrival_s = arrival_s
        self.est_duration_s = est_duration_s
        self.progress = 0.0
        self.steps = self.evals = self.losses = self.proxies = ()
        self.attained_gpu_s = 0.0
        self.n_preemptions = 0
        self.running = False


def _callbacks(scheduler):
    """``submit``, ``schedule`` and ``on_end`` (None when it does nothing) to call: the
    base's own when the overlay only forwards them (its detectors are not made here)."""
    base = getattr(scheduler, "base", scheduler)
    owner = scheduler
    if base is not scheduler and all(getattr(type(scheduler), f) is getattr(EvalStop, f)
                                     for f in ("submit", "schedule", "on_end")):
        owner = base
    on_end = None if type(owner).on_end is Scheduler.on_end else owner.on_end
    return owner.submit, owner.schedule, on_end


def _plain_fifo(scheduler) -> bool:
    """Whether ``scheduler`` is FIFO exactly, alone or under the plain overlay."""
    return plain_base(scheduler, FIFO, ("bind", "submit", "schedule", "on_end")) is not None


def _fifo_starts(n_gpus: int, arrival: list, gpus: list, run_s: list, record_timeline: bool):
    """``run_ends``'s loop with ``FIFO``'s rule written in: start times and timeline."""
    n = len(arrival)
    nan, inf = math.nan, math.inf
    start_s = [nan] * n
    heap: list = []
    push, pop = heapq.heappush, heapq.heappop
    queue: deque = deque()
    free, ai = n_gpus, 0
    tl_t: list[float] = [0.0]
    tl_used: list[int] = [0]
    while True:
        t_heap = heap[0][0] if heap else inf
        t_arr = arrival[ai] if ai < n else inf
        t = t_heap if t_heap <= t_arr else t_arr  # noqa: FURB136
        if t == inf:
            break
        while heap and heap[0][0] == t:
            free += gpus[pop(heap)[1]]
        while ai < n and arrival[ai] == t:
            queue.append(ai)
            ai += 1
        if free:  # as run_ends: not asked with every GPU busy
            while queue and gpus[queue[0]] <= free:
                i = queue.popleft()
                free -= gpus[i]
                start_s[i] = t
                push(heap, (t + run_s[i], i))
        if record_timeline:
            used = n_gpus - free
            if used != tl_used[-1]:
                if tl_t[-1] == t:
                    tl_used[-1] = used
                else:
                    tl_t.append(t)
                    tl_used.append(used)
        if free == n_gpus and ai >= n and queue:
            raise RuntimeError(f"scheduler fifo left {len(queue)} jobs waiting on an idle "
                               "cluster")
    return start_s, tl_t, tl_used


def run_ends(workload, n_gpus: int, scheduler, plan: StopPlan, record_timeline: bool,
             wall0: float):
    n, m = workload.n_jobs, workload.n_evals
    for name in ("eval_obs", "loss", "proxy"):
        if getattr(workload, name).shape != (n, m):
            raise ValueError(f"workload table has shape {getattr(workload, name).shape}, "
                             f"not {(n, m)}")
    grid = np.asarray(workload.eval_progress, dtype=np.float64)
    end_eval = plan.end_eval
    end_grid = grid[end_eval]
    run_s = (end_grid * workload.duration_s).tolist()  # from a job's start to its end event
    gpus = workload.gpus.tolist()
    arrival = workload.arrival_s.tolist()
    if _plain_fifo(scheduler):
        start_s, tl_t, tl_used = _fifo_starts(n_gpus, arrival, gpus, run_s, record_timeline)
    else:
        # Every job's view made at once (map makes them faster than one by one in the
        # loop); a scheduler still meets each only when it arrives.
        views = list(map(_View, range(n), workload.job_id, workload.type.tolist(),
                         workload.tenant.tolist(), gpus, arrival,
                         workload.est_duration_s.tolist()))
        start_s, tl_t, tl_used = _general_starts(
            n_gpus, scheduler, views, arrival, gpus, run_s, end_grid.tolist(),
            plan.stopped.tolist(), record_timeline)
    return _result(workload, plan, grid, start_s, run_s, tl_t, tl_used, n_gpus, scheduler,
                   wall0)


def _general_starts(n_gpus: int, scheduler, views: list, arrival: list, gpus: list,
                    run_s: list, end_progress: list, plan_stop: list, record_timeline: bool):
    """``run_ends``'s loop for any scheduler that needs no checkpoints: start times and
    timeline."""
    n = len(arrival)
    submit, schedule, on_end = _callbacks(scheduler)
    name = scheduler.name

    nan, inf = math.nan, math.inf
    start_s = [nan] * n
    heap: list = []
    push, pop = heapq.heappush, heapq.heappop
    free, ai = n_gpus, 0
    tl_t: list[float] = [0.0]
    tl_used: list[int] = [0]
    while True:
        t_heap = heap[0][0] if heap else inf
        t_arr = arrival[ai] if ai < n else inf
        t = t_heap if t_heap <= t_arr else t_arr  # noqa: FURB136 (min() is slower here)
        if t == inf:
            break
        while heap and heap[0][0] == t:
            i = pop(heap)[1]
            v = views[i]
            free += gpus[i]
            v.running = False
            v.progress = end_progress[i]
            if on_end is not None:
                on_end(v, t, plan_stop[i])
        while ai < n and arrival[ai] == t:
            submit(views[ai], t)
            ai += 1
        if free:  # with every GPU busy it could neither start nor preempt a job
            to_start, to_preempt = schedule(t, free)
            if to_preempt:
                raise RuntimeError(f"scheduler {name} preempted a job but declares "
                                   "needs_checkpoints = False (no preemption)")
            for v in to_start:
                i = v.index
                if v.running or start_s[i] == start_s[i]:
                    raise RuntimeError(f"scheduler {name} started job {v.job_id} twice")
                free -= gpus[i]
                if free < 0:
                    raise RuntimeError(f"scheduler {name} over-allocated GPUs at t={t}")
                start_s[i] = t
                v.running = True
                push(heap, (t + run_s[i], i))
        if record_timeline:
            used = n_gpus - free
            if used != tl_used[-1]:
                if tl_t[-1] == t:
                    tl_used[-1] = used
                else:
                    tl_t.append(t)
                    tl_used.append(used)
        if free == n_gpus and ai >= n and scheduler.queue_length:
            raise RuntimeError(f"scheduler {name} left {scheduler.queue_length} jobs waiting "
                               "on an idle cluster")
    return start_s, tl_t, tl_used


def _result(workload, plan, grid, start_s, run_s, tl_t, tl_used, n_gpus, scheduler, wall0):
    start = np.array(start_s)
    finish = start + np.array(run_s)  # the end events' times, as pushed
    return planned_result(workload, plan, grid, start_s=start, finish_s=finish,
                          gpu_s=workload.gpus * (finish - start),
                          n_preemptions=np.zeros(workload.n_jobs, dtype=np.int64), tl_t=tl_t,
                          tl_used=tl_used, n_gpus=n_gpus, scheduler=scheduler, wall0=wall0)
