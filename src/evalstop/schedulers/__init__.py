"""Base schedulers and the EvalStop overlay that wraps any of them."""

from __future__ import annotations

from evalstop.schedulers.base import Scheduler
from evalstop.schedulers.fifo import FIFO
from evalstop.schedulers.loss_aware import LossAware
from evalstop.schedulers.overlay import EvalStop
from evalstop.schedulers.sjf import SJFEst
from evalstop.schedulers.srtf import SRTFEst
from evalstop.schedulers.tiresias import Tiresias

_BASES = {cls.name: cls for cls in (FIFO, SJFEst, SRTFEst, LossAware, Tiresias)}
SCHEDULERS = tuple(_BASES)


def make_scheduler(name: str) -> Scheduler:
    """A fresh base scheduler by name (see ``SCHEDULERS``)."""
    try:
        return _BASES[name]()
    except KeyError:
        raise ValueError(f"unknown scheduler {name!r}; known: {', '.join(SCHEDULERS)}") from None


def build(base: str, detector: str | None = None, job_types=None) -> Scheduler:
    """A fresh base scheduler, wrapped in the EvalStop overlay when a detector is given."""
    sched = make_scheduler(base)
    return sched if detector is None else EvalStop(sched, detector, job_types=job_types)


__all__ = [
    "FIFO",
    "SCHEDULERS",
    "EvalStop",
    "LossAware",
    "SJFEst",
    "SRTFEst",
    "Scheduler",
    "Tiresias",
    "build",
    "make_scheduler",
]
