"""Stop points found before the simulation: where each job's own detector stops it.

A per-job detector's decision at a job's eval depends on that job's evals alone (and the
step and progress of that eval), never on the clock, the scheduler or other jobs. So the
eval at which it stops a job, and the checkpoint it keeps, can be found from the job's row
of the workload's tables before any event is simulated; the simulator then needs no
detector call at all, and schedulers that ignore checkpoints need no checkpoint events
(see ``evalstop.sim.engine``).

Rules opt in by declaring ``per_job = True`` (a rule that pools information across jobs,
such as a fleet-wide noise prior, must not, and keeps the event path). A rule may supply a
vectorised ``stop_index`` over all jobs at once (k-decline, cusum-drop, block-cusum, slope,
noise-drop, patience, stopat and loss-plateau do; one that reads the loss or the eval grid
takes them as the keyword parameters ``loss`` and ``progress``); every other per-job rule, and any row an
array leaves (``done`` False), runs its own detector objects job by job here, fed what the
event path feeds them, so the decisions are the same by construction.
``tests/test_sim_fastpath.py`` compares every stop, start and finish with the event path,
and ``tests/test_stop_index_*.py`` each array with the objects.
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import numpy as np

from evalstop.workload.model import Workload


class StopPlan(NamedTuple):
    """Per job: the eval index (0-based) at which the job ends if it runs to that point
    (its stop, or its last eval), whether that end is a detector's stop, and the eval
    index of the checkpoint it then delivers."""

    end_eval: np.ndarray  # int64
    stopped: np.ndarray  # bool
    kept_eval: np.ndarray  # int64


def no_stops(n_jobs: int, n_evals: int) -> StopPlan:
    last = n_evals - 1
    return StopPlan(np.full(n_jobs, last, dtype=np.int64), np.zeros(n_jobs, dtype=bool),
                    np.full(n_jobs, last, dtype=np.int64))


def stop_index(new_detector, obs: np.ndarray, loss: np.ndarray, proxy: np.ndarray,
               progress: np.ndarray, rows: np.ndarray | None = None) -> StopPlan:
    """Where detectors made by ``new_detector`` stop the jobs of ``rows`` (all by default);
    rows not listed run to their last eval. Tables are (job, eval); ``progress`` is the eval
    grid. The rule's vectorised ``stop_index`` is used where it has one, its detector
    objects otherwise."""
    n, m = obs.shape
    plan = no_stops(n, m)
    every = rows is None  # then the tables are read as they are, not copied row by row
    rows = np.arange(n) if every else np.asarray(rows, dtype=np.int64)
    if rows.size == 0 or m == 0:
        return plan
    proto = new_detector()
    vectorised = getattr(proto, "stop_index", None)
    if vectorised is not None:
        # A rule that reads more than the scores names the tables it wants (the loss, the
        # eval grid) as keyword parameters of its stop_index.
        wants = inspect.signature(vectorised).parameters
        extra = {}
        if "loss" in wants:
            extra["loss"] = loss if every else loss[rows]
        if "progress" in wants:
            extra["progress"] = progress
        found = vectorised(obs if every else obs[rows], **extra)
        if found is not None:
            stop_at, kept, done = found
            if every and done.all():  # the common case, without a gather per array
                hit = stop_at >= 0
                return StopPlan(np.where(hit, stop_at, m - 1), hit,
                                np.where(hit, kept, m - 1))
            _apply(plan, rows[done], stop_at[done], kept[done])
            rows = rows[~done]  # rows the vectorised rule leaves to the objects (e.g. NaN)
    _by_objects(plan, new_detector, obs, loss, proxy, progress, rows)
    return plan


def _apply(plan: StopPlan, rows, stop_at, kept) -> None:
    hit = stop_at >= 0
    plan.end_eval[rows[hit]] = stop_at[hit]
    plan.stopped[rows[hit]] = True
    plan.kept_eval[rows[hit]] = kept[hit]


def _by_objects(plan, new_detector, obs, loss, proxy, progress, rows) -> None:
    """The rule's own detector objects, one per job, fed as the event path feeds them:
    step ``j + 1``, the eval, loss and proxy of that eval, and the grid point it sits at."""
    grid = [float(x) for x in progress]
    steps = list(range(1, len(grid) + 1))
    end_eval, stopped, kept_eval = plan
    for i in rows.tolist():
        update = new_detector().update_stop
        for j, (step, x, lo, px, p) in enumerate(zip(steps, obs[i].tolist(), loss[i].tolist(),
                                                    proxy[i].tolist(), grid)):
            d = update(step, x, lo, px, p)
            if d is not None:
                if d.stop:
                    end_eval[i] = j
                    stopped[i] = True
                    kept_eval[i] = j if d.best_step is None else int(d.best_step) - 1
                break


def plannable(scheduler) -> bool:
    """Whether ``plan_for`` gives ``scheduler`` a plan: a base alone, or the overlay with a
    per-job rule that it does not hear itself (not a pooled rule, no ``on_eval`` of its
    own)."""
    from evalstop.schedulers.overlay import EvalStop

    return not isinstance(scheduler, EvalStop) or (
        scheduler.per_job and type(scheduler).on_eval is EvalStop.on_eval)


def plan_for(workload: Workload, scheduler) -> StopPlan | None:
    """The stop plan of ``scheduler`` on ``workload``, or None when its stops cannot be
    planned (a detector that is not per-job, or a scheduler this module does not know)."""
    from evalstop.schedulers.overlay import EvalStop

    n, m = workload.n_jobs, workload.n_evals
    if not plannable(scheduler):
        return None
    if not isinstance(scheduler, EvalStop):
        # A base alone has no detector; a stop its own on_eval might return is still
        # honoured by the engine, which asks it at every checkpoint it needs.
        return no_stops(n, m)
    rows = None if scheduler.job_types is None and scheduler.only_jobs is None else np.arange(n)
    if scheduler.job_types is not None:
        rows = rows[np.isin(workload.type, list(scheduler.job_types))]
    if scheduler.only_jobs is not None:
        rows = rows[np.isin(rows, np.fromiter(scheduler.only_jobs, dtype=np.int64))]
    return stop_index(scheduler.new_detector, workload.eval_obs, workload.loss, workload.proxy,
                      workload.eval_progress, rows)
