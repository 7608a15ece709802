"""Follow the runs of an MLflow tracking server or store (needs ``evalstop[mlflow]``).

``URI`` is what MLflow calls a tracking URI: ``http://127.0.0.1:5000`` (a ``mlflow
server``), ``sqlite:////var/mlflow/mlruns.db`` (verl's default store is
``sqlite:////tmp/mlruns.db``), ``file:///path/mlruns``. Each active run of each active
experiment is one job, named by its run name (its run id when it has none); its tenant is
the experiment's name, or the first policy tenant whose ``sources`` globs match
``EXPERIMENT/RUN_NAME``, or ``--tenant-pattern``'s group matched against that path. The
eval is the run's metric named by the tenant's ``metric`` (``--mlflow-metric`` without a
policy), logged with ``mlflow.log_metric(key, value, step=N)``.

Incremental reads: a poll lists runs (one paged ``search_runs`` per experiment, which
carries each run's latest value, step and timestamp of every metric) and fetches a run's
metric history only when that latest point is past the run's high-water mark (last step
and timestamp taken); the marks are committed with the detector states (as offsets keyed
``mlflow:URI#RUN_ID``), so a restarted controller reads nothing twice.

Decisions go back to the run as tags, so the MLflow UI shows them: ``evalstop.stopped``,
``evalstop.stop_step``, ``evalstop.best_step``, ``evalstop.best_score``,
``evalstop.reason``. They are written when the stop is decided, and again on a later poll
if a run that the controller has stopped lacks them (the controller was killed between
the two, or the server was down).

Identity and safety: a job's source is ``mlflow:URI#EXPERIMENT_ID/RUN_ID``, ids assigned
by the tracking store, so a run's records reach only that run's job, and tags are
written to that run only. Names from the store (experiment, run) are checked like file
names; each value like a JSONL record (``records.check_record``): a NaN is taken (and
ignored by the rule), an infinite value, a step outside ``[0, 2**53)`` or a bad name is
refused with one logged line. A server that cannot be reached costs one line per poll.
"""

from __future__ import annotations

import fnmatch
import math
import os
import urllib.parse
from collections.abc import Callable
from typing import Any

from evalstop.evallog import EvalRecord
from evalstop.integrations._extras import require
from evalstop.integrations.watch.records import Refused, check_record, name_problem, show
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.store import Offset
from evalstop.integrations.watch.tenants import JobKey, Tenancy

PAGE = 1000  # runs per search_runs page (MLflow's own maximum is 50000)
MAX_FETCHES_PER_POLL = 200  # metric histories read per poll; the rest wait for the next
TAG_PREFIX = "evalstop."
MAX_TAG = 4000  # characters; MLflow stores tag values up to 8000 (5000 before 2.x)


def _mlflow():
    return require("mlflow", what="evalstop watch --mlflow", extra="mlflow")


def display_uri(uri: str) -> str:
    """The URI as shown and used in job identities: without user:password@."""
    parts = urllib.parse.urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


def check_uri(uri: str) -> None:
    """A one-line ValueError for a URI that cannot be a tracking store to follow; a
    ``sqlite:`` file must exist (MLflow would otherwise create an empty one)."""
    if not isinstance(uri, str) or not uri.strip() or any(ord(c) < 32 for c in uri):
        raise ValueError(f"--mlflow must be a tracking URI, got {uri!r}")
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme not in ("http", "https", "sqlite", "file", "postgresql", "mysql", "mssql"):
        raise ValueError(f"--mlflow {display_uri(uri)!r}: not a tracking URI (use http://HOST:PORT, "
                         "sqlite:////path/mlruns.db or file:///path/mlruns)")
    if scheme == "sqlite":
        path = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else ""
        if not path or not os.path.isfile(path):
            raise ValueError(f"--mlflow {uri!r}: no such SQLite file {path!r}")


