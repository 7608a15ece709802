"""The controller: many jobs' metric streams in, one detector per job, an action per stop.

A job is known by (source, name): the log file (or TensorBoard run) its records were
read from and the name they give; its tenant comes from the source (see ``tenants``).
Records of one log can only ever reach that log's jobs.

Each poll reads what every source has that is new, each tenant within its per-poll
budget (``budget``: one tenant's backlog drains over several polls, every other tenant
is still read on every poll). Each record is already validated (``records``); refused
lines and files are logged once (at most ``throttle.DEFAULT_BURST`` lines per tenant and
interval, then one summary line with counts: ``throttle``), counted per reason in
``Controller.refused`` and the poll's ``PollResult.refused``, and their offsets
committed so they are never read again. A tenant over its job quota (``max_jobs``) or
its state-file bytes (``tenant_bytes``, reserved per job: ``quota``) gets no new job: those records are refused (reason ``quota``). The poll feeds each job's
records to its detector in step order, then commits, in one SQLite transaction, the
detector states, the read offsets and a ``pending`` action row for each new stop.
Actions then run off the poll loop in a bounded pool of ``action_workers`` threads, each
command in its own process group: a row is moved ``pending`` -> ``running`` (compare-
and-set, committed) only when a worker is free to start it, and ``running`` ->
``done``/``failed`` when the poll loop collects its result. So a slow action never
delays detection, and, killed at any moment and restarted:

* no streak is lost and no record is fed twice: detector states and offsets are
  committed together;
* no job is stopped twice and no stop is lost: a job has at most one action row, and
  each transition checks the state it leaves. A ``pending`` row (decided, command never
  started) is run on restart. A ``running`` row (started, outcome unknown) is run again
  when that is safe: a shipped action by job id (``evalstop action ... --job-id``, which
  finds a job it already stopped ended) or an action declared idempotent
  (``--action-idempotent``); any other is moved to ``unknown``, reported, and left for
  the operator (it may or may not have run; it never looks done). ``retry_running=True``
  (``--retry-pending``) runs those again too.

Each stop acts on the job id of the record it was decided on (``{job_id}``, from the
record's ``job_id``): a later resubmission under the same name writes a new id, which an
earlier decision never reaches. An action exiting ``ALREADY_ENDED`` (10: the job had
already ended) is recorded ``done``.

Rules per tenant: a ``Policy`` (``policy.py``; ``--policy FILE``) gives each tenant its
metric, mode, detector, stated noise and eval group, action, checkpoint root, dry-run and
allow list; without one, the flags make one rule for everyone. A job keeps the detector
it started with (its state records the spec), so editing a policy changes new jobs only.
Each tenant's jobs of one eval group pool that tenant's own ``FleetNoise``; a group the
policy declares shared reads the tenants' estimates weighed by tenant, within a bound,
each from the tenant's 8 most recent jobs in the group (``detectors.shared_noise``); all
persisted with the poll.

Tenant identity (``identity``): without a policy, the first spelling of a tenant seen owns
its identity (kept in the state database), and a source or job whose tenant is a twin of
it (``B`` beside ``b``) is refused, never read into shared state.

Out-of-order records: within one poll each job's records are taken in step order. A
record whose step is not above the last step already fed for that job is reported in one
line and skipped: a detector cannot take back a decision. Records of a job that is
already stopped are ignored.
"""

from __future__ import annotations

import hashlib
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from typing import Any, TextIO

from evalstop.actions import ALREADY_ENDED
from evalstop.detectors import Detector, make_detector
from evalstop.detectors.shared_noise import SharedNoise, TenantNoise
from evalstop.evallog import EvalRecord
from evalstop.identity import Claims
from evalstop.integrations.watch.actions import CheckpointEscape, ShellAction, check_seconds
from evalstop.integrations.watch.policy import Policy, Rule, single_rule
from evalstop.integrations.watch.quota import DEFAULT_TENANT_BYTES, check_bytes, job_bytes
from evalstop.integrations.watch.records import show
from evalstop.integrations.watch.shadow import DEFAULT_END_AFTER, ShadowTracker
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.store import ActionRow, JobRow, StateStore
from evalstop.integrations.watch.tenants import JobKey
from evalstop.integrations.watch.throttle import Throttle

DEFAULT_ACTION_WORKERS = 8
DEFAULT_MAX_JOBS = 10_000  # per tenant: what the controller keeps for it is bounded


