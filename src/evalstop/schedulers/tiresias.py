"""Tiresias 2D-LAS (Gu et al., NSDI 2019), discretised: least attained service first.

Attained service is GPU-seconds (GPUs x time run), as of the job's last checkpoint. Jobs
sit in queues by attained service (thresholds ``thresholds_gpu_s``; default one and ten
GPU-hours); a lower queue is served first, FIFO by arrival within a queue. An arriving
job (queue 0) preempts running jobs in lower queues; a running job that is demoted yields
at its checkpoint to a waiting job in a higher queue. Not modelled: Tiresias' starvation
promotion and its placement (consolidation) logic.
"""

from __future__ import annotations

import numpy as np

from evalstop.schedulers.priority import PriorityScheduler

# Key = level * _LEVEL_SPAN + arrival_s: the level dominates as long as arrivals are below
# the span (2**32 s, 136 years), and arrivals a microsecond apart stay distinct floats in
# every level (a span of 1e15 rounded level-1 keys to 1/8 s and reordered close arrivals).
_LEVEL_SPAN = 2.0**32


def queue_level(thresholds, attained_gpu_s):
    """The queue of a job that has attained ``attained_gpu_s``: how many of the increasing
    ``thresholds`` are at or below it (``bisect_right``, written as a loop so that the
    simulator's compiled twin runs this function too: there are only a few queues)."""
    level = 0
    for threshold in thresholds:
        if threshold > attained_gpu_s:
            break
        level += 1
    return level


def queue_key(level, arrival_s):
    """Tiresias' key: the queue level dominates; arrival time orders within a level. The
    simulator's planned loop and its twin call this and ``queue_level`` too."""
    return level * _LEVEL_SPAN + arrival_s


class Tiresias(PriorityScheduler):
    name = "tiresias"
    preempt_on_arrival = True
    preempt_at_checkpoint = True

    def __init__(self, *, depth: int = 32, thresholds_gpu_s=(3600.0, 36000.0)) -> None:
        super().__init__(depth=depth, margin=0.0)
        if list(thresholds_gpu_s) != sorted(thresholds_gpu_s) or any(t <= 0 for t in thresholds_gpu_s):
            raise ValueError(f"thresholds must be positive and increasing, got {thresholds_gpu_s}")
        self.thresholds = tuple(float(t) for t in thresholds_gpu_s)

    def key(self, job, now):
        if not 0.0 <= job.arrival_s < _LEVEL_SPAN:
            raise ValueError(f"tiresias: arrival_s must be in [0, 2**32) s, got {job.arrival_s}")
        return queue_key(queue_level(self.thresholds, job.attained_gpu_s), job.arrival_s)

    def twin_key(self, workload):
        # The planned loop (and its twin) keys jobs with ``queue_level`` and ``queue_key``;
        # an arrival out of range is left to the checkpoint loop to refuse.
        arrival = workload.arrival_s
        if arrival.size and not (arrival.min() >= 0.0 and arrival.max() < _LEVEL_SPAN):
            return None
        return "levels", np.array(self.thresholds, dtype=np.float64)
