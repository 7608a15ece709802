"""Which runs the compiled checkpoint loop (``evalstop.sim.priority_jit``) may take, and
its call: a plain LossAware, Tiresias, SRTF-Est or SJF-Est base (alone or under the plain
overlay) with planned stops, in a fresh state, whose key rule has a compiled form
(``PriorityScheduler.twin_key``) and that needs checkpoints. Anything else (a subclass,
a patched method, a rule without a plan) keeps the Python loop, the checkpoint loop
``engine._run``. The planned loop (``sim.planned``) takes the plain SRTF-Est, Tiresias
and SJF-Est first, with its own twin.

Imports no numba: ``engine`` asks ``plain`` first, and ``evalstop.jit`` whether the twin
pays, before the twin is loaded.
"""

from __future__ import annotations

import math

import numpy as np

from evalstop.schedulers.loss_aware import LossAware
from evalstop.schedulers.overlay import plain_base
from evalstop.schedulers.sjf import SJFEst
from evalstop.schedulers.srtf import SRTFEst
from evalstop.schedulers.tiresias import Tiresias
from evalstop.sim import planned
from evalstop.sim.result import planned_result

_RULES = {"remaining": 0, "levels": 1, "loss-drop": 2, "fixed": 3}


def plain(scheduler):
    """``scheduler``'s base when the twin makes its decisions: exactly one of the four
    classes, unpatched, not yet used; else None."""
    for cls in (LossAware, Tiresias, SRTFEst, SJFEst):
        base = plain_base(scheduler, cls, planned._HOOKS)
        if base is not None:
            fresh = not (base._front or base._wait or base._running or base._worst or base._checkpointed)
            return base if fresh else None
    return None


def run(twin, workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan,
        wall0):
    """``engine._run`` by the twin for a scheduler that is ``plain``, or None when its key
    rule has no compiled form here (the Python loop then runs)."""
    base = plain(scheduler)
    rule = None if base is None else base.twin_key(workload)
    if rule is None:
        return None
    name, values = rule
    n, m = workload.n_jobs, workload.n_evals
    thresholds = values if name == "levels" else np.zeros(0)
    table = workload.loss if name == "loss-drop" else np.zeros((1, 1))
    if name == "loss-drop" and table.shape != (n, m):
        raise ValueError(f"loss table has shape {table.shape}, not {(n, m)}")
    grid = np.ascontiguousarray(workload.eval_progress, dtype=np.float64)
    # ``looked < depth`` on counts: the least integer not below depth (any depth >= 1,
    # infinite included, as an int64).
    depth = math.ceil(min(base.depth, 2**62))
    start_s, finish_s, gpu_s, n_pre, tl_t, tl_used, n_waiting, _ = twin.run_kernel(
        np.ascontiguousarray(workload.arrival_s, dtype=np.float64),
        np.ascontiguousarray(workload.duration_s, dtype=np.float64),
        np.ascontiguousarray(workload.gpus, dtype=np.int64),
        np.ascontiguousarray(workload.est_duration_s, dtype=np.float64),
        np.ascontiguousarray(plan.end_eval, dtype=np.int64), grid,
        np.ascontiguousarray(thresholds, dtype=np.float64),
        np.ascontiguousarray(table, dtype=np.float64), _RULES[name],
        int(bool(base.preempt_on_arrival)), int(bool(base.preempt_at_checkpoint)),
        bool(scheduler.reschedule_on_eval), int(n_gpus), depth, float(base.margin),
        float(restart_overhead_s), bool(record_timeline))
    if n_waiting >= 0:
        raise planned._left_waiting(scheduler, n_waiting)
    return planned_result(workload, plan, grid, start_s=start_s, finish_s=finish_s,
                          gpu_s=gpu_s, n_preemptions=n_pre, tl_t=tl_t, tl_used=tl_used,
                          n_gpus=n_gpus, scheduler=scheduler, wall0=wall0)