@dataclass(slots=True)
class _Job:
    detector: Detector
    tenant: str
    last_step: int | None = None  # mirrors the detector's, read per record (cheaply)
    last_score: float | None = None
    skipped: int = 0
    updated: float = 0.0
    job_id: str | None = None  # the scheduler's id in the last record fed (what a stop acts on)
    # The rule as the user named it ("default"): a short, stable label for pages; the
    # detector's spec spells it out (and changes when the default does).
    label: str = ""


@dataclass(slots=True)
class PollResult:
    """What one poll did; ``fed`` are the records that reached a detector, ``stops`` the
    jobs stopped, ``refused`` the refused lines/files per reason."""

    fed: list[EvalRecord] = field(default_factory=list)
    stops: list[JobKey] = field(default_factory=list)
    skipped: int = 0
    problems: int = 0
    refused: Counter = field(default_factory=Counter)
    fed_by_tenant: Counter = field(default_factory=Counter)
    progressed: bool = False
    backlog: bool = False  # a tenant had more to read than its budget: poll again soon
    committed_at: float = 0.0


def label(key: JobKey) -> str:
    """A job as printed in messages: its name and source, escaped."""
    return f"{show(key.name)} [{show(key.source)}]"


class Controller:
    def __init__(
        self,
        store: StateStore,
        sources: list[Any],
        *,
        detector: str | None = None,
        mode: str = "max",
        action: ShellAction | None = None,
        dry_run: bool = False,
        policy: Policy | None = None,
        action_timeout: float = 120.0,
        retry_running: bool = False,
        action_workers: int = DEFAULT_ACTION_WORKERS,
        max_jobs: int = DEFAULT_MAX_JOBS,
        tenant_bytes: int = DEFAULT_TENANT_BYTES,
        throttle: Throttle | None = None,
        metrics: Any = None,
        health: Any = None,
        err: TextIO | None = None,
        out: TextIO | None = None,
        shadow: tuple[str, ...] = (),
        shadow_end_after: float = DEFAULT_END_AFTER,
        shadow_clock: Callable[[], float] = time.time,
    ) -> None:
        if not sources:
            raise ValueError("give at least one source (--jsonl DIR or --tensorboard DIR)")
        if not 1 <= action_workers <= 256:
            raise ValueError(f"--action-workers must be in 1..256, got {action_workers}")
        if isinstance(max_jobs, bool) or not isinstance(max_jobs, int) or max_jobs < 1:
            raise ValueError(f"--max-jobs must be an integer >= 1, got {max_jobs!r}")
        self.max_jobs = max_jobs
        self.tenant_bytes = check_bytes(tenant_bytes)
        if policy is not None and (detector is not None or action is not None or shadow):
            raise ValueError("give the detector and action in the policy, not beside it")
        self.spec = make_detector(detector or "default", mode=mode).spec  # ValueError if bad
        self.mode = mode
        self.store = store
        self.sources = sources
        self.action = action
        self.dry_run = dry_run
        self.metrics, self.health = metrics, health
        # One rule per tenant; the flags' rule ("*") is everyone's. Actions per tenant.
        self.policy = policy if policy is not None else single_rule(
            detector=detector or "default", mode=mode, **({"shadow": list(shadow)}
                                                          if shadow else {}))
        self._actions: dict[str, ShellAction | None] = {}
        for rule in self.policy.rules:
            self._actions[rule.tenant] = (action if policy is None
                                          else rule.shell_action(action_timeout))
        self.fleets: dict[str, SharedNoise] = {}  # eval group -> its tenants' estimates
        self._fleet_jobs: dict[tuple[str, str], set[JobKey]] = {}  # (group, tenant) -> jobs
        for (group, tenant), (state, _n, _sigma) in store.fleet().items():
            self._group(group).restore(tenant, state)
        # One spelling per tenant identity, shared by every source; a policy's names are
        # its own (twins refused at load), so it needs none.
        self.claims = None if policy is not None else Claims(store.tenant_names())
        self.err = err if err is not None else sys.stderr
        self.out = out if out is not None else sys.stdout
        self.refused: Counter = Counter()  # refused lines/files per reason, since start
        self.throttle = throttle if throttle is not None else Throttle(self._say)
        self._tenant_jobs: Counter = Counter()  # tenant -> jobs kept (the quota)
        self._tenant_held: Counter = Counter()  # tenant -> state bytes reserved (quota)
        if store.on_wait is None:
            store.on_wait = self._say
        if policy is None:
            store.bind(self.spec, mode)
        self.jobs: dict[JobKey, _Job] = {}
        # Stops a rule would have made, followed to the job's end (``shadow``).
        self.shadow = ShadowTracker(store, self.policy, dry_run=dry_run,
                                    end_after=shadow_end_after, clock=shadow_clock)
        if metrics is not None:
            from evalstop.integrations.watch.shadow_status import ShadowMetrics

            self.shadow.on_saved = ShadowMetrics(metrics, store).refresh
            self.shadow.on_saved()
        self._announced: set[JobKey] = set()  # dry-run: actions already printed
        self._pool = ThreadPoolExecutor(max_workers=action_workers,
                                        thread_name_prefix="evalstop-action")
        self.action_workers = action_workers
        self._inflight: dict[JobKey, Future] = {}
        self._rule_specs: dict[str, str] = {}  # tenant -> its rule's full spec (restores)
        for row in store.jobs().values():
            key = JobKey(row.source, row.job)
            det = self._restore_detector(row.tenant, row.detector, key)
            if getattr(det, "fleet", None) is not None:  # counted in its group's jobs
                group = self.rule_of(row.tenant).eval_group
                self._fleet_jobs.setdefault((group, row.tenant), set()).add(key)
            self.jobs[key] = _Job(
                det, row.tenant, row.last_step, row.last_score, row.skipped, row.updated,
                label=str(row.detector.get("label") or det.spec))
            self._tenant_jobs[row.tenant] += 1
            self._tenant_held[row.tenant] += self._job_bytes(key) + self.shadow.held(key)
        offsets = store.offsets()
        for src in sources:
            src.load(offsets)
            if self.claims is not None and hasattr(src, "tenancy"):
                src.tenancy.claims = self.claims
            if hasattr(src, "last_step"):
                src.last_step = self._last_step
            if hasattr(src, "decision_of"):  # sources that write decisions back (MLflow)
                src.decision_of = self._decision_of
        self._resume_actions(retry_running)

    # ---- helpers ------------------------------------------------------------------------
    def _say(self, msg: str) -> None:
        self.err.write(f"evalstop watch: {msg}\n")
        self.err.flush()

    def rule_of(self, tenant: str) -> Rule | None:
        return self.policy.rule_of(tenant)

    def _group(self, name: str) -> SharedNoise:
        group = self.fleets.get(name)
        if group is None:
            group = self.fleets[name] = SharedNoise(
                name, max_factor=self.policy.group(name).max_factor)
        return group

    def _fleet(self, rule: Rule, key: JobKey) -> TenantNoise | None:
        """What job ``key``'s detector reads as its fleet noise (its tenant's view of its
        eval group), or None without a group."""
        if rule.eval_group is None:
            return None
        # The job by a fixed-size digest: a shared group keeps a few jobs' ids in its state.
        job = hashlib.blake2b(f"{key.source}\0{key.name}".encode("utf-8", "surrogatepass"),
                              digest_size=12).hexdigest()
        return self._group(rule.eval_group).view(rule.tenant, job)

    def _new_detector(self, tenant: str, key: JobKey) -> Detector:
        rule = self.rule_of(tenant)
        if rule is None:  # sources are only read for tenants of the policy
            raise ValueError(f"no rule for tenant {show(tenant)}")
        return make_detector(rule.detector_spec(), mode=rule.mode,
                             fleet=self._fleet(rule, key))

    def _restore_detector(self, tenant: str, state: dict[str, Any], key: JobKey) -> Detector:
        """A job's detector as saved: its own spec and mode, whatever the policy says now;
        it rejoins its tenant's eval group only if the rule is still the same."""
        spec, mode = state["spec"], state["mode"]
        rule = self.rule_of(tenant)
        fleet = None
        if rule is not None and rule.mode == mode:
            if rule.tenant not in self._rule_specs:
                self._rule_specs[rule.tenant] = make_detector(rule.detector_spec(),
                                                              mode=mode).spec
            if self._rule_specs[rule.tenant] == spec:
                fleet = self._fleet(rule, key)
        det = make_detector(spec, mode=mode, fleet=fleet)
        det.load_state_dict(state)
        return det

    def _last_step(self, key: JobKey) -> int | None:
        j = self.jobs.get(key)
        return None if j is None else j.last_step

    def _decision_of(self, key: JobKey) -> dict[str, Any] | None:
        """A stopped job's decision (what a source writes back to the run), else None."""
        j = self.jobs.get(key)
        if j is None or not j.detector.stopped:
            return None
        d = j.detector
        return {"stop_step": d.stop_step, "best_step": d.best_step,
                "best_score": d.best_score, "reason": d.state_dict()["stop_reason"]}

    def _write_back(self, key: JobKey) -> None:
        """Tell the sources that can record a decision (e.g. MLflow run tags)."""
        for src in self.sources:
            tell = getattr(src, "on_stop", None)
            if tell is None:
                continue
            try:
                problem = tell(key, self._decision_of(key))
            except Exception as exc:  # noqa: BLE001 - a write-back never stops the controller
                problem = f"job {label(key)}: cannot write the decision back ({exc!r})"
            if problem:
                self._say(problem)

    def _resume_actions(self, retry_running: bool) -> None:
        """Reconcile the actions a kill left ``running`` (started, outcome unknown)."""
        for row in self.store.actions("running"):
            key = JobKey(row.source, row.job)
            rule = self.rule_of(row.tenant)
            action = None if rule is None else self._actions.get(rule.tenant)
            safe = action is not None and action.safe_to_rerun(row.command)
            if retry_running or safe:
                why = "it is safe to run again" if safe else "--retry-pending"
                self._say(f"job {label(key)}: re-running its stop action, which was started "
                          f"but not confirmed before the controller stopped ({why})")
                self.store.set_action(row.source, row.job, "pending", expect="running")
            else:
                self._say(f"job {label(key)}: its stop action was started but not confirmed "
                          "before the controller stopped; it may or may not have run, so it "
                          "is marked unknown, not re-run (check the job; --retry-pending "
                          "runs it again)")
                self.store.set_action(row.source, row.job, "unknown", expect="running",
                                      output="started, outcome unknown: the controller was "
                                             "killed; check the job")
        if retry_running:
            for row in self.store.actions("unknown"):
                self.store.set_action(row.source, row.job, "pending", expect="unknown")

    # ---- one poll -----------------------------------------------------------------------
    def poll_once(self) -> PollResult:
        res = PollResult()
        self.reap()
        batches: list[Batch] = [src.poll() for src in self.sources]
        by_job: dict[JobKey, list[Item]] = {}
        offsets, gone = {}, []
        for b in batches:
            res.progressed |= b.progressed or bool(b.gone) or bool(b.offsets)
            for msg in b.problems:
                self._say(msg)
            res.problems += len(b.problems)
            for r in b.refused:
                self.throttle.refused(r.tenant or "(unknown)", r.reason, r.message)
                res.refused[r.reason] += 1
            self._over_budget(b)
            res.backlog |= bool(getattr(b, "over_budget", None)) or getattr(b, "pending", False)
            offsets.update(b.offsets)
            gone.extend(b.gone)
            for item in b.records:
                by_job.setdefault(item.key, []).append(item)
        now = time.time()
        changed: dict[JobKey, _Job] = {}
        new_actions: list[ActionRow] = []
        taken: list[tuple[str, str, int, float]] = []
        for key, items in by_job.items():
            items.sort(key=lambda it: it.rec.step)  # stable: file order breaks ties
            new = key not in self.jobs
            job = self.jobs.get(key) or self._admit(key, items, res)
            if job is None:
                continue
            job.tenant = items[0].tenant  # the tenant rules may have changed since a restart
            was_stopped = job.detector.stopped
            for item in items:
                if self._feed(key, job, item, res, taken):
                    changed[key] = job
                    job.updated = now
            act = None
            if job.detector.stopped and not was_stopped:
                res.stops.append(key)
                ended = next((it.ended for it in items if it.ended), None)
                act = self._decide_action(key, job, now, ended)
                new_actions.append(act)
            self.shadow.take(key, job.tenant, items, job.detector, new,
                             acted=act is not None and act.status == "pending")
        self.shadow.end_idle({t for b in batches for t in getattr(b, "over_budget", {})})
        self.store.save_batch(
            (self._row(key, j) for key, j in changed.items()), offsets, gone, new_actions,
            evals=taken, fleet=self._fleet_rows(changed),
            tenants=None if self.claims is None else self.claims.fresh(),
            extra=self.shadow.write,
        )
        self.shadow.saved()
        if self.claims is not None:
            self.claims.saved()
        res.committed_at = time.time()
        self.refused.update(res.refused)
        self.throttle.flush()
        self._observe(res, now)
        for key in res.stops:
            job = self.jobs[key]
            d = job.detector
            self.out.write(
                f"stop {show(key.name)} at step {d.stop_step}: "
                f"{d.state_dict()['stop_reason']}; best step {d.best_step} "
                f"(score {d.best_score}); tenant {show(job.tenant)}, source {show(key.source)}\n"
            )
        self.out.flush()
        for key in res.stops:
            self._write_back(key)
        for a in new_actions:
            if a.status == "dry-run":  # a tenant's dry run: said once, here, never run
                self._announce(a)
            if a.status == "failed":
                self._say(f"job {label(JobKey(a.source, a.job))}: no action run: {a.output}")
        self.run_pending()
        return res

    def _over_budget(self, batch: Batch) -> None:
        b = getattr(batch, "over_budget", None) or {}
        for tenant in b:
            self.throttle.note(tenant, "budget", f"tenant {show(tenant)}: more to read than "
                               "one poll's budget; the rest is read in the next polls "
                               "(said at most once per "
                               f"{self.throttle.interval:g} s)")

    def _admit(self, key: JobKey, items: list[Item], res: PollResult) -> _Job | None:
        """A new job for its tenant, or None (its records refused) over a quota."""
        tenant = items[0].tenant
        # Every source's tenant passes here, also one that claims no identity itself.
        problem = None if self.claims is None else self.claims.claim(tenant)
        if problem is not None:
            res.refused["tenant"] += len(items)
            self.throttle.refused(tenant, "tenant", f"{items[0].where}: {problem}; not read")
            return None
        need = self._job_bytes(key) + self.shadow.reserve(key, tenant)
        if self._tenant_jobs[tenant] >= self.max_jobs:
            said = f"has {self.max_jobs} jobs, its quota (--max-jobs)"
        elif self._tenant_held[tenant] + need > self.tenant_bytes:
            said = (f"holds {self._tenant_held[tenant]} bytes of state, and a new job may "
                    f"take {need} more: over its quota of {self.tenant_bytes} "
                    "(--tenant-bytes)")
        else:
            self._tenant_jobs[tenant] += 1
            self._tenant_held[tenant] += need
            job = self.jobs[key] = _Job(self._new_detector(tenant, key), tenant,
                                        label=self.rule_of(tenant).detector_spec())
            return job
        res.refused["quota"] += len(items)
        self.throttle.note(tenant, "quota", f"tenant {show(tenant)}: {said}; records of "
                           f"new jobs (first: {show(key.name)} at {items[0].where}) are "
                           "refused (said at most once per "
                           f"{self.throttle.interval:g} s)")
        return None

    def _job_bytes(self, key: JobKey) -> int:
        return job_bytes(key.source, key.name, self.store.keep_evals)

    def _fleet_rows(self, changed: dict[JobKey, _Job]
                    ) -> dict[tuple[str, str], tuple[dict, int, float | None]]:
        """The (eval group, tenant) estimates this poll's jobs fed, with how many jobs
        each has had and the sigma its jobs read; in a shared group every tenant's, since
        what each reads depends on all of them."""
        fed: set[tuple[str, str]] = set()
        for key, job in changed.items():
            rule = self.rule_of(job.tenant)
            if rule is None or rule.eval_group is None:
                continue
            self._fleet_jobs.setdefault((rule.eval_group, rule.tenant), set()).add(key)
            fed.add((rule.eval_group, rule.tenant))
        for name in {g for g, _t in fed if self.fleets[g].max_factor > 1.0}:
            fed.update((name, t) for t in self.fleets[name].tenants)
        return {(g, t): (self.fleets[g].own(t).state_dict(),
                         len(self._fleet_jobs.get((g, t), ())), self.fleets[g].sigma_for(t))
                for g, t in fed}

    def _observe(self, res: PollResult, started: float) -> None:
        if self.health is not None:
            self.health.committed(res.committed_at)
        m = self.metrics
        if m is None:
            return
        for tenant, n in res.fed_by_tenant.items():
            m.evals.labels(tenant=tenant).inc(n)
        for reason, n in res.refused.items():
            m.refused.labels(reason=reason).inc(n)
        for key in res.stops:
            m.stops.labels(tenant=self.jobs[key].tenant).inc()
        m.ingest_lag.set(res.committed_at - started)
        m.last_poll.set(res.committed_at)
        stopped = sum(1 for j in self.jobs.values() if j.detector.stopped)
        m.jobs.labels(state="stopped").set(stopped)
        m.jobs.labels(state="running").set(len(self.jobs) - stopped)
        for name, group in self.fleets.items():
            for tenant in group.tenants:
                s = group.sigma_for(tenant)
                if s is not None:
                    m.fleet_sigma.labels(group=name, tenant=tenant).set(s)

    def _feed(self, key: JobKey, job: _Job, item: Item, res: PollResult,
              taken: list[tuple[str, str, int, float]]) -> bool:
        """Feed one record; True when the job's state changed. A record the detector took
        is added to ``res.fed`` and to ``taken`` (the eval history the poll commits)."""
        det, rec, where = job.detector, item.rec, item.where
        if det.stopped:
            return False
        last = job.last_step
        if last is not None and rec.step <= last:
            what = "repeats" if rec.step == last else "comes after"
            self._say(f"{where}: job {show(rec.job)} step {rec.step} {what} step {last} "
                      "already taken; skipped")
            job.skipped += 1
            res.skipped += 1
            return True
        job.last_step = rec.step  # the detector takes the step even if the rule then fails
        try:
            det.update(rec.step, rec.eval, **rec.extras())
        except ValueError as exc:  # e.g. stopat without progress
            self._say(f"{where}: job {show(rec.job)}: {exc}; skipped")
            job.skipped += 1
            res.skipped += 1
            return True
        if math.isfinite(rec.eval):
            job.last_score = rec.eval
        job.job_id = rec.job_id
        res.fed.append(rec)
        res.fed_by_tenant[job.tenant] += 1
        taken.append((key.source, key.name, rec.step, rec.eval))
        return True

    def _decide_action(self, key: JobKey, job: _Job, now: float,
                       ended: str | None = None) -> ActionRow:
        det = job.detector
        rule = self.rule_of(job.tenant)
        action = None if rule is None else self._actions.get(rule.tenant)
        if ended is not None:  # e.g. an MLflow run FINISHED: nothing left to stop
            return ActionRow(key.source, key.name, job.tenant, "", "skipped", None,
                             f"the run has ended ({show(ended)}): no action", now, None, now)
        if rule is not None and not rule.allows(key.name):
            return ActionRow(key.source, key.name, job.tenant, "", "skipped", None,
                             "not in the tenant's allow list: no action", now, None, now)
        if action is None:
            return ActionRow(key.source, key.name, job.tenant, "", "done", None,
                             "no action configured", now, now, now)
        try:
            cmd = action.render(
                job=key.name, tenant=job.tenant, source=key.source, best_step=det.best_step,
                best_score=det.best_score, stop_step=det.stop_step,
                reason=det.state_dict()["stop_reason"], job_id=job.job_id,
            )
        except CheckpointEscape as exc:  # decided and recorded as failed: never run
            return ActionRow(key.source, key.name, job.tenant, "", "failed", None,
                             f"refused: {show(str(exc), 300)}", now, None, now)
        status = "dry-run" if self.dry_run or rule.dry_run else "pending"
        return ActionRow(key.source, key.name, job.tenant, cmd, status, None, "", now, None,
                         None)

    def _row(self, key: JobKey, job: _Job) -> JobRow:
        det = job.detector
        state = {**det.state_dict(), "label": job.label or det.spec}
        return JobRow(
            key.name, key.source, job.tenant, state, state["n_evals"], state["last_step"],
            job.last_score, det.best_step, det.best_score, det.stopped, det.stop_step,
            state["stop_reason"], job.skipped, job.updated,
        )

    # ---- actions ------------------------------------------------------------------------
    def run_pending(self) -> int:
        """Start ``pending`` actions on free workers (never blocks); return how many
        started. A row becomes ``running`` (compare-and-set, committed) only when its
        command is handed to a worker, so the rest stay ``pending`` across a kill."""
        if self.dry_run:
            for row in self.store.actions():
                if row.status in ("pending", "dry-run"):
                    self._announce(row)
            self.out.flush()
            return 0
        free = self.action_workers - len(self._inflight)
        if free <= 0:
            return 0
        n = 0
        for row in self.store.actions("pending"):
            if n >= free:
                break
            key = JobKey(row.source, row.job)
            if key in self._inflight:
                continue
            rule = self.rule_of(row.tenant)
            action = None if rule is None else self._actions.get(rule.tenant)
            if action is None:
                self.store.set_action(row.source, row.job, "failed", expect="pending",
                                      output="no action configured")
                continue
            if not self.store.set_action(row.source, row.job, "running", expect="pending"):
                continue  # someone else moved it: not ours to run
            self._inflight[key] = self._pool.submit(_timed, action, row.command)
            n += 1
        return n

    def _announce(self, row: ActionRow) -> None:
        key = JobKey(row.source, row.job)
        if key in self._announced:
            return
        self._announced.add(key)
        self.out.write(f"dry-run: would run for {show(row.job)}: "
                       f"{show(row.command, 2000)} (tenant {show(row.tenant)}, "
                       f"source {show(row.source)})\n")

    @property
    def actions_in_flight(self) -> int:
        """Actions started and not yet recorded."""
        return len(self._inflight)

    def reap(self, wait: bool = False) -> int:
        """Record the outcome of finished actions (all in-flight ones if ``wait``);
        return how many were recorded."""
        if wait and self._inflight:
            wait_futures(list(self._inflight.values()))
        n = 0
        for key, fut in list(self._inflight.items()):
            if not fut.done():
                continue
            del self._inflight[key]
            try:
                result, seconds = fut.result()
                rc, output = result.rc, result.output
            except Exception as exc:  # noqa: BLE001 - any failure is recorded, never lost
                rc, output, seconds = 127, f"could not run: {exc!r}", None
            status = "done" if rc in (0, ALREADY_ENDED) else "failed"
            if self.metrics is not None:
                self.metrics.actions.labels(outcome=status).inc()
                if seconds is not None:
                    self.metrics.action_seconds.observe(seconds)
            self.store.set_action(key.source, key.name, status, expect="running", rc=rc,
                                  output=output)
            # Every outcome is logged with the last line the command printed: a failure
            # as a problem (stderr), a success (or "already ended") beside the stop it
            # acted on (stdout).
            tail = output.strip().splitlines()[-1:]
            said = f"job {label(key)}: action exited {rc}" + (
                f": {show(tail[0], 300)}" if tail else " (no output)")
            if status == "failed":
                self._say(said)
            else:
                self.out.write(said + "\n")
                self.out.flush()
            n += 1
        return n

    def drain(self) -> None:
        """Run every pending action to its end (``--once``, shutdown)."""
        while True:
            self.run_pending()
            if not self._inflight:
                return
            self.reap(wait=True)

    # ---- loops --------------------------------------------------------------------------
    def run_until_idle(self, max_polls: int = 1_000_000) -> list[PollResult]:
        """``--once``: poll until a poll finds nothing new, run the actions, return."""
        results = []
        for _ in range(max_polls):
            res = self.poll_once()
            results.append(res)
            if not res.progressed:
                break
        self.drain()
        return results

    def run_forever(self, interval: float, should_stop: Callable[[float], bool]) -> None:
        """Poll every ``interval`` seconds until ``should_stop(timeout)`` is true
        (``threading.Event.wait`` fits: it returns at once when a signal sets it). On the
        way out, actions already started are waited for and recorded; pending ones stay
        pending for the next start. While a tenant has more to read than one poll's
        budget, the next poll comes at once (a backlog drains in short polls, each
        reading every tenant)."""
        check_seconds("--interval", interval)
        while True:
            started = time.monotonic()
            res = self.poll_once()
            wait = 0.0 if res.backlog else interval - (time.monotonic() - started)
            if should_stop(max(0.0, wait)):
                self.reap(wait=True)
                return

    def close(self) -> None:
        self.throttle.close()
        self._pool.shutdown(wait=True)
        self.reap()
        self.store.close()


def _timed(action: ShellAction, command: str):
    """Run one action command; return its result and wall time (for the metrics)."""
    t0 = time.monotonic()
    result = action.run(command)
    return result, time.monotonic() - t0
