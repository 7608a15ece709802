"""Poisson arrivals at an offered load.

Offered load is the GPU-time demanded per unit time over the cluster's GPU capacity:
``load = rate * E[gpus * duration] / n_gpus``. Load 1.0 is exactly the cluster's capacity
(a queue that never drains in the long run, even with perfect packing); the default 0.9
keeps the cluster busy with real queueing, where scheduling and freed GPUs matter.
"""

from __future__ import annotations

import numpy as np

from evalstop.workload._checks import count, real

DEFAULT_LOAD = 0.9


def arrival_rate(load: float, n_gpus: int, mean_gpu_s: float) -> float:
    """Jobs per second that offer ``load`` to ``n_gpus`` GPUs."""
    load = real("load", load, low=0.0, low_open=True)
    n_gpus = count("n_gpus", n_gpus)
    mean_gpu_s = real("mean GPU-seconds per job", mean_gpu_s, low=0.0, low_open=True)
    return load * n_gpus / mean_gpu_s


def poisson_arrivals(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """Arrival times (s) of ``n`` jobs of a Poisson process of ``rate`` jobs/s.

    The first job arrives after one exponential gap, not at 0, so every gap (the first
    included) is exponential: the process is stationary from time 0.
    """
    n = count("n", n, low=0)
    rate = real("rate", rate, low=0.0, low_open=True)
    return np.cumsum(rng.exponential(1.0 / rate, size=n))


def offered_load(arrival_s: np.ndarray, gpus: np.ndarray, duration_s: np.ndarray,
                 n_gpus: int) -> float:
    """Realised offered load: GPU-seconds demanded / (n_gpus * span of the arrivals)."""
    span = float(np.max(arrival_s))
    if not span > 0.0:
        raise ValueError(f"arrivals span {span} s; need a positive span to measure a load")
    return float(np.sum(np.asarray(gpus) * np.asarray(duration_s))) / (n_gpus * span)
