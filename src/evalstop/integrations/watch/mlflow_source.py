"""Follow the runs of an MLflow tracking server or store (needs ``evalstop[mlflow]``).

``URI`` is what MLflow calls a tracking URI: ``http://127.0.0.1:5000`` (a ``mlflow
server``), ``sqlite:////var/mlflow/mlruns.db`` (verl's default store is
``sqlite:////tmp/mlruns.db``), ``file:///path/mlruns``. Each run of an experiment its
tenant owns is one job, keyed by its run id (a renamed run is the same job). Who owns an
experiment is what the platform set, by id or MLflow permission, never its name
(``mlflow_owner``); so a policy is required. The eval is the run's metric named by the
tenant's ``metric``, logged with ``mlflow.log_metric(key, value, step=N)``; its MLflow
timestamp is the record's ``time``.

Incremental, paged reads: the experiments are listed every ``list_every`` seconds (a new
one is seen within that), a few pages a poll; a poll lists each tenant's runs
(``search_runs``, which carries each run's latest value, step and timestamp of every
metric) and reads a run's metric history only when that latest point is past the run's
mark, from where the last read stopped, a bounded page at a time (MLflow's page token:
the history's offset, in its (timestamp, step) order). The marks (last step, its timestamp, points read) are committed
with the detector states (as offsets keyed ``mlflow:URI#RUN_ID``), so a restarted
controller reads nothing twice. Every tenant's reading is within its share of the poll
(``mlflow_budget``; a tenant whose requests ran past it sits out the next polls), and the whole poll runs in a thread of its own (``isolated``): a slow
or dead server holds up only its own runs, says so once, and shows in ``/healthz``.

Decisions go back to the run as tags, so the MLflow UI shows them: ``evalstop.stopped``,
``evalstop.stop_step``, ``evalstop.best_step``, ``evalstop.best_score``,
``evalstop.reason``; written by the source's own thread, and again on a later poll if a
run that the controller has stopped lacks them. A run that has ended (FINISHED, FAILED,
KILLED) is still read and its stop recorded, but it gets no action and no tags. A run
names its scheduler job with the tag ``evalstop.job_id`` (``{job_id}`` for actions).

Identity and safety: a job's source is ``mlflow:URI#EXPERIMENT_ID/RUN_ID``, ids assigned
by the tracking store, so a run's records reach only that run's job. Each value is checked
like a JSONL record (``records.check_record``): a NaN is taken (and ignored by the rule);
an infinite value (MLflow stores one as +-1.797e308, the largest float, also taken as
infinite) or a step outside ``[0, 2**53)`` is refused with one logged line. The password
of a ``user:password@`` URI is cut out of every message, whatever the library's error
says (``redact``).
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, NamedTuple

from evalstop import jobid
from evalstop.evallog import EvalRecord
from evalstop.integrations._extras import require
from evalstop.integrations.watch.isolated import DEFAULT_STUCK_AFTER, DEFAULT_WAIT, Isolated
from evalstop.integrations.watch.mlflow_budget import MlflowBudget, TenantShare
from evalstop.integrations.watch.mlflow_owner import Owners, PermissionAsker
from evalstop.integrations.watch.records import Refused, check_record, show
from evalstop.integrations.watch.redact import Redactor
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.store import Offset
from evalstop.integrations.watch.tenants import JobKey, Tenancy

EXPERIMENT_PAGE = 1000  # experiments per search_experiments page
CHUNK = 100  # experiment ids per search_runs request
TAG_PREFIX = "evalstop."
# The run tag a training script sets to its scheduler job id (evalstop.jobid), which
# {job_id} then names: an MLflow run is otherwise no scheduler job.
JOB_ID_TAG = TAG_PREFIX + "job_id"
MAX_TAG = 4000  # characters; MLflow stores tag values up to 8000 (5000 before 2.x)
ENDED = frozenset({"FINISHED", "FAILED", "KILLED"})
MAX_ENDED = 200_000  # ended runs remembered (for not tagging them), the newest
FLOAT_MAX = sys.float_info.max  # MLflow's stored +-inf
NEEDS_POLICY = ("--mlflow needs --policy FILE: an MLflow experiment belongs to the tenant "
                "whose table lists its id (mlflow_experiments) or whose MLflow user may "
                "write it (mlflow_user), never to a name")


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
        raise ValueError("--mlflow must be a tracking URI, got "
                         f"{display_uri(uri) if isinstance(uri, str) else uri!r}")
    scheme = urllib.parse.urlsplit(uri).scheme
    if scheme not in ("http", "https", "sqlite", "file", "postgresql", "mysql", "mssql"):
        raise ValueError(f"--mlflow {display_uri(uri)!r}: not a tracking URI (use http://HOST:PORT, "
                         "sqlite:////path/mlruns.db or file:///path/mlruns)")
    if scheme == "sqlite":
        path = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else ""
        if not path or not os.path.isfile(path):
            raise ValueError(f"--mlflow {uri!r}: no such SQLite file {path!r}")


class MlflowSource:
    def __init__(self, uri: str, *, metric: str = "eval", tenancy: Tenancy | None = None,
                 client: Any = None, budget: MlflowBudget | None = None,
                 owners: Owners | None = None, wait: float | None = DEFAULT_WAIT,
                 stuck_after: float = DEFAULT_STUCK_AFTER,
                 clock: Callable[[], float] = time.monotonic) -> None:
        check_uri(uri)
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"--mlflow-metric must name a metric, got {metric!r}")
        mlflow = _mlflow()  # the missing extra is said first
        policy = getattr(tenancy, "policy", None)
        if policy is None:
            raise ValueError(NEEDS_POLICY)
        self.redact = Redactor(uri)
        self.client = client if client is not None else mlflow.MlflowClient(tracking_uri=uri)
        self.uri = display_uri(uri)
        self.name = f"mlflow:{self.uri}"
        self.metric = metric
        self.tenancy = tenancy
        self.budget = budget if budget is not None else MlflowBudget()
        if owners is None:
            asks = any(r.mlflow_user for r in policy.rules) and uri.startswith("http")
            owners = Owners(policy, PermissionAsker(uri) if asks else None)
        self.owners = owners
        self.clock = clock
        self.marks: dict[str, Offset] = {}  # run id -> mark (pos: step, line: ms, ino: read)
        self.fetches = 0  # history pages read since start (incremental reads, tested)
        self._announced: set[str] = set()  # experiments said to be nobody's
        self._down = self._perm_down = self._tags_down = self._said_stuck = False
        self._tenant_cursor: str | None = None  # the last tenant served by a cut poll
        self._owed: dict[str, tuple[float, float]] = {}  # tenant -> (seconds owed, since)
        self._finished: dict[str, tuple[float, float]] = {}  # the same, for finish overruns
        self._longest: dict[str, float] = {}  # tenant -> its slowest request, last reading
        self._parts: Batch | None = None  # tenants read by the running poll, not yet taken
        self._parts_lock = threading.Lock()
        self._run_cursor: dict[str, str] = {}  # tenant -> the last run read whole
        self._listing: dict[str, tuple[int, str | None]] = {}  # tenant -> where it resumes
        self._tags: dict[str, dict[str, str]] = {}  # run id -> decision tags to write
        self._ended: dict[str, str] = {}  # run id -> its end status, as last listed
        self._listed: tuple[float, list[tuple[str, str]]] | None = None  # (when, listed)
        # A listing under way: (when it began, the experiments so far, the next page's token)
        self._relisting: tuple[float, list[tuple[str, str]], str | None] | None = None
        self._worker = Isolated(self._poll_now, name=self.name, wait=wait,
                                stuck_after=stuck_after)
        self.last_step: Callable[[JobKey], int | None] = lambda key: None
        self.decision_of: Callable[[JobKey], dict[str, Any] | None] = lambda key: None

    # ---- persisted marks ----------------------------------------------------------------
    def _mark_key(self, run_id: str) -> str:
        return f"{self.name}#{run_id}"

    def load(self, offsets: dict[str, Offset]) -> None:
        prefix = f"{self.name}#"
        self.marks = {k[len(prefix):]: o for k, o in offsets.items() if k.startswith(prefix)}

    # ---- the controller's side ----------------------------------------------------------
    def poll(self) -> Batch:
        """The batch of the source's last finished poll (starting the next one), or, while
        one is still running, what it has read so far (``pending`` until it is stuck: the
        controller polls again at once, each poll waiting up to ``wait`` for it). Each
        tenant's reading is handed over as soon as it is done, so a tenant whose requests
        are slow, read after the others, does not hold up their records."""
        try:
            done, batch = self._worker.take()
        except Exception as exc:  # noqa: BLE001 - a failed poll is one line, never the end
            done, batch = True, Batch(self.name)
            batch.problems.append(self._line(f"{self.name}: poll failed ({exc!r}); will retry"))
        with self._parts_lock:
            parts, self._parts = self._parts, None
        if not done:
            stuck = self._worker.stuck()
            batch = Batch(self.name, progressed=True, pending=stuck is None)
            if stuck is not None and not self._said_stuck:
                self._said_stuck = True
                batch.problems.append(f"{self.name}: no answer for {stuck:.0f} s (server slow "
                                      "or down); its runs wait, the other sources go on")
            return batch.after(parts)
        batch = batch.after(parts)
        if self._said_stuck and not self._down:  # a poll that timed out is no answer
            self._said_stuck = False
            batch.problems.append(f"{self.name}: answering again")
        return batch

    def stuck(self) -> str | None:
        """Why this source holds up its runs now (for ``/healthz``), or None."""
        t = self._worker.stuck()
        return None if t is None else f"{self.name}: no answer for {t:.0f} s"

    def _line(self, text: str) -> str:
        return self.redact(text)

    def _error(self, exc: BaseException) -> str:
        return show(self.redact(str(exc)), 200)

    # ---- one poll, in the source's own thread -------------------------------------------
    def _poll_now(self) -> Batch:
        batch = Batch(self.name)
        b = self.budget
        start = self.clock()
        until = start + b.server_seconds
        self._write_tags(batch, until)
        try:
            experiments = self._experiments(start)
        except Exception as exc:  # noqa: BLE001 - network, store, auth: retried next poll
            self._relisting = None
            if not self._down:
                batch.problems.append(f"{self.name}: cannot list experiments "
                                      f"({self._error(exc)}); will retry")
            self._down = True
            return batch
        if self._down:
            batch.problems.append(f"{self.name}: reachable again")
        self._down = False
        if experiments is None:  # the first listing goes on in the next poll, at once
            batch.pending = batch.progressed = True
            return batch
        by_tenant = self._owned(batch, experiments, min(until, start + b.server_seconds / 4))
        points = b.server_points
        order = _rotate(sorted(by_tenant), self._tenant_cursor)
        if self._tenant_cursor is None:  # slow requests go last (after a cut poll: in turn)
            order.sort(key=lambda t: self._longest.get(t, 0.0))
        self._tenant_cursor = None
        for i, tenant in enumerate(order):
            now = self.clock()
            if now >= until or points <= 0:  # the server's budget: the rest go first next
                self._tenant_cursor = order[i - 1] if i else None
                for t in order[i:]:
                    batch.over_budget[t] = "server budget"
                break
            if self._owes(tenant, now):
                # Its last reads ran long: it sits out, not the rest. No backlog is claimed
                # for it (the controller would poll again at once, the debt is repaid by the
                # clock, and the quick polls between would only load the server).
                continue
            finish = max(0.0, b.finish - self._owing(self._finished, tenant, now))
            share = TenantShare(min(b.points, points), b.requests, min(now + b.seconds, until),
                                finish_until=min(now + b.seconds + finish, until))
            given = share.points
            part = Batch(self.name)
            self._read_tenant(part, tenant, by_tenant[tenant], share)
            points -= given - share.points
            self._longest[tenant] = share.longest
            over = self.clock() - now - b.seconds
            if over > 0 and share.longest > b.seconds:  # a request slower than a share
                self._owed[tenant] = (over, self.clock())
            elif over > 0 and share.past:  # a small reading finished past its share
                self._finished[tenant] = (self._owing(self._finished, tenant, self.clock())
                                          + over, self.clock())
            if share.short:
                part.over_budget[tenant] = share
            self._hand_over(part)
        self._longest = {t: v for t, v in self._longest.items() if t in by_tenant}
        self._finished = {t: v for t, v in self._finished.items() if t in by_tenant}
        self._write_tags(batch, until)
        return batch

    def _hand_over(self, part: Batch) -> None:
        """A tenant's reading, for the controller's next take (woken when it has records,
        though the rest of the poll goes on)."""
        with self._parts_lock:
            self._parts = part.after(self._parts)
        if part.records or part.offsets:
            self._worker.wake()

    def _owes(self, tenant: str, now: float) -> bool:
        """True while the time ``tenant``'s reads ran past its share is not yet repaid
        (``budget.repay`` seconds a second)."""
        return self._owing(self._owed, tenant, now) > 0

    def _owing(self, debts: dict[str, tuple[float, float]], tenant: str,
               now: float) -> float:
        """Seconds ``tenant`` still owes in ``debts`` (repaid at ``budget.repay`` s a
        second; forgotten once repaid)."""
        owed = debts.get(tenant)
        if owed is None:
            return 0.0
        left = owed[0] - (now - owed[1]) * self.budget.repay
        if left > 0:
            return left
        del debts[tenant]
        return 0.0

    def _experiments(self, start: float) -> list[tuple[str, str]] | None:
        """(id, name) of every experiment, at most ``budget.experiments``, as last listed
        whole (None before the first listing is whole). A new listing begins every
        ``list_every`` s and reads pages for at most ``budget.seconds`` a poll (one page at
        least), so many experiments cost each poll a share, not the whole listing; the
        last whole listing holds meanwhile."""
        b = self.budget
        if self._relisting is None and (self._listed is None
                                        or start - self._listed[0] >= b.list_every):
            self._relisting = (start, [], None)
        if self._relisting is not None:
            began, out, token = self._relisting
            while True:
                page = self.client.search_experiments(max_results=EXPERIMENT_PAGE,
                                                      page_token=token)
                out.extend((str(e.experiment_id), str(e.name)[:200]) for e in page)
                token = getattr(page, "token", None) or None
                if token is None or len(out) >= b.experiments:
                    self._listed, self._relisting = (began, out[:b.experiments]), None
                    break
                if self.clock() >= start + b.seconds:
                    self._relisting = (began, out, token)
                    break
        return None if self._listed is None else self._listed[1]

    def _owned(self, batch: Batch, experiments: list[tuple[str, str]],
               until: float) -> dict[str, list[str]]:
        """Each tenant's experiment ids; the others are said to be nobody's, once."""
        by_tenant: dict[str, list[str]] = {}
        self.owners.begin(until)
        ids = set()
        failed = None
        for eid, exp_name in sorted(experiments, key=lambda e: _id_order(e[0])):
            ids.add(eid)
            try:
                tenant, why = self.owners.owner(eid)
            except Exception as exc:  # noqa: BLE001 - no more questions this poll
                self.owners.begin(0.0)
                failed = failed or exc
                tenant, why = None, ""
            if tenant is not None:
                by_tenant.setdefault(tenant, []).append(eid)
                self._announced.discard(eid)
            elif why and eid not in self._announced:
                self._announced.add(eid)
                batch.refuse(Refused("tenant", f"{self.name} experiment {show(eid)} "
                                               f"({show(exp_name, 80)!r}): nobody's: "
                                               f"{why}; not read").refusal)
        if failed is not None and not self._perm_down:
            batch.problems.append(f"{self.name}: cannot read experiment permissions "
                                  f"({self._error(failed)}); experiments not yet known to "
                                  "be a tenant's wait")
        self._perm_down = failed is not None
        self.owners.forget(ids)
        self._announced &= ids
        return by_tenant

    def _read_tenant(self, batch: Batch, tenant: str, exp_ids: list[str],
                     share: TenantShare) -> None:
        metric = self.tenancy.metric(tenant, self.metric)
        try:
            runs = self._runs(tenant, exp_ids, metric, share)
        except Exception as exc:  # noqa: BLE001
            batch.problems.append(f"{self.name}: cannot list the runs of tenant "
                                  f"{show(tenant)} ({self._error(exc)}); will retry")
            return
        runs = sorted({r.run_id: r for r in runs}.items())
        if sum(self._has_new(r) for _rid, r in runs) > self.budget.finish_runs:
            share.finish_until = share.until  # not a small reading: cut at its share
        last = self._run_cursor.get(tenant)
        i = next((k for k, (rid, _r) in enumerate(runs) if last is not None and rid > last), 0)
        for run_id, run in runs[i:] + runs[:i]:
            first_only = False
            if share.history_spent(self.clock()):
                if not share.may_finish(self.clock(), self.budget.finish):
                    share.short = True
                    return
                first_only = share.past = True  # a small reading slowed by the server
            try:
                whole = self._take_run(batch, tenant, metric, run, share, first_only)
            except Exception as exc:  # noqa: BLE001
                batch.problems.append(f"{self.name}#{show(run_id)}: cannot read "
                                      f"{show(metric)!r} ({self._error(exc)}); will retry")
                return
            if not whole:
                share.short = True
                return
            self._run_cursor[tenant] = run_id

    def _runs(self, tenant: str, exp_ids: list[str], metric: str,
              share: TenantShare) -> list[_RunView]:
        """The tenant's runs, a page a request, within its share; a listing cut short
        resumes there next poll."""
        chunks = [exp_ids[i:i + CHUNK] for i in range(0, len(exp_ids), CHUNK)]
        pos = self._listing.pop(tenant, (0, None))
        if pos[0] >= len(chunks):
            pos = (0, None)
        (ci, token), moved, out = pos, 0, []
        while moved < len(chunks):
            if share.spent(self.clock()):
                share.short = True
                self._listing[tenant] = (ci, token)
                break
            share.requests -= 1
            asked = self.clock()
            page = self.client.search_runs(experiment_ids=chunks[ci],
                                           max_results=self.budget.run_page,
                                           order_by=["attributes.start_time ASC"],
                                           page_token=token)
            share.longest = max(share.longest, self.clock() - asked)
            out.extend(_RunView.of(r, metric) for r in page)  # a page's runs, then only these
            token = getattr(page, "token", None) or None
            if token is None:
                ci, moved = (ci + 1) % len(chunks), moved + 1
        return out

    def _has_new(self, run: _RunView) -> bool:
        mark = self.marks.get(run.run_id)
        return run.latest is not None and (mark is None or run.latest > (mark.pos, mark.line))

    def _take_run(self, batch: Batch, tenant: str, metric: str, run: _RunView,
                  share: TenantShare, first_only: bool = False) -> bool:
        """Read what is new of one run, a page at a time within ``share`` (only one page
        when ``first_only``); True when it was read to its end (or had nothing new)."""
        run_id = run.run_id
        source = f"{self.name}#{run.experiment_id}/{run_id}"
        key = JobKey(source, run_id)
        ended = run.status if run.status in ENDED else None
        self._note_ended(run_id, ended)
        if self._repair_tags(key, run, ended):
            return True  # stopped: its later points are never read
        if not self._has_new(run):
            return True  # nothing new: no history read
        mark = self.marks.get(run_id)
        if mark is None:  # first sight (or the marks were lost): resume past the state
            last = self.last_step(key)
            floor, read = ((-math.inf, -math.inf) if last is None else (last, math.inf)), 0
        else:
            floor, read = (mark.pos, mark.line), mark.ino
        top = None if mark is None else (mark.pos, mark.line)  # the last point consumed
        pages = 0
        while True:
            if share.history_spent(self.clock()) and not (first_only and pages == 0):
                return False
            pages += 1
            share.requests -= 1
            asked = self.clock()
            page = self._history(run_id, metric, read,
                                 max(1, min(self.budget.page, share.points)))
            share.longest = max(share.longest, self.clock() - asked)
            share.read = True
            self.fetches += 1
            share.points -= len(page)
            read += len(page)
            for m in page:
                step, ts = int(m.step), int(m.timestamp)
                top = (step, ts) if top is None else max(top, (step, ts))
                if (step, ts) > floor:
                    self._take_point(batch, tenant, key, metric, (step, ts), m.value, ended,
                                     run.job_id)
            if top is not None:
                mark = Offset(0, read, top[0], top[1], source)
                self.marks[run_id] = mark
                batch.offsets[self._mark_key(run_id)] = mark
                batch.progressed = True
            if not getattr(page, "token", None):
                return True

    def _history(self, run_id: str, metric: str, offset: int, n: int) -> Any:
        """``n`` points of a metric's history from ``offset`` (one request)."""
        from mlflow.utils.search_utils import SearchUtils

        token = SearchUtils.create_page_token(offset).decode() if offset else None
        return self.client._tracking_client.store.get_metric_history(
            run_id, metric, max_results=n, page_token=token)

    def _take_point(self, batch: Batch, tenant: str, key: JobKey, metric: str,
                    at: tuple[int, int], value: Any, ended: str | None,
                    job_id: str | None = None) -> None:
        """One history point (``at``: its step and MLflow timestamp, ms), checked."""
        step, ts = at
        where = f"{key.source}@{show(metric)}:{step}"
        try:
            v = float(value)
            if abs(v) >= FLOAT_MAX:  # how MLflow stores an infinite value
                v = math.copysign(math.inf, v)
            rec = EvalRecord(key.name, step, v, time=ts / 1000, job_id=job_id)
            check_record(rec, where)
        except (TypeError, ValueError):
            batch.refuse(Refused("value", f"{where}: value {show(repr(value), 40)} is not "
                                          "a number").refusal, tenant)
            return
        except Refused as exc:
            batch.refuse(exc.refusal, tenant)
            return
        batch.records.append(Item(rec, where, key, tenant, ended=ended))

    def _note_ended(self, run_id: str, ended: str | None) -> None:
        if ended is None:
            self._ended.pop(run_id, None)
            return
        self._ended[run_id] = ended
        if len(self._ended) > MAX_ENDED:
            del self._ended[next(iter(self._ended))]

    # ---- decisions back to the run ---------------------------------------------------------
    def _run_id(self, key: JobKey) -> str | None:
        prefix = f"{self.name}#"
        if not key.source.startswith(prefix):
            return None  # another source's job
        return key.source[len(prefix):].split("/", 1)[-1]

    def on_stop(self, key: JobKey, decision: dict[str, Any]) -> str | None:
        """Queue the stopped run's tags, written by the source's own thread (a dead
        server never holds up the controller); an ended run gets none."""
        run_id = self._run_id(key)
        if run_id is None or run_id in self._ended:
            return None
        self._tags[run_id] = {
            "stopped": "true",
            "stop_step": _text(decision.get("stop_step")),
            "best_step": _text(decision.get("best_step")),
            "best_score": _text(decision.get("best_score")),
            "reason": _text(decision.get("reason"))[:MAX_TAG],
        }
        return None

    def _write_tags(self, batch: Batch, until: float) -> None:
        for run_id, tags in list(self._tags.items()):
            if self.clock() >= until:
                return
            try:
                for k, v in tags.items():
                    self.client.set_tag(run_id, TAG_PREFIX + k, v)
            except Exception as exc:  # noqa: BLE001 - kept, written on a later poll
                if not self._tags_down:
                    batch.problems.append(f"{self.name}#{show(run_id)}: cannot tag the run "
                                          f"({self._error(exc)}); will retry")
                self._tags_down = True
                return
            self._tags_down = False
            self._tags.pop(run_id, None)

    def _repair_tags(self, key: JobKey, run: _RunView, ended: str | None) -> bool:
        """True when the controller has stopped this job (queueing its tags if they are
        missing and the run is still running)."""
        decision = self.decision_of(key)
        if decision is None:
            return False
        if ended is None and not run.tagged:
            self.on_stop(key, decision)
        return True


