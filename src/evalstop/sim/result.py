"""What one simulation run produced, per job and for the cluster."""

from __future__ import annotations

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
