"""Shadow mode that keeps score: stops a rule would have made, followed to the job's end.

A tenant's jobs are followed in shadow when its own rule is a dry run (``dry_run``, or
the controller's ``--dry-run``: that rule is followed, marked ``live``) or its policy
names candidate rules (``shadow = ["evalstop:k=2", "default:sigma=0.01"]``, per tenant
and/or at the top level; ``--shadow SPEC`` without a policy). Each candidate runs its own detector on the job's
evals (never a fleet noise: no other job, let alone another tenant, can move it); the
live rule's would-be stop is the job's own detector's. After a rule's would-be stop the job is still followed, its
evals kept, until it **ends**:

* a record with ``"end": true`` (the job's last; its eval counts if it has one);
* no record for ``end_after`` seconds (``--shadow-end-after``; a tenant with a backlog
  left over its read budget is never timed out in that poll);
* ``keep_evals`` evals followed (``--keep-evals``: the curve is bounded; the job is then
  scored on what it has, ended ``eval cap``).

Then each rule's score is fixed (``shadow_score``): evals and wall time after the stop,
GPU-hours (the GPU count from the job's records' ``gpus``, else the policy's ``gpus``,
else unknown), the tenant's cost by ``metrics.tenant_harm`` and the verdict. Wall time is
the records' own ``time`` from the stop's record to the last one when both carry it, else
the controller's clock from the poll that decided the stop to the one that took the last
record.

Only jobs first seen while their tenant has shadow rules are followed (a job's score
needs its whole run); a job keeps the rules it started with. A job whose live rule
really stopped it (its stop action was to run), or an MLflow run once its own rule has
decided (the source reads no further), is ``censored``: its end is no longer the run's,
so its scores are kept apart. Records after a job has ended are not followed.
Everything is saved with the poll (``shadow_store``), and a followed job's tables are
reserved against its tenant's ``--tenant-bytes`` when it is admitted.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from evalstop.detectors import Detector, make_detector
from evalstop.integrations.watch import shadow_store
from evalstop.integrations.watch.policy import Policy, Rule
from evalstop.integrations.watch.shadow_score import Stop, costs, index_of, verdict
from evalstop.integrations.watch.store import StateStore
from evalstop.integrations.watch.tenants import JobKey

DEFAULT_END_AFTER = 3600.0  # seconds without a record after which a job has ended


def check_end_after(seconds: float) -> float:
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"--shadow-end-after must be a number of seconds >= 0, got "
                         f"{seconds!r}")
    return float(seconds)


@dataclass(slots=True)
class _Follow:
    """One rule followed on one job; ``detector`` is None for the live rule (it reads
    the job's own)."""

    rule: str
    live: bool
    detector: Detector | None
    stop_step: int | None = None
    best_step: int | None = None
    stop_at: float | None = None  # the controller's clock when it was decided
    stop_time: float | None = None  # the deciding record's own ``time``


@dataclass(slots=True)
class _Job:
    """A followed job: its curve is in the database (``shadow_evals``), but for the evals
    of this poll (``fresh``), so what a job holds in memory does not grow with its run."""

    tenant: str
    follows: list[_Follow]
    gpus: float | None = None
    last_seen: float = 0.0
    censored: bool = False
    n: int = 0  # evals taken
    last_step: int | None = None
    last_time: float | None = None  # the last eval's own ``time``
    fresh: list[tuple[int, float, float | None]] = field(default_factory=list)
    end_reason: str = ""


def rules_of(rule: Rule, dry: bool) -> list[tuple[str, bool]]:
    """(name, live) of each rule a tenant's new job is followed with."""
    own = [(rule.detector_spec(), True)] if dry else []
    names = {n for n, _ in own}
    return own + [(spec, False) for spec in rule.shadow if spec not in names]


class ShadowTracker:
    """Follows jobs in shadow for a ``Controller`` (see the module doc); ``clock`` is
    the controller's time (tests pass their own)."""

    def __init__(self, store: StateStore, policy: Policy, *, dry_run: bool = False,
                 end_after: float = DEFAULT_END_AFTER,
                 clock: Callable[[], float] = time.time) -> None:
        self.store, self.policy, self.dry_run = store, policy, dry_run
        self.end_after, self.clock = check_end_after(end_after), clock
        self.keep_evals = store.keep_evals
        self.jobs: dict[JobKey, _Job] = {}
        self._ended: dict[JobKey, tuple[_Job, float]] = {}  # ended this poll, not saved
        self._dirty: set[JobKey] = set()
        self._news = False  # a would-be stop or an end since the last save
        self.on_saved: Callable[[], None] | None = None  # called after a save with news
        shadow_store.create(store)
        self._bytes = {JobKey(s, j): shadow_store.reserve(s, j, self.keep_evals, n)
                       for (s, j), n in shadow_store.rule_counts(store).items()}
        for row in shadow_store.active(store):
            self.jobs[JobKey(row["source"], row["job"])] = _restore(row)

    # ---- what a tenant's jobs cost --------------------------------------------------
    def _rules(self, tenant: str) -> list[tuple[str, bool]]:
        rule = self.policy.rule_of(tenant)
        return [] if rule is None else rules_of(rule, self.dry_run or rule.dry_run)

    def reserve(self, key: JobKey, tenant: str) -> int:
        """The state bytes a new job of ``tenant`` takes in shadow (0: not followed)."""
        n = len(self._rules(tenant))
        return 0 if n == 0 else shadow_store.reserve(key.source, key.name, self.keep_evals,
                                                     n)

    def held(self, key: JobKey) -> int:
        """The state bytes a job restored from the database holds in shadow."""
        return self._bytes.get(key, 0)

    # ---- one poll -------------------------------------------------------------------
    def take(self, key: JobKey, tenant: str, items: Iterable[Any], live: Detector,
             new: bool, acted: bool = False) -> None:
        """A poll's records of one job (in step order), after its live detector took
        them; ``new``: the job was admitted in this poll; ``acted``: its live stop, in this
        poll, will run a stop action."""
        job = self.jobs.get(key)
        now = self.clock()
        if job is None:
            names = self._rules(tenant) if new else []
            if not names:
                return
            mode = self.policy.rule_of(tenant).mode
            job = self.jobs[key] = _Job(tenant, [
                _Follow(n, is_live, None if is_live else make_detector(n, mode=mode))
                for n, is_live in names])
            self._bytes[key] = self.reserve(key, tenant)
        self._dirty.add(key)
        job.last_seen = now
        for item in items:
            rec = item.rec
            if job.last_step is not None and rec.step <= job.last_step:
                continue  # as the live detector: a step already taken is not taken again
            if rec.gpus is not None:
                job.gpus = rec.gpus
            if not (rec.end and math.isnan(rec.eval)):  # a bare end marker adds no eval
                self._eval(job, rec, now)
            if rec.end:
                job.end_reason = "end marker"
            elif job.n >= self.keep_evals:
                job.end_reason = "eval cap"
            if job.end_reason:
                break
        for f in job.follows:
            if f.live and f.stop_step is None and live.stopped:
                f.stop_step, f.best_step, f.stop_at = live.stop_step, live.best_step, now
                f.stop_time = next((it.rec.time for it in items
                                    if it.rec.step == live.stop_step), None)
                self._news = True
        # Really stopped, the rest of the run never comes; an MLflow run is not read
        # past its own rule's stop, dry or not (``mlflow_source``).
        if acted or (live.stopped and key.source.startswith("mlflow:")):
            job.censored = True
        if job.end_reason:
            self._end(key, job, now)

    def _eval(self, job: _Job, rec: Any, now: float) -> None:
        job.fresh.append((rec.step, rec.eval, rec.time))
        job.n += 1
        job.last_step, job.last_time = rec.step, rec.time
        for f in job.follows:
            d = f.detector
            if d is None or d.stopped:
                continue
            try:
                d.update(rec.step, rec.eval, **rec.extras())
            except ValueError:  # as the live path: the rule cannot take this record
                continue
            if d.stopped:
                f.stop_step, f.best_step, f.stop_at = d.stop_step, d.best_step, now
                f.stop_time = rec.time
                self._news = True

    def end_idle(self, busy: set[str]) -> None:
        """End the jobs that have had no record for ``end_after`` seconds (but those of
        ``busy`` tenants, which had more to read than this poll's budget)."""
        now = self.clock()
        for key, job in list(self.jobs.items()):
            if job.tenant not in busy and now - job.last_seen >= self.end_after:
                job.end_reason = f"no record for {self.end_after:g} s"
                self._end(key, job, now)

    def _end(self, key: JobKey, job: _Job, now: float) -> None:
        del self.jobs[key]
        self._ended[key] = (job, now)
        self._dirty.add(key)
        self._news = True

    # ---- saving -----------------------------------------------------------------------
    def write(self, db) -> None:
        """The poll's shadow rows (``StateStore.save_batch``'s ``extra``): the evals
        first, then the scores of the jobs that ended, read back whole in the same
        transaction. It may run again if the transaction is retried, so it changes
        nothing in memory."""
        jobs, rules, evals, ended = [], [], [], []
        for key in self._dirty:
            job, ended_at = self._ended.get(key, (self.jobs.get(key), None))
            if job is None:
                continue
            jobs.append((key.source, key.name, job.tenant, job.gpus, job.last_seen,
                         int(ended_at is not None), job.end_reason, int(job.censored)))
            for f in job.follows:
                state = "" if f.detector is None else json.dumps(f.detector.state_dict())
                rules.append((key.source, key.name, f.rule, int(f.live), state, f.stop_step,
                              f.best_step, f.stop_at, f.stop_time))
            evals.extend((key.source, key.name, s, None if math.isnan(v) else v, t)
                         for s, v, t in job.fresh)
            if ended_at is not None:
                ended.append((key, job, ended_at))
        shadow_store.write(db, jobs, rules, evals)
        shadow_store.write_scores(db, self._scores(db, ended))

    def _scores(self, db, ended: list[tuple[JobKey, _Job, float]]) -> list[tuple]:
        """The score rows of the jobs that ended, every (job, rule) costed in one call."""
        curves, stops = [], []
        for key, job, _at in ended:
            steps, scores = shadow_store.read_curve(db, key.source, key.name)
            curves.append(scores)
            per = []
            for f in job.follows:
                s, k = index_of(steps, f.stop_step), index_of(steps, f.best_step)
                per.append(None if s is None else Stop(s, s if k is None else k))
            stops.append(per)
        loss = costs(list(zip(curves, stops, strict=True)))
        out = []
        for (key, job, ended_at), curve, per, lost in zip(ended, curves, stops, loss,
                                                          strict=True):
            n = len(curve)
            rule = self.policy.rule_of(job.tenant)
            gpus = job.gpus if job.gpus is not None else (None if rule is None
                                                          else rule.gpus)
            for f, stop, c in zip(job.follows, per, lost, strict=True):
                after = wall = hours = None
                if stop is not None:
                    after = n - 1 - stop.stop_idx
                    wall = (job.last_time - f.stop_time
                            if f.stop_time is not None and job.last_time is not None
                            else job.last_seen - (f.stop_at or job.last_seen))
                    wall = max(0.0, wall)
                    hours = None if gpus is None else gpus * wall / 3600.0
                out.append((key.source, key.name, job.tenant, f.rule, int(f.live),
                            int(stop is not None), f.stop_step, f.best_step, n,
                            after or 0, wall, gpus, hours,
                            None if stop is None or math.isnan(c) else c,
                            None if stop is None else verdict(c), int(job.censored),
                            ended_at))
        return out

    def saved(self) -> None:
        """The poll committed: its shadow rows are in the database."""
        for key in self._dirty:
            job = self.jobs.get(key)
            if job is not None:
                job.fresh = []
        self._dirty.clear()
        self._ended.clear()
        news, self._news = self._news, False
        if news and self.on_saved is not None:
            self.on_saved()


def _restore(row: dict[str, Any]) -> _Job:
    follows = []
    for r in row["rules"]:
        det = None
        if r["state"] is not None:
            det = make_detector(r["state"]["spec"], mode=r["state"]["mode"])
            det.load_state_dict(r["state"])
        follows.append(_Follow(r["rule"], bool(r["live"]), det, r["stop_step"],
                               r["best_step"], r["stop_at"], r["stop_time"]))
    return _Job(row["tenant"], follows, row["gpus"], row["last_seen"], bool(row["censored"]),
                row["n"], row["last_step"], row["last_time"])
