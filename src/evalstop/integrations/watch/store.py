"""The controller's state in SQLite: detector state per job, read offsets per log file,
and the stop action per job.

Everything one poll changes (detector states, offsets, new stop actions) is written in
one transaction, so a controller killed at any moment restarts from a consistent point:
the offsets and the detector states always describe the same records. WAL mode lets
``evalstop watch --status`` read while a controller writes.

An action row goes ``pending`` (the stop is decided, in the same transaction as the
decision) -> ``running`` (committed just before the command starts) -> ``done`` or
``failed``; a ``running`` row found at start is reconciled by the controller (back to
``pending``, or ``unknown`` for the operator). Every transition is a compare-and-set (``UPDATE ... WHERE status=<old>``),
and the primary key on (source, job) makes a second action for one job impossible.

One controller per database: a writer holds an exclusive ``flock`` on the database file
itself, opened by its resolved path, so a second controller reaching the same file
through a symbolic link (or a hard link, or another mount) is refused. A database lock
held by someone else (a backup, a ``sqlite3`` shell) is waited out with backoff, never
fatal.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from evalstop.fileio import special_kind

# How long a controller waits at start for a state database another process holds locked
# (SQLite's EXCLUSIVE locking mode, a long backup), before it gives up with one line.
START_WAIT = 60.0
SCHEMA_VERSION = "2"  # 2: jobs are (source, job), with a tenant

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
    source TEXT NOT NULL,
    job TEXT NOT NULL,
    tenant TEXT NOT NULL,
    detector TEXT NOT NULL,
    n_evals INTEGER NOT NULL,
    last_step INTEGER,
    last_score REAL,
    best_step INTEGER,
    best_score REAL,
    stopped INTEGER NOT NULL,
    stop_step INTEGER,
    reason TEXT NOT NULL,
    skipped INTEGER NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (source, job)
);
CREATE TABLE IF NOT EXISTS offsets(
    path TEXT PRIMARY KEY,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    line INTEGER NOT NULL,
    source TEXT NOT NULL,
    tail BLOB NOT NULL,
    skipping INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS actions(
    source TEXT NOT NULL,
    job TEXT NOT NULL,
    tenant TEXT NOT NULL,
    command TEXT NOT NULL,
    status TEXT NOT NULL,
    rc INTEGER,
    output TEXT NOT NULL DEFAULT '',
    decided REAL NOT NULL,
    started REAL,
    finished REAL,
    PRIMARY KEY (source, job)
);
-- Each job's evals as taken (for the status page's curves); tables added within schema 2
-- (CREATE IF NOT EXISTS), so a state written before them opens unchanged.
CREATE TABLE IF NOT EXISTS evals(
    source TEXT NOT NULL,
    job TEXT NOT NULL,
    step INTEGER NOT NULL,
    score REAL,
    PRIMARY KEY (source, job, step)
) WITHOUT ROWID;
-- Each tenant's own noise estimate per eval group (detectors.fleet.FleetNoise state,
-- JSON), how many of its jobs fed it, and the sigma its jobs read (NULL until ready):
-- detectors.shared_noise. (Table ``fleet``, one estimate pooled over every tenant's jobs,
-- is no longer read: any tenant could steer it.)
CREATE TABLE IF NOT EXISTS fleet_tenants(
    grp TEXT NOT NULL,
    tenant TEXT NOT NULL,
    state TEXT NOT NULL,
    jobs INTEGER NOT NULL,
    sigma REAL,
    PRIMARY KEY (grp, tenant)
);
-- Which spelling owns each tenant identity key (identity.fold): the first seen.
CREATE TABLE IF NOT EXISTS tenants(fold TEXT PRIMARY KEY, name TEXT NOT NULL);
"""

# Evals kept per job: the page shows the last 2,000 and a detector keeps its own state, so
# older ones are deleted as new ones come (a tenant cannot fill the disk with one job).
KEEP_EVALS = 2000