class MlflowSource:
    def __init__(self, uri: str, *, metric: str = "eval", loss_metric: str | None = None,
                 tenancy: Tenancy | None = None, client: Any = None,
                 max_fetches: int = MAX_FETCHES_PER_POLL) -> None:
        check_uri(uri)
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"--mlflow-metric must name a metric, got {metric!r}")
        if max_fetches < 1:
            raise ValueError(f"max_fetches must be >= 1, got {max_fetches}")
        if client is None:
            client = _mlflow().MlflowClient(tracking_uri=uri)
        self.client = client
        self.uri = display_uri(uri)
        self.name = f"mlflow:{self.uri}"
        self.metric, self.loss_metric = metric, loss_metric
        self.tenancy = tenancy if tenancy is not None else Tenancy()
        self.max_fetches = max_fetches
        self.marks: dict[str, Offset] = {}  # run id -> high-water mark (pos: step, line: ms)
        self.fetches = 0  # metric histories read since start (incremental reads, tested)
        self._announced: set[str] = set()  # refused experiments/runs, logged once each
        self._down = False
        self.last_step: Callable[[JobKey], int | None] = lambda key: None
        self.decision_of: Callable[[JobKey], dict[str, Any] | None] = lambda key: None

    # ---- persisted marks ----------------------------------------------------------------
    def _mark_key(self, run_id: str) -> str:
        return f"{self.name}#{run_id}"

    def load(self, offsets: dict[str, Offset]) -> None:
        prefix = f"{self.name}#"
        self.marks = {k[len(prefix):]: o for k, o in offsets.items() if k.startswith(prefix)}

    # ---- tenants ------------------------------------------------------------------------
    def _tenant(self, experiment: str, run_name: str) -> str:
        path = f"{experiment.lstrip('/')}/{run_name}"
        policy = getattr(self.tenancy, "policy", None)
        if policy is not None:
            rule = next((r for r in policy.rules
                         if any(fnmatch.fnmatchcase(path, g) for g in r.sources)), None)
            if rule is None:
                raise Refused("tenant", f"{self.name} experiment {show(experiment)!r}: no "
                                        f"tenant of policy {show(policy.path)} owns it; not read")
            return rule.tenant
        pattern = self.tenancy.pattern
        if pattern is not None:
            m = pattern.match(path)
            tenant = m.group("tenant") if m else None
            if not tenant:
                raise Refused("tenant", f"{self.name} run {show(path)!r}: matches no tenant "
                                        f"(--tenant-pattern {pattern.pattern!r}); not read")
        else:
            tenant = experiment
        problem = name_problem(tenant, "tenant")
        if problem is not None:
            raise Refused("tenant", f"{self.name} experiment {show(experiment)!r}: {problem}; "
                                    "not read")
        return tenant

    def _refuse_once(self, batch: Batch, what: str, reason: str, message: str) -> None:
        if what not in self._announced:
            self._announced.add(what)
            batch.refused.append(Refused(reason, message).refusal)

    # ---- listing --------------------------------------------------------------------------
    def _paged(self, call, **kwargs) -> list:
        out, token = [], None
        while True:
            page = call(**kwargs, page_token=token)
            out.extend(page)
            token = getattr(page, "token", None)
            if not token:
                return out

    def _experiments(self) -> list:
        return self._paged(self.client.search_experiments, max_results=PAGE)

    def _runs(self, experiment_id: str) -> list:
        return self._paged(self.client.search_runs, experiment_ids=[experiment_id],
                           max_results=PAGE, order_by=["attributes.start_time ASC"])

    # ---- one poll -------------------------------------------------------------------------
    def poll(self) -> Batch:
        batch = Batch(self.name)
        try:
            experiments = self._experiments()
        except Exception as exc:  # noqa: BLE001 - network, store, auth: retried next poll
            if not self._down:
                batch.problems.append(f"{self.name}: cannot list experiments "
                                      f"({show(str(exc), 200)}); will retry")
            self._down = True
            return batch
        if self._down:
            batch.problems.append(f"{self.name}: reachable again")
        self._down = False
        fetches = 0
        for exp in sorted(experiments, key=lambda e: str(e.experiment_id)):
            exp_id, exp_name = str(exp.experiment_id), str(exp.name)
            try:
                runs = self._runs(exp_id)
            except Exception as exc:  # noqa: BLE001
                batch.problems.append(f"{self.name} experiment {show(exp_name)!r}: cannot "
                                      f"list runs ({show(str(exc), 200)}); will retry")
                continue
            for run in runs:
                if fetches >= self.max_fetches:
                    batch.progressed = True  # more to read: --once polls again
                    return batch
                fetches += self._take_run(batch, exp_id, exp_name, run)
        return batch

    def _take_run(self, batch: Batch, exp_id: str, exp_name: str, run: Any) -> int:
        """Read one run if its latest point is new; return how many histories it read."""
        run_id = str(run.info.run_id)
        name = run.info.run_name or run_id
        source = f"{self.name}#{exp_id}/{run_id}"
        problem = name_problem(name, "run name")
        if problem is not None:
            self._refuse_once(batch, source, "name", f"{source}: {problem}; not read")
            return 0
        try:
            tenant = self._tenant(exp_name, name)
            self.tenancy.admit(tenant, name, source)
        except Refused as exc:
            self._refuse_once(batch, source, exc.refusal.reason, exc.refusal.message)
            return 0
        key = JobKey(source, name)
        if self._repair_tags(key, run):
            return 0  # stopped: its later points are never read
        metric = self.tenancy.metric(tenant, self.metric)
        latest = next((m for m in run.data._metric_objs if m.key == metric), None)
        mark = self.marks.get(run_id)
        if latest is None or (mark is not None and (latest.step, latest.timestamp)
                              <= (mark.pos, mark.line)):
            return 0  # nothing new: no history read
        try:
            history = self.client.get_metric_history(run_id, metric)
            losses = ({m.step: m.value for m in self.client.get_metric_history(
                run_id, self.loss_metric)} if self.loss_metric else {})
        except Exception as exc:  # noqa: BLE001
            batch.problems.append(f"{source}: cannot read {show(metric)!r} "
                                  f"({show(str(exc), 200)}); will retry")
            return 1
        self.fetches += 1
        points = sorted((int(m.step), int(m.timestamp), m.value) for m in history)
        if mark is None:  # first sight (or the marks were lost): resume past the state
            last = self.last_step(key)
            floor = (-math.inf, -math.inf) if last is None else (last, math.inf)
        else:
            floor = (mark.pos, mark.line)
        new = [p for p in points if (p[0], p[1]) > floor]
        if not new:
            return 1
        for step, _ts, value in new:
            where = f"{source}@{show(metric)}:{step}"
            try:
                rec = EvalRecord(name, step, float(value), loss=_finite(losses.get(step)))
                check_record(rec, where)
            except (TypeError, ValueError):
                batch.refused.append(Refused("value", f"{where}: value {show(repr(value), 40)} "
                                                      "is not a number").refusal)
                continue
            except Refused as exc:
                batch.refused.append(exc.refusal)
                continue
            batch.records.append(Item(rec, where, key, tenant))
        top_step, top_ts, _ = max(new, key=lambda p: (p[0], p[1]))
        mark = Offset(0, 0, top_step, top_ts, source)
        self.marks[run_id] = mark
        batch.offsets[self._mark_key(run_id)] = mark
        batch.progressed = True
        return 1

    # ---- decisions back to the run ---------------------------------------------------------
    def _run_id(self, key: JobKey) -> str | None:
        prefix = f"{self.name}#"
        if not key.source.startswith(prefix):
            return None  # another source's job
        return key.source[len(prefix):].split("/", 1)[-1]

    def on_stop(self, key: JobKey, decision: dict[str, Any]) -> str | None:
        """Tag the stopped run; a one-line problem (the controller logs it) or None."""
        run_id = self._run_id(key)
        if run_id is None:
            return None
        tags = {
            "stopped": "true",
            "stop_step": _text(decision.get("stop_step")),
            "best_step": _text(decision.get("best_step")),
            "best_score": _text(decision.get("best_score")),
            "reason": _text(decision.get("reason"))[:MAX_TAG],
        }
        try:
            for k, v in tags.items():
                self.client.set_tag(run_id, TAG_PREFIX + k, v)
        except Exception as exc:  # noqa: BLE001 - retried by _repair_tags on a later poll
            return (f"job {show(key.name)} [{show(key.source)}]: cannot tag the run "
                    f"({show(str(exc), 200)}); will retry")
        return None

    def _repair_tags(self, key: JobKey, run: Any) -> bool:
        """True when the controller has stopped this job (tagging it if its tags are
        missing)."""
        decision = self.decision_of(key)
        if decision is None:
            return False
        if (run.data.tags or {}).get(TAG_PREFIX + "stopped") != "true":
            self.on_stop(key, decision)
        return True


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _text(v: Any) -> str:
    return "" if v is None else str(v)
