"""The EvalStop overlay: wraps any base scheduler, asks a detector per job at each eval
checkpoint, and ends the job when the detector says stop. Everything else is the base's.

The overlay never reorders the base's queue; when a job is stopped the simulator frees its
GPUs at once and the next ``schedule`` call hands them to the base.

``only_jobs`` exists for one measuring device, not for a platform: the ``default_rule``
study's oracle, whose runner passes the indices of the truly hacking jobs so that the rule's
stops apply to those jobs only (see ``evalstop.experiments.spec.Method.oracle_hacking_only``).
It is a plain set of job indices given at construction; the overlay never sees the workload,
and the ``JobView``s it is handed carry no label either way.
"""

from __future__ import annotations

from evalstop.detectors.fleet import FleetNoise
from evalstop.detectors.registry import detector_factory, reads_noise
from evalstop.schedulers.base import Scheduler


class EvalStop(Scheduler):
    """``fleet=True`` hands the detectors of all jobs of one type (one eval group: RLHF jobs
    share an eval, LoRA jobs another, ...) one ``FleetNoise`` that pools their eval noise;
    ``fleets`` then holds them by type. Rules that read no noise ignore it."""

    def __init__(self, base: Scheduler, detector: str = "default", *, job_types=None,
                 only_jobs=None, mode: str = "max", fleet: bool = False) -> None:
        self.base = base
        self._new_detector = detector_factory(detector, mode=mode)
        self._spec, self._mode = detector, mode
        self.fleets: dict[str, FleetNoise] | None = (
            {} if fleet and reads_noise(detector) else None)
        self._group_factories: dict[str, object] = {}
        proto = self._new_detector()
        self.detector_spec = proto.spec
        # Its stops depend on each job's own evals only, so the simulator may find them
        # up front (evalstop.sim.stops) instead of calling the detector at every eval; a
        # fleet pools noise across jobs, so its stops depend on event order: event path.
        self.per_job = bool(getattr(proto, "per_job", False)) and self.fleets is None
        self.job_types = None if job_types is None else frozenset(job_types)
        # Job indices (``JobView.index``) the detector may stop (None: all). Only the oracle
        # sets it; its name says so, so no result can pass for a deployable rule's.
        self.only_jobs = None if only_jobs is None else frozenset(int(i) for i in only_jobs)
        self.name = f"{base.name}+{self.detector_spec}" + (
            "" if self.only_jobs is None else "+oracle")
        self.reschedule_on_eval = base.reschedule_on_eval
        self._detectors: dict[int, object] = {}
        # Most bases ignore evals; not calling them saves a call per eval on big traces.
        self._base_on_eval = (None if type(base).on_eval is Scheduler.on_eval
                              else base.on_eval)

    @property
    def new_detector(self):
        """A fresh detector of this overlay's rule (one per job)."""
        return self._new_detector

    @property
    def needs_checkpoints(self):
        return self.base.needs_checkpoints

    def bind(self, *, n_gpus, restart_overhead_s):
        self.base.bind(n_gpus=n_gpus, restart_overhead_s=restart_overhead_s)

    def _detector_for(self, group):
        if self.fleets is None:
            return self._new_detector()
        make = self._group_factories.get(group)
        if make is None:
            fleet = self.fleets[group] = FleetNoise(name=str(group))
            make = self._group_factories[group] = detector_factory(
                self._spec, mode=self._mode, fleet=fleet)
        return make()

    def submit(self, job, now):
        self.base.submit(job, now)

    def schedule(self, now, free_gpus):
        return self.base.schedule(now, free_gpus)

    def on_eval(self, job, now):
        base_decision = None if self._base_on_eval is None else self._base_on_eval(job, now)
        if self.job_types is not None and job.type not in self.job_types:
            return base_decision
        if self.only_jobs is not None and job.index not in self.only_jobs:
            return base_decision  # its stop would be ignored: the job runs on
        det = self._detectors.get(job.index)
        if det is None:
            det = self._detectors[job.index] = self._detector_for(job.type)
        # update_stop, not update: the simulator acts on stops only, and most evals are not.
        stop = det.update_stop(job.steps[-1], job.evals[-1], job.losses[-1], job.proxies[-1],
                               job.progress)
        return base_decision if stop is None else stop

    def on_end(self, job, now, stopped):
        self._detectors.pop(job.index, None)
        self.base.on_end(job, now, stopped)

    def detector_of(self, job):
        return self._detectors.get(job.index)

    @property
    def queue_length(self):
        return self.base.queue_length


def plain_base(scheduler, cls, hooks) -> Scheduler | None:
    """``scheduler``'s base when it is exactly ``cls``, alone or under the plain
    ``EvalStop`` overlay, with none of ``hooks`` patched on the instance; else None. The
    simulator's own loops for such schedulers restate their rule, so a subclass or a
    patched method (a test's spy) must keep the general loop."""
    base = scheduler
    if isinstance(scheduler, EvalStop):
        if type(scheduler) is not EvalStop:
            return None
        base = scheduler.base
    if type(base) is not cls or any(_set_on(base, h) for h in hooks):
        return None
    return base


def _set_on(obj, name) -> bool:
    """Whether ``obj`` holds attribute ``name`` itself (a method patched on the instance):
    read twice, a method of the class is a new bound method each time, an instance's own
    attribute the same object. Not ``name in vars(obj)``: making an instance's ``__dict__``
    slows every later attribute read on it (CPython 3.11 keeps attributes inline until
    then), and the Python loop that runs when no compiled loop takes the scheduler reads
    its attributes at every call (SJF-Est's loop ran 20% slower)."""
    first = getattr(obj, name, None)
    return first is not None and first is getattr(obj, name, None)
