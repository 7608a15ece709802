"""A workload: jobs as columns (struct of arrays), hidden fields included.

Only the simulator and the metrics read a ``Workload``. Schedulers and detectors see a
``JobView`` (``evalstop.sim.view``), which has none of the hidden fields.

Every job has the same eval grid ``eval_progress`` (progress fractions in (0, 1], strictly
increasing, the last one 1.0): the job is evaluated when its training progress reaches each
point. Row ``i`` of the 2-D arrays is job ``i``; column ``j`` is its ``j``-th eval.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

JOB_TYPES = ("lora", "dpo", "rlhf")


@dataclass
class Workload:
    job_id: list[str]
    type: np.ndarray  # str, one of JOB_TYPES (or a trace's own type name)
    tenant: np.ndarray  # str
    gpus: np.ndarray  # int64 >= 1
    arrival_s: np.ndarray  # float64 >= 0, non-decreasing
    duration_s: np.ndarray  # float64 > 0: true run time on `gpus` GPUs, uninterrupted (hidden)
    est_duration_s: np.ndarray  # float64 > 0: the noisy estimate schedulers may see
    eval_progress: np.ndarray  # float64 (n_evals,)
    eval_obs: np.ndarray  # float64 (n_jobs, n_evals): observed eval = true + noise
    eval_true: np.ndarray  # float64 (n_jobs, n_evals): noiseless quality (hidden)
    proxy: np.ndarray  # float64 (n_jobs, n_evals): proxy reward (visible)
    loss: np.ndarray  # float64 (n_jobs, n_evals): training loss (visible)
    hacking: np.ndarray  # bool (n_jobs,): the hidden label
    peak_progress: np.ndarray  # float64 (n_jobs,): where true quality peaks (1.0 if it never falls)
    meta: dict = field(default_factory=dict)  # how it was generated (for the report)

    @property
    def n_jobs(self) -> int:
        return len(self.job_id)

    @property
    def n_evals(self) -> int:
        return len(self.eval_progress)

    def validate(self) -> None:
        """Raise ValueError naming the first inconsistency."""
        n, m = self.n_jobs, self.n_evals
        for name in ("type", "tenant", "gpus", "arrival_s", "duration_s", "est_duration_s",
                     "hacking", "peak_progress"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"workload column {name!r} has {len(getattr(self, name))} rows, not {n}")
        for name in ("eval_obs", "eval_true", "proxy", "loss"):
            if getattr(self, name).shape != (n, m):
                raise ValueError(f"workload array {name!r} has shape {getattr(self, name).shape}, not {(n, m)}")
        p = self.eval_progress
        if m == 0 or not (np.all(np.diff(p) > 0) and p[0] > 0 and abs(p[-1] - 1.0) < 1e-12):
            raise ValueError("eval_progress must increase strictly within (0, 1] and end at 1.0")
        if n and (np.any(self.gpus < 1)):
            raise ValueError("every job needs at least one GPU")
        if n and not (np.all(self.duration_s > 0) and np.all(self.est_duration_s > 0)):
            raise ValueError("durations must be positive")
        if n and np.any(np.diff(self.arrival_s) < 0):
            raise ValueError("jobs must be sorted by arrival_s")