class _RunView(NamedTuple):
    """What a poll keeps of a listed run (a run's params, tags and other metrics, which
    its tenant may make huge, are dropped with the page that brought them)."""

    run_id: str
    experiment_id: str
    status: str
    latest: tuple[int, int] | None  # the metric's latest (step, timestamp)
    tagged: bool  # carries evalstop.stopped = true
    job_id: str | None  # the run's tag evalstop.job_id, when it is a scheduler job id

    @classmethod
    def of(cls, run: Any, metric: str) -> _RunView:
        m = next((m for m in run.data._metric_objs if m.key == metric), None)
        tags = run.data.tags or {}
        job_id = tags.get(JOB_ID_TAG)
        if job_id is not None and jobid.check(job_id) is not None:
            job_id = None  # not an id: its stop renders no {job_id}, which actions refuse
        return cls(str(run.info.run_id), str(run.info.experiment_id), str(run.info.status),
                   None if m is None else (int(m.step), int(m.timestamp)),
                   tags.get(TAG_PREFIX + "stopped") == "true", job_id)


def _rotate(names: list[str], last: str | None) -> list[str]:
    """``names`` (sorted) from the one after ``last``, wrapping."""
    i = next((k for k, n in enumerate(names) if last is not None and n > last), 0)
    return names[i:] + names[:i]


def _id_order(eid: str) -> tuple:
    return (0, int(eid), "") if eid.isdigit() else (1, 0, eid)


def _text(v: Any) -> str:
    return "" if v is None else str(v)
