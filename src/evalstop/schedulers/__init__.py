"""Base schedulers and the EvalStop overlay that wraps any of them."""

from __future__ import annotations

from evalstop.schedulers.base import Scheduler
from evalstop.schedulers.fifo import FIFO
from evalstop.schedulers.loss_aware import LossAware
from evalstop.schedulers.overlay import EvalStop
from evalstop.schedulers.sjf import SJFEst
from evalstop.schedulers.srtf import SRTFEst
from evalstop.schedulers.tiresias import Tiresias
from evalstop.suggest import unknown

_BASES = {cls.name: cls for cls in (FIFO, SJFEst, SRTFEst, LossAware, Tiresias)}
SCHEDULERS = tuple(_BASES)


def make_scheduler(name: str) -> Scheduler:
    """A fresh base scheduler by name (see ``SCHEDULERS``)."""
    try:
        return _BASES[name]()
    except KeyError:
        raise ValueError(unknown("scheduler", name, SCHEDULERS)) from None


def build(base: str, detector: str | None = None, job_types=None, only_jobs=None) -> Scheduler:
    """A fresh base scheduler, wrapped in the EvalStop overlay when a detector is given.
    ``only_jobs`` (job indices the detector may stop) is for the oracle only; see
    ``EvalStop``."""
    sched = make_scheduler(base)
    if detector is None:
        if only_jobs is not None:
            raise ValueError("only_jobs restricts a detector's stops; no detector was given")
        return sched
    return EvalStop(sched, detector, job_types=job_types, only_jobs=only_jobs)


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
