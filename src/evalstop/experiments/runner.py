"""Run experiments as (point, seed) tasks, in parallel processes, deterministically.

One task = one seed of one point: generate the workload from
``default_rng([base_seed, seed])`` and simulate every method of the point on it. The seed
alone fixes the workload, so the methods of a point, and the points of a sweep, see the
same random draws (paired comparisons, common random numbers). A task sends back a small
list of metric rows; only the few runs an experiment asks to keep (first point, first
seed) come back whole, for the plots. Results are put back in task order, so they do not
depend on the worker count or on which worker finished first.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np

from evalstop.experiments.settings import Settings
from evalstop.experiments.spec import Experiment, Point
from evalstop.metrics.run import run_metrics
from evalstop.parallel import parallel_map

ID_COLUMNS = ("experiment", "point", "method", "x", "seed")


@dataclass(frozen=True)
class Task:
    experiment: str
    point: Point
    seed: int
    settings: Settings
    n_gpus: int
    keep: tuple[str, ...] = ()  # method labels whose Workload/SimResult come back


@dataclass
class KeptRun:
    experiment: str
    point: str
    method: str
    seed: int
    workload: object  # evalstop.workload.Workload
    result: object  # evalstop.sim.result.SimResult


@dataclass
class TaskOutput:
    rows: list[dict]
    kept: list[KeptRun]
    workload_s: float  # time to generate the workload
    sim_s: dict[str, float]  # simulation wall time per method


@dataclass
class ExperimentRun:
    experiment: Experiment
    settings: Settings
    n_gpus: int
    rows: list[dict] = field(default_factory=list)
    kept: list[KeptRun] = field(default_factory=list)
    task_s: float = 0.0  # summed task time (CPU-seconds of work, not wall time)
    n_sims: int = 0
    sim_s: float = 0.0


def make_workload(point: Point, seed: int, settings: Settings, n_gpus: int):
    from evalstop.workload import load_philly, synthetic_workload, trace_workload

    rng = np.random.default_rng([settings.base_seed, seed])
    if point.trace == "philly":  # the trace's jobs; the seed draws types, labels, curves
        table = point.table if point.table is not None else load_philly(point.n_jobs)
        return trace_workload(table, rng, **point.workload)
    return synthetic_workload(rng, n_jobs=point.jobs(settings.n_jobs), n_gpus=n_gpus,
                              **point.workload)


def hacking_jobs(workload) -> frozenset[int]:
    """The oracle's allow-list: indices of the jobs whose hidden label is hacking. Read here,
    by the runner, and handed to oracle methods only (``Method.oracle_hacking_only``)."""
    return frozenset(np.flatnonzero(workload.hacking).tolist())


def run_task(task: Task) -> TaskOutput:
    from evalstop import jit
    from evalstop.sim.engine import simulate, twin_use

    t0 = time.perf_counter()
    wl = make_workload(task.point, task.seed, task.settings, task.n_gpus)
    workload_s = time.perf_counter() - t0
    rows, kept, sim_s = [], [], {}
    scheds = [m.build(hacking_jobs(wl) if m.oracle_hacking_only else None)
              for m in task.point.methods]
    # The compiled loops that the task's runs repay together, loaded before the first.
    jit.expect([twin_use(wl, s) for s in scheds])
    for m, sched in zip(task.point.methods, scheds):
        keep = m.label in task.keep
        res = simulate(wl, task.n_gpus, sched,
                       restart_overhead_s=task.settings.restart_overhead_s,
                       record_timeline=keep)
        sim_s[m.label] = res.wall_s
        x = m.x if m.x is not None else task.point.x
        rows.append({"experiment": task.experiment, "point": task.point.label,
                     "method": m.label, "x": x, "seed": task.seed, **run_metrics(wl, res)})
        if keep:
            kept.append(KeptRun(task.experiment, task.point.label, m.label, task.seed, wl, res))
    return TaskOutput(rows, kept, workload_s, sim_s)


def plan(experiments: list[Experiment], settings: Settings) -> list[Task]:
    tasks = []
    for exp in experiments:
        n_gpus = exp.n_gpus if exp.n_gpus is not None else settings.n_gpus
        for pi, point in enumerate(exp.points):
            for seed in range(exp.seeds(settings.n_seeds)):
                keep = exp.keep if (pi == 0 and seed == 0) else ()
                tasks.append(Task(exp.name, point, seed, settings, point.n_gpus or n_gpus,
                                  keep))
    return tasks


def default_workers(n_tasks: int) -> int:
    return max(1, min(os.cpu_count() or 1, n_tasks))


def run_tasks(tasks: list[Task], *, workers: int | None = None, progress: bool = True,
              desc: str = "simulating") -> list[TaskOutput]:
    """Run tasks and return their outputs in task order. ``workers=1`` runs in this
    process (no pickling, easiest to debug); ``None`` uses every core, capped at the task
    count."""
    if workers is None:
        workers = default_workers(len(tasks))
    return parallel_map(run_task, tasks, workers=workers, progress=progress, desc=desc)


def run_experiments(experiments: list[Experiment], settings: Settings, *,
                    workers: int | None = None, progress: bool = True) -> dict[str, ExperimentRun]:
    """Run every experiment's tasks in one process pool (so the cores stay busy across
    experiments) and gather the outputs per experiment, in task order."""
    tasks = plan(experiments, settings)
    outputs = run_tasks(tasks, workers=workers, progress=progress)
    runs = {
        e.name: ExperimentRun(e, settings, e.n_gpus if e.n_gpus is not None else settings.n_gpus)
        for e in experiments
    }
    for task, out in zip(tasks, outputs):
        run = runs[task.experiment]
        run.rows.extend(out.rows)
        run.kept.extend(out.kept)
        run.task_s += out.workload_s + sum(out.sim_s.values())
        run.sim_s += sum(out.sim_s.values())
        run.n_sims += len(out.sim_s)
    return runs
