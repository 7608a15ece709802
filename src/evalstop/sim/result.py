"""What one simulation run produced, per job and for the cluster."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SimResult:
    start_s: np.ndarray  # float64: first start (NaN if never started)
    finish_s: np.ndarray  # float64: completion or stop time
    stopped: np.ndarray  # bool: ended by a detector
    stop_eval: np.ndarray  # int64: eval index (0-based) of the stop, -1 if not stopped
    kept_eval: np.ndarray  # int64: checkpoint delivered: best eval if stopped, else the last
    end_progress: np.ndarray  # float64: training progress when the job ended
    gpu_s: np.ndarray  # float64: GPU-seconds used, restart overheads included
    n_preemptions: np.ndarray  # int64
    timeline_t: np.ndarray  # float64: times at which GPUs in use changed
    timeline_used: np.ndarray  # int64: GPUs in use from that time on
    n_gpus: int
    scheduler: str
    detector: str | None
    n_events: int = 0
    n_eval_events: int = 0
    wall_s: float = 0.0
    meta: dict = field(default_factory=dict)

    @property
    def jct_s(self) -> np.ndarray:
        return self.finish_s - self._arrival

    _arrival: np.ndarray = field(default=None, repr=False)  # set by the simulator


def planned_result(workload, plan, grid, *, start_s, finish_s, gpu_s, n_preemptions, tl_t,
                   tl_used, n_gpus, scheduler, wall0) -> SimResult:
    """The result of a loop in which every job ran to its planned end (``sim.stops``): the
    stop, kept checkpoint, end progress and eval counts come from the plan, the rest from
    the loop. ``grid`` is the workload's eval grid as a float64 array."""
    last = workload.n_evals - 1
    stopped = np.array(plan.stopped, dtype=bool)
    end_eval = np.asarray(plan.end_eval, dtype=np.int64)
    # Each job's evals up to its end are observed; the end is its stop or its last eval.
    n_evals_seen = int((end_eval + 1).sum())
    res = SimResult(
        start_s=start_s,
        finish_s=finish_s,
        stopped=stopped,
        stop_eval=np.where(stopped, end_eval, -1).astype(np.int64),
        kept_eval=np.where(stopped, plan.kept_eval, last).astype(np.int64),
        end_progress=grid[end_eval],
        gpu_s=gpu_s,
        n_preemptions=n_preemptions,
        timeline_t=np.array(tl_t),
        timeline_used=np.array(tl_used, dtype=np.int64),
        n_gpus=n_gpus,
        scheduler=scheduler.name,
        detector=getattr(scheduler, "detector_spec", None),
        n_events=n_evals_seen + workload.n_jobs,
        n_eval_events=n_evals_seen,
        wall_s=time.perf_counter() - wall0,
    )
    res._arrival = workload.arrival_s
    return res