# skipped: decided, but the tenant's policy does not allow acting on this job (allow list).
# unknown: started, then the controller was killed before its outcome was recorded, and
# the command is not safe to run twice: the operator's to check (never shown as done).
ACTION_STATES = ("pending", "running", "done", "failed", "dry-run", "skipped", "unknown")


@dataclass(slots=True)
class Offset:
    """Where the next read of a log file starts; (dev, ino) tell a replaced file,
    ``tail`` (the last bytes taken) a rewritten one; ``source`` is the job identity's
    source (the original path, kept across a rotation); ``skipping``: in the middle of
    an over-long line."""

    dev: int
    ino: int
    pos: int
    line: int
    source: str = ""
    tail: bytes = b""
    skipping: bool = False


@dataclass(slots=True)
class JobRow:
    job: str
    source: str
    tenant: str
    detector: dict[str, Any]
    n_evals: int
    last_step: int | None
    last_score: float | None
    best_step: int | None
    best_score: float | None
    stopped: bool
    stop_step: int | None
    reason: str
    skipped: int
    updated: float


@dataclass(slots=True)
class ActionRow:
    source: str
    job: str
    tenant: str
    command: str
    status: str
    rc: int | None
    output: str
    decided: float
    started: float | None
    finished: float | None


class StateStore:
    """Open (or create) the state database at ``path``.

    ``dry_run=True`` works on an in-memory copy, so that a dry run decides and prints
    what it would do without changing the real state. ``readonly=True`` is for status
    views. A writer holds an exclusive ``flock`` on the database file (see module doc).
    ``busy_ms`` is SQLite's own wait on a locked database; past it a write is retried
    with backoff (up to ``max_backoff`` seconds apart), reported once per wait through
    ``on_wait``. ``keep_evals``: the evals kept per job for the status page (the newest).
    """

    def __init__(self, path: str, *, dry_run: bool = False, readonly: bool = False,
                 busy_ms: int = 5000, max_backoff: float = 5.0,
                 on_wait: Callable[[str], None] | None = None,
                 start_wait: float = START_WAIT,
                 keep_evals: int = KEEP_EVALS) -> None:
        if isinstance(keep_evals, bool) or not isinstance(keep_evals, int) or keep_evals < 1:
            raise ValueError(f"keep_evals must be an integer >= 1, got {keep_evals!r}")
        self.keep_evals = keep_evals
        self.path = str(path)
        self._lock_fh = None
        self.max_backoff = max_backoff
        self.on_wait = on_wait
        self.waits = 0  # how many times a write found the database locked
        self.start_wait = start_wait
        # sqlite3 takes "" as a private temporary database: the run would "succeed" and
        # lose its state. A folder gave a traceback (--status) or a stray .lock file.
        if not self.path.strip():
            raise ValueError("--db must name a file")
        if os.path.isdir(self.path):
            raise ValueError(f"--db {self.path!r} is a folder, not a file")
        self.real = os.path.realpath(self.path)
        kind = special_kind(self.real)  # the link resolved: what SQLite would open
        if kind is not None:  # a FIFO would block SQLite's open for ever
            raise ValueError(f"--db {self.path!r} is {kind}, not a regular file")
        uri = "file:" + urllib.parse.quote(self.real) + "?mode=ro"
        if readonly:
            if not os.path.exists(self.path):
                raise ValueError(f"no controller state at {self.path!r}")
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
            self._check_schema()
            return
        if dry_run:
            self.db = sqlite3.connect(":memory:", isolation_level=None)
            if os.path.exists(self.path):
                src = sqlite3.connect(uri, uri=True)
                src.backup(self.db)
                src.close()
        else:
            parent = os.path.dirname(self.real)
            if not os.path.isdir(parent):
                raise ValueError(f"directory of --db {self.path!r} does not exist")
            self._lock()
            self.db = sqlite3.connect(self.real, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        # Another process may hold the file (a backup, or a connection in SQLite's
        # EXCLUSIVE locking mode): wait for it, a bounded time, then say so in one line.
        deadline = time.monotonic() + start_wait
        if not dry_run:
            self._retry(lambda: self.db.execute("PRAGMA journal_mode=WAL"), deadline)
            self.db.execute("PRAGMA synchronous=FULL")
        self._retry(lambda: self.db.executescript(_SCHEMA), deadline)
        self._check_schema()

    def _lock(self) -> None:
        if os.path.exists(self.real) and not os.path.isfile(self.real):
            raise ValueError(f"--db {self.path!r} is not a regular file")
        fd = os.open(self.real, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._lock_fh = os.fdopen(fd, "r+b")
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise ValueError(
                f"another evalstop watch holds {self.path!r} (resolved: {self.real})"
            ) from None

    def _check_schema(self) -> None:
        try:
            got = self.meta("schema")
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path!r} is not an evalstop watch state: {exc}") from None
        if got is not None and got != SCHEMA_VERSION:
            raise ValueError(f"{self.path!r} has state schema {got}, expected {SCHEMA_VERSION}"
                             " (jobs are now keyed by source and name; use a new --db)")

    def close(self) -> None:
        self.db.close()
        if self._lock_fh is not None:  # after SQLite's close: its own locks go first
            self._lock_fh.close()
            self._lock_fh = None

    def _retry(self, fn: Callable[[], Any], deadline: float | None = None) -> Any:
        """Run a write, waiting out another connection's lock with backoff (until the
        monotonic ``deadline`` if given, then ValueError)."""
        delay, announced = 0.05, False
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                if deadline is not None and time.monotonic() >= deadline:
                    raise ValueError(
                        f"state database {self.path!r} stayed locked by another process "
                        f"({exc}); gave up after {self.start_wait:g} s") from None
                self.waits += 1
                if not announced and self.on_wait is not None:
                    self.on_wait(f"state database is locked ({exc}); " + (
                        "retrying" if deadline is None else
                        f"waiting up to {self.start_wait:g} s for it"))
                announced = True
                time.sleep(delay)
                delay = min(delay * 2, self.max_backoff)

    # ---- meta -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def bind(self, spec: str, mode: str) -> None:
        """Tie this state to one detector spec and mode: a streak counted by one rule
        means nothing to another, so a mismatch is an error, not a silent reset."""
        have_spec, have_mode = self.meta("detector"), self.meta("mode")
        if have_spec is None:
            def write():
                with self.transaction():
                    self.db.executemany(
                        "INSERT INTO meta(key, value) VALUES (?, ?)",
                        [("schema", SCHEMA_VERSION), ("detector", spec), ("mode", mode)],
                    )
            self._retry(write)
        elif (have_spec, have_mode) != (spec, mode):
            raise ValueError(
                f"{self.path!r} holds state for --detector {have_spec!r} --mode {have_mode}, "
                f"not {spec!r} --mode {mode}; use the same options or a new --db"
            )

    # ---- reads ------------------------------------------------------------------------
    # Every row is type-checked as it is read: a state file whose tables hold other types
    # (made by hand, or by another tool) is one clear error, not a traceback later.
    def _rows(self, table: str, types: tuple, sql: str, args: tuple = ()):
        cur = self.db.execute(sql, args)
        names = [d[0] for d in cur.description]
        for row in cur:
            yield _typed(row, types, names, f"state database {self.path!r}: table {table}")

    def curves(self, limit: int = 2000) -> dict[tuple[str, str], list[tuple[int, float]]]:
        """Each job's (step, score) history, the last ``limit`` evals of each."""
        out: dict[tuple[str, str], list[tuple[int, float]]] = {}
        for s, j, step, score in self._rows(
                "evals", _EVAL_TYPES,
                "SELECT source, job, step, score FROM evals ORDER BY source, job, step"):
            if score is not None:
                out.setdefault((s, j), []).append((step, score))
        return {k: v[-limit:] for k, v in out.items()}

    def curves_of(self, keys: Iterable[tuple[str, str]], limit: int = 2000
                  ) -> dict[tuple[str, str], list[tuple[int, float]]]:
        """The last ``limit`` scored evals of each (source, job) in ``keys`` only."""
        out = {}
        for source, job in keys:
            rows = self._rows("evals", _EVAL_TYPES,
                              "SELECT source, job, step, score FROM evals WHERE source=? AND "
                              "job=? AND score IS NOT NULL ORDER BY step DESC LIMIT ?",
                              (source, job, int(limit)))
            pts = [(step, score) for _s, _j, step, score in rows]
            out[(source, job)] = pts[::-1]
        return out

    def fleet(self) -> dict[tuple[str, str], tuple[dict[str, Any], int, float | None]]:
        """Per (eval group, tenant): the tenant's FleetNoise state, how many of its jobs
        fed it, and the sigma its jobs read at the last save."""
        if not self._has("fleet_tenants"):  # a read-only view of an older state
            return {}
        return {(g, t): (_json(st, self.path, "fleet_tenants"), n, sigma)
                for g, t, st, n, sigma in self._rows(
                    "fleet_tenants", (str, str, str, int, _OPT_NUM),
                    "SELECT grp, tenant, state, jobs, sigma FROM fleet_tenants "
                    "ORDER BY grp, tenant")}

    def _has(self, table: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                               (table,)).fetchone() is not None

    def tenant_names(self) -> dict[str, str]:
        """Each tenant identity key and the spelling that owns it (``identity.Claims``)."""
        return dict(self._rows("tenants", (str, str), "SELECT fold, name FROM tenants"))

    def jobs(self) -> dict[tuple[str, str], JobRow]:
        """Every job, keyed by (source, job)."""
        return self._jobs("")

    def jobs_page(self, offset: int, limit: int) -> dict[tuple[str, str], JobRow]:
        """At most ``limit`` jobs, in (source, job) order from the ``offset``-th."""
        return self._jobs(" LIMIT ? OFFSET ?", (int(limit), int(offset)))

    def job_counts(self) -> tuple[int, int]:
        """(jobs known, jobs stopped), without reading the jobs."""
        n, stopped = self.db.execute(
            "SELECT COUNT(*), COALESCE(SUM(stopped != 0), 0) FROM jobs").fetchone()
        return int(n), int(stopped)

    def _jobs(self, tail: str, args: tuple = ()) -> dict[tuple[str, str], JobRow]:
        out = {}
        for r in self._rows(
            "jobs", _JOB_TYPES,
            "SELECT job, source, tenant, detector, n_evals, last_step, last_score, "
            "best_step, best_score, stopped, stop_step, reason, skipped, updated FROM jobs "
            "ORDER BY source, job" + tail, args,
        ):
            out[(r[1], r[0])] = JobRow(r[0], r[1], r[2], _json(r[3], self.path, "jobs"),
                                       r[4], r[5], r[6], r[7], r[8], bool(r[9]), r[10],
                                       r[11], r[12], r[13])
        return out

    def offsets(self) -> dict[str, Offset]:
        return {
            r[0]: Offset(r[1], r[2], r[3], r[4], r[5], bytes(r[6]), bool(r[7]))
            for r in self._rows(
                "offsets", _OFFSET_TYPES,
                "SELECT path, dev, ino, pos, line, source, tail, skipping FROM offsets")
        }

    def actions(self, status: str | None = None) -> list[ActionRow]:
        sql = ("SELECT source, job, tenant, command, status, rc, output, decided, started, "
               "finished FROM actions")
        args: tuple = ()
        if status is not None:
            sql += " WHERE status=?"
            args = (status,)
        return [ActionRow(*r) for r in self._rows("actions", _ACTION_TYPES,
                                                  sql + " ORDER BY decided, rowid", args)]

    def actions_of(self, keys: Iterable[tuple[str, str]]) -> list[ActionRow]:
        """The actions of the (source, job) pairs in ``keys`` only."""
        sql = ("SELECT source, job, tenant, command, status, rc, output, decided, started, "
               "finished FROM actions WHERE source=? AND job=?")
        return [ActionRow(*r) for key in keys
                for r in self._rows("actions", _ACTION_TYPES, sql, tuple(key))]

    # ---- writes -----------------------------------------------------------------------
    def transaction(self):
        return _Transaction(self.db)

    def save_batch(
        self,
        jobs: Iterable[JobRow],
        offsets: dict[str, Offset],
        gone: Iterable[str],
        new_actions: Iterable[ActionRow],
        evals: Iterable[tuple[str, str, int, float | None]] = (),
        fleet: dict[tuple[str, str], tuple[dict[str, Any], int, float | None]] | None = None,
        tenants: dict[str, str] | None = None,
        extra: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """One poll's changes, all or nothing: ``evals`` are (source, job, step, score)
        taken this poll; ``fleet`` maps (eval group, tenant) to (FleetNoise state, jobs,
        sigma read); ``tenants`` are new identity claims (fold key -> name); ``extra``
        writes more in the same transaction (the shadow score: ``shadow_store``)."""
        eval_rows = [(s, j, st, _finite_or_none(v)) for s, j, st, v in evals]
        fleet_rows = [(g, t, json.dumps(st), n, sigma)
                      for (g, t), (st, n, sigma) in (fleet or {}).items()]
        tenant_rows = list((tenants or {}).items())
        jobs = list(jobs)
        # Only jobs past the bound can have old evals to drop (n_evals counts what fed).
        prune = [(j.source, j.job, j.source, j.job, self.keep_evals - 1) for j in jobs
                 if j.n_evals > self.keep_evals]
        job_rows = [
            (j.job, j.source, j.tenant, json.dumps(j.detector), j.n_evals, j.last_step,
             _finite_or_none(j.last_score), j.best_step, j.best_score, int(j.stopped),
             j.stop_step, j.reason, j.skipped, j.updated)
            for j in jobs
        ]
        offset_rows = [(p, o.dev, o.ino, o.pos, o.line, o.source, o.tail, int(o.skipping))
                       for p, o in offsets.items()]
        gone_rows = [(p,) for p in gone]
        action_rows = [(a.source, a.job, a.tenant, a.command, a.status, a.rc, a.output,
                        a.decided, a.started, a.finished) for a in new_actions]

        def write():
            with self.transaction():
                self.db.executemany(
                    "INSERT INTO jobs(job, source, tenant, detector, n_evals, last_step, "
                    "last_score, best_step, best_score, stopped, stop_step, reason, skipped, "
                    "updated) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
                    "ON CONFLICT(source, job) DO UPDATE SET "
                    "tenant=excluded.tenant, detector=excluded.detector, "
                    "n_evals=excluded.n_evals, last_step=excluded.last_step, "
                    "last_score=excluded.last_score, best_step=excluded.best_step, "
                    "best_score=excluded.best_score, stopped=excluded.stopped, "
                    "stop_step=excluded.stop_step, reason=excluded.reason, "
                    "skipped=excluded.skipped, updated=excluded.updated",
                    job_rows,
                )
                # Gone first: a rotated log's old name may already hold a new file.
                self.db.executemany("DELETE FROM offsets WHERE path=?", gone_rows)
                self.db.executemany(
                    "INSERT INTO offsets(path, dev, ino, pos, line, source, tail, skipping) "
                    "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(path) DO UPDATE SET "
                    "dev=excluded.dev, ino=excluded.ino, pos=excluded.pos, "
                    "line=excluded.line, source=excluded.source, tail=excluded.tail, "
                    "skipping=excluded.skipping",
                    offset_rows,
                )
                self.db.executemany("INSERT OR IGNORE INTO evals(source, job, step, score) "
                                    "VALUES (?,?,?,?)", eval_rows)
                self.db.executemany(
                    "DELETE FROM evals WHERE source=? AND job=? AND step < (SELECT step FROM "
                    "evals WHERE source=? AND job=? ORDER BY step DESC LIMIT 1 OFFSET ?)",
                    prune)
                self.db.executemany("INSERT OR REPLACE INTO fleet_tenants(grp, tenant, "
                                    "state, jobs, sigma) VALUES (?,?,?,?,?)", fleet_rows)
                # OR IGNORE: the first spelling stays the owner, whatever happens.
                self.db.executemany("INSERT OR IGNORE INTO tenants(fold, name) VALUES (?,?)",
                                    tenant_rows)
                # OR IGNORE: a job has at most one action, whatever happens.
                self.db.executemany(
                    "INSERT OR IGNORE INTO actions(source, job, tenant, command, status, rc, "
                    "output, decided, started, finished) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    action_rows,
                )
                if extra is not None:
                    extra(self.db)
        self._retry(write)

    def set_action(self, source: str, job: str, status: str, *, expect: str,
                   rc: int | None = None, output: str = "") -> bool:
        """Move (source, job)'s action from ``expect`` to ``status``; False (nothing
        changed) when it was not in ``expect``: someone else moved it first."""
        if status not in ACTION_STATES or expect not in ACTION_STATES:
            raise ValueError(f"unknown action status {status!r} / {expect!r}")
        now = time.time()

        def write() -> int:
            with self.transaction():
                if status == "running":
                    cur = self.db.execute(
                        "UPDATE actions SET status=?, started=? "
                        "WHERE source=? AND job=? AND status=?",
                        (status, now, source, job, expect))
                else:
                    cur = self.db.execute(
                        "UPDATE actions SET status=?, rc=?, output=?, finished=? "
                        "WHERE source=? AND job=? AND status=?",
                        (status, rc, output, now, source, job, expect))
                return cur.rowcount
        return self._retry(write) == 1


_OPT_INT = (int, type(None))
_OPT_NUM = (float, int, type(None))
_JOB_TYPES = (str, str, str, str, int, _OPT_INT, _OPT_NUM, _OPT_INT, _OPT_NUM, int, _OPT_INT,
              str, int, (float, int))
_OFFSET_TYPES = (str, int, int, int, int, str, bytes, int)
_ACTION_TYPES = (str, str, str, str, str, _OPT_INT, str, (float, int), _OPT_NUM, _OPT_NUM)
_EVAL_TYPES = (str, str, int, _OPT_NUM)


_SQL_TYPE = {str: "TEXT", int: "INTEGER", float: "REAL", bytes: "BLOB"}


class StateError(ValueError):
    """A state database whose contents evalstop watch did not write (one line)."""


def _typed(row: tuple, types: tuple, names: list[str], where: str) -> tuple:
    """``row`` if each value has its column's type, else ValueError in one line."""
    for value, want, name in zip(row, types, names, strict=True):
        if not isinstance(value, want):
            first = want[0] if isinstance(want, tuple) else want
            raise StateError(f"{where}: column {name} holds {_SQL_TYPE.get(type(value), 'NULL')}"
                             f", not {_SQL_TYPE[first]}: not an evalstop watch state "
                             "(use a new --db)")
    return row


def _json(text: str, path: str, table: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise StateError(f"state database {path!r}: table {table}: a saved state that is not "
                         "a JSON object: not an evalstop watch state (use a new --db)")
    return value


def _finite_or_none(x: float | None) -> float | None:
    # SQLite stores NaN as NULL anyway; say so explicitly.
    return None if x is None or math.isnan(x) else x


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self):
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # SQLite may have rolled back already
            self.db.execute("ROLLBACK")
        return False
