"""The controller's state in SQLite: detector state per job, read offsets per log file,
and the stop action per job.

Everything one poll changes (detector states, offsets, new stop actions) is written in
one transaction, so a controller killed at any moment restarts from a consistent point:
the offsets and the detector states always describe the same records. WAL mode lets
``evalstop watch --status`` read while a controller writes.

An action row goes ``pending`` (the stop is decided, in the same transaction as the
decision) -> ``running`` (committed just before the command starts) -> ``done`` or
``failed``. The primary key on ``job`` makes a second action for one job impossible.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs(
    job TEXT PRIMARY KEY,
    source TEXT,
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
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS offsets(
    path TEXT PRIMARY KEY,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    pos INTEGER NOT NULL,
    line INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS actions(
    job TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    status TEXT NOT NULL,
    rc INTEGER,
    output TEXT NOT NULL DEFAULT '',
    decided REAL NOT NULL,
    started REAL,
    finished REAL
);
"""

ACTION_STATES = ("pending", "running", "done", "failed", "dry-run")


@dataclass(slots=True)
class Offset:
    """Where the next read of a log file starts; (dev, ino) tell a replaced file."""

    dev: int
    ino: int
    pos: int
    line: int


@dataclass(slots=True)
class JobRow:
    job: str
    source: str | None
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
    job: str
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
    views. A writer holds ``PATH.lock`` so that two controllers never act on one state.
    """

    def __init__(self, path: str, *, dry_run: bool = False, readonly: bool = False) -> None:
        self.path = str(path)
        self._lock_fh = None
        # sqlite3 takes "" as a private temporary database: the run would "succeed" and
        # lose its state. A folder gave a traceback (--status) or a stray .lock file.
        if not self.path.strip():
            raise ValueError("--db must name a file")
        if os.path.isdir(self.path):
            raise ValueError(f"--db {self.path!r} is a folder, not a file")
        if readonly:
            if not os.path.exists(self.path):
                raise ValueError(f"no controller state at {self.path!r}")
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True,
                                      isolation_level=None)
            self._check_schema()
            return
        if dry_run:
            self.db = sqlite3.connect(":memory:", isolation_level=None)
            if os.path.exists(self.path):
                src = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
                src.backup(self.db)
                src.close()
        else:
            parent = os.path.dirname(os.path.abspath(self.path))
            if not os.path.isdir(parent):
                raise ValueError(f"directory of --db {self.path!r} does not exist")
            self._lock()
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(_SCHEMA)
        self._check_schema()

    def _lock(self) -> None:
        self._lock_fh = open(self.path + ".lock", "a+")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise ValueError(
                f"another evalstop watch holds {self.path!r} (lock {self.path}.lock)"
            ) from None

    def _check_schema(self) -> None:
        try:
            got = self.meta("schema")
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"{self.path!r} is not an evalstop watch state: {exc}") from None
        if got is not None and got != SCHEMA_VERSION:
            raise ValueError(f"{self.path!r} has state schema {got}, expected {SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    # ---- meta -------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else row[0]

    def bind(self, spec: str, mode: str) -> None:
        """Tie this state to one detector spec and mode: a streak counted by one rule
        means nothing to another, so a mismatch is an error, not a silent reset."""
        have_spec, have_mode = self.meta("detector"), self.meta("mode")
        if have_spec is None:
            with self.transaction():
                self.db.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)",
                    [("schema", SCHEMA_VERSION), ("detector", spec), ("mode", mode)],
                )
        elif (have_spec, have_mode) != (spec, mode):
            raise ValueError(
                f"{self.path!r} holds state for --detector {have_spec!r} --mode {have_mode}, "
                f"not {spec!r} --mode {mode}; use the same options or a new --db"
            )

    # ---- reads ------------------------------------------------------------------------
    def jobs(self) -> dict[str, JobRow]:
        out = {}
        for r in self.db.execute(
            "SELECT job, source, detector, n_evals, last_step, last_score, best_step, "
            "best_score, stopped, stop_step, reason, skipped, updated FROM jobs ORDER BY job"
        ):
            out[r[0]] = JobRow(r[0], r[1], json.loads(r[2]), r[3], r[4], r[5], r[6], r[7],
                               bool(r[8]), r[9], r[10], r[11], r[12])
        return out

    def offsets(self) -> dict[str, Offset]:
        return {
            r[0]: Offset(r[1], r[2], r[3], r[4])
            for r in self.db.execute("SELECT path, dev, ino, pos, line FROM offsets")
        }

    def actions(self, status: str | None = None) -> list[ActionRow]:
        sql = ("SELECT job, command, status, rc, output, decided, started, finished "
               "FROM actions")
        args: tuple = ()
        if status is not None:
            sql += " WHERE status=?"
            args = (status,)
        return [ActionRow(*r) for r in self.db.execute(sql + " ORDER BY decided, rowid", args)]

    # ---- writes -----------------------------------------------------------------------
    def transaction(self):
        return _Transaction(self.db)

    def save_batch(
        self,
        jobs: Iterable[JobRow],
        offsets: dict[str, Offset],
        gone: Iterable[str],
        new_actions: Iterable[ActionRow],
    ) -> None:
        """One poll's changes, all or nothing."""
        with self.transaction():
            self.db.executemany(
                "INSERT INTO jobs(job, source, detector, n_evals, last_step, last_score, "
                "best_step, best_score, stopped, stop_step, reason, skipped, updated) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT(job) DO UPDATE SET "
                "source=excluded.source, detector=excluded.detector, "
                "n_evals=excluded.n_evals, last_step=excluded.last_step, "
                "last_score=excluded.last_score, best_step=excluded.best_step, "
                "best_score=excluded.best_score, stopped=excluded.stopped, "
                "stop_step=excluded.stop_step, reason=excluded.reason, "
                "skipped=excluded.skipped, updated=excluded.updated",
                [
                    (j.job, j.source, json.dumps(j.detector), j.n_evals, j.last_step,
                     _finite_or_none(j.last_score), j.best_step, j.best_score, int(j.stopped),
                     j.stop_step, j.reason, j.skipped, j.updated)
                    for j in jobs
                ],
            )
            self.db.executemany(
                "INSERT INTO offsets(path, dev, ino, pos, line) VALUES (?,?,?,?,?) "
                "ON CONFLICT(path) DO UPDATE SET dev=excluded.dev, ino=excluded.ino, "
                "pos=excluded.pos, line=excluded.line",
                [(p, o.dev, o.ino, o.pos, o.line) for p, o in offsets.items()],
            )
            self.db.executemany("DELETE FROM offsets WHERE path=?", [(p,) for p in gone])
            # OR IGNORE: a job has at most one action, whatever happens.
            self.db.executemany(
                "INSERT OR IGNORE INTO actions(job, command, status, rc, output, decided, "
                "started, finished) VALUES (?,?,?,?,?,?,?,?)",
                [(a.job, a.command, a.status, a.rc, a.output, a.decided, a.started,
                  a.finished) for a in new_actions],
            )

    def set_action(self, job: str, status: str, *, rc: int | None = None,
                   output: str = "") -> None:
        if status not in ACTION_STATES:
            raise ValueError(f"unknown action status {status!r}")
        now = time.time()
        with self.transaction():
            if status == "running":
                self.db.execute("UPDATE actions SET status=?, started=? WHERE job=?",
                                (status, now, job))
            else:
                self.db.execute(
                    "UPDATE actions SET status=?, rc=?, output=?, finished=? WHERE job=?",
                    (status, rc, output, now, job),
                )


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
        else:
            self.db.execute("ROLLBACK")
        return False
