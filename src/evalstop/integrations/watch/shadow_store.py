"""The shadow score's tables in the controller's state database (``shadow``).

Written with each poll, in the poll's own transaction (``StateStore.save_batch``'s
``extra``), so a controller killed at any moment resumes with its shadow detectors, curves
and scores in step with its read offsets, as the live detectors are:

* ``shadow_jobs``: each followed job, its tenant, GPU count (from its records), when its
  last record came, whether it has ended (and why) and whether a live stop cut it short;
* ``shadow_rules``: each rule followed on each job: the candidate's detector state (JSON,
  as the live ``jobs`` table keeps it; empty for the tenant's own live rule, whose state
  is the job's), its would-be stop and kept steps and when it was decided;
* ``shadow_evals``: each followed job's evals, whole (bounded by ``--keep-evals``);
* ``shadow_scores``: per (job, rule), the score fixed when the job ended
  (``shadow_score``).
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalstop.integrations.watch.quota import JOB_ROW_BYTES, eval_row_bytes
from evalstop.integrations.watch.store import StateStore

SCHEMA = """
CREATE TABLE IF NOT EXISTS shadow_jobs(
    source TEXT NOT NULL, job TEXT NOT NULL, tenant TEXT NOT NULL, gpus REAL,
    last_seen REAL NOT NULL, ended INTEGER NOT NULL, end_reason TEXT NOT NULL,
    censored INTEGER NOT NULL, PRIMARY KEY (source, job));
CREATE TABLE IF NOT EXISTS shadow_rules(
    source TEXT NOT NULL, job TEXT NOT NULL, rule TEXT NOT NULL, live INTEGER NOT NULL,
    state TEXT NOT NULL, stop_step INTEGER, best_step INTEGER, stop_at REAL, stop_time REAL,
    PRIMARY KEY (source, job, rule));
CREATE TABLE IF NOT EXISTS shadow_evals(
    source TEXT NOT NULL, job TEXT NOT NULL, step INTEGER NOT NULL, score REAL, time REAL,
    PRIMARY KEY (source, job, step)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS shadow_scores(
    source TEXT NOT NULL, job TEXT NOT NULL, tenant TEXT NOT NULL, rule TEXT NOT NULL,
    live INTEGER NOT NULL, stopped INTEGER NOT NULL, stop_step INTEGER, best_step INTEGER,
    n_evals INTEGER NOT NULL, evals_after INTEGER NOT NULL, wall_s REAL, gpus REAL,
    gpu_hours REAL, loss REAL, verdict TEXT, censored INTEGER NOT NULL,
    ended_at REAL NOT NULL, PRIMARY KEY (source, job, rule));
CREATE INDEX IF NOT EXISTS shadow_scores_cost
    ON shadow_scores(tenant, rule, censored, stopped, loss);
"""

SCORE_COLUMNS = ("source", "job", "tenant", "rule", "live", "stopped", "stop_step",
                 "best_step", "n_evals", "evals_after", "wall_s", "gpus", "gpu_hours", "loss",
                 "verdict", "censored", "ended_at")
EVAL_EXTRA_BYTES = 16  # a shadow eval also keeps the record's time


def reserve(source: str, job: str, keep_evals: int, rules: int) -> int:
    """The most the shadow tables hold for one followed job (its tenant's quota counts
    it): its curve and, per rule, a state row and a score row."""
    return (keep_evals * (eval_row_bytes(source, job) + EVAL_EXTRA_BYTES)
            + (1 + 2 * rules) * JOB_ROW_BYTES)


def create(store: StateStore) -> None:
    store._retry(lambda: store.db.executescript(SCHEMA))


def has_tables(store: StateStore) -> bool:
    return store._has("shadow_scores")


def _dicts(store: StateStore, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
    cur = store.db.execute(sql, args)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur]


def scores(store: StateStore) -> list[dict[str, Any]]:
    """Every fixed (job, rule) score, in (tenant, rule, source, job) order."""
    if not has_tables(store):
        return []
    return _dicts(store, f"SELECT {', '.join(SCORE_COLUMNS)} FROM shadow_scores "
                         "ORDER BY tenant, rule, source, job")


_SCORED = "censored = 0 AND stopped = 1"
_SUMMARY = f"""
SELECT tenant, rule, MAX(live) AS live, SUM(censored = 0) AS runs, SUM({_SCORED}) AS stops,
  SUM({_SCORED} AND verdict = 'right') AS right,
  SUM({_SCORED} AND verdict = 'harmful') AS harmful,
  SUM({_SCORED} AND verdict = 'neutral') AS neutral,
  TOTAL(CASE WHEN {_SCORED} THEN evals_after END) AS evals_freed,
  TOTAL(CASE WHEN {_SCORED} THEN wall_s END) AS wall_s_freed,
  TOTAL(CASE WHEN {_SCORED} THEN gpu_hours END) AS gpu_hours_freed,
  SUM({_SCORED} AND gpu_hours IS NULL) AS gpu_hours_unknown,
  SUM({_SCORED} AND loss IS NOT NULL) AS n_costs,
  SUM(censored = 1) AS censored
FROM shadow_scores GROUP BY tenant, rule
"""
_PENDING = """
SELECT j.tenant, r.rule, MAX(r.live), COUNT(*) FROM shadow_rules r JOIN shadow_jobs j
ON r.source = j.source AND r.job = j.job WHERE j.ended = 0 AND r.stop_step IS NOT NULL
GROUP BY j.tenant, r.rule
"""


def summary(store: StateStore) -> list[dict[str, Any]]:
    """Per (tenant, rule), in that order: the runs followed to their end, the shadow stops
    among them and their verdicts, what they would have freed, the median tenant cost,
    the stops whose job has not ended (``pending``) and the runs a live stop cut short
    (``censored``, not scored: their end is not the run's). Aggregated by SQLite, the
    median read from an index: the cost is one row per tenant and rule, not per job."""
    if not has_tables(store):
        return []
    rows = {(r["tenant"], r["rule"]): r for r in _dicts(store, _SUMMARY)}
    for tenant, rule, live, n in store.db.execute(_PENDING):
        rows.setdefault((tenant, rule), {
            "tenant": tenant, "rule": rule, "live": live, "runs": 0, "stops": 0, "right": 0,
            "harmful": 0, "neutral": 0, "evals_freed": 0, "wall_s_freed": 0.0,
            "gpu_hours_freed": 0.0, "gpu_hours_unknown": 0, "n_costs": 0, "censored": 0,
        })["pending"] = n
    out = []
    for key in sorted(rows):
        r = rows[key]
        n = r.pop("n_costs")
        r["live"] = bool(r["live"])
        r["evals_freed"] = int(r["evals_freed"])
        r.setdefault("pending", 0)
        mid = [c for (c,) in store.db.execute(
            f"SELECT loss FROM shadow_scores WHERE tenant=? AND rule=? AND {_SCORED} AND "
            "loss IS NOT NULL ORDER BY loss LIMIT ? OFFSET ?",
            (*key, 2 - n % 2, (n - 1) // 2))] if n else []
        r["median_cost"] = sum(mid) / len(mid) if mid else None
        out.append(r)
    return out


def active(store: StateStore) -> list[dict[str, Any]]:
    """The followed jobs that have not ended, each with its rules, its eval count, and
    its last eval's step and time."""
    jobs = _dicts(store, "SELECT source, job, tenant, gpus, last_seen, censored FROM "
                         "shadow_jobs WHERE ended = 0 ORDER BY source, job")
    for j in jobs:
        key = (j["source"], j["job"])
        j["rules"] = _dicts(store, "SELECT rule, live, state, stop_step, best_step, stop_at, "
                                   "stop_time FROM shadow_rules WHERE source=? AND job=? "
                                   "ORDER BY rowid", key)
        for r in j["rules"]:
            r["state"] = json.loads(r["state"]) if r["state"] else None
        (j["n"],) = store.db.execute("SELECT COUNT(*) FROM shadow_evals WHERE source=? AND "
                                     "job=?", key).fetchone()
        last = store.db.execute("SELECT step, time FROM shadow_evals WHERE source=? AND "
                                "job=? ORDER BY step DESC LIMIT 1", key).fetchone()
        j["last_step"], j["last_time"] = last if last is not None else (None, None)
    return jobs


def rule_counts(store: StateStore) -> dict[tuple[str, str], int]:
    """How many rules each followed job has (what its reservation is computed from)."""
    return {(s, j): n for s, j, n in store.db.execute(
        "SELECT source, job, COUNT(*) FROM shadow_rules GROUP BY source, job")}


def curve(store: StateStore, source: str, job: str
          ) -> list[tuple[int, float | None, float | None]]:
    """One followed job's (step, score, time), in step order."""
    return list(store.db.execute("SELECT step, score, time FROM shadow_evals WHERE source=? "
                                 "AND job=? ORDER BY step", (source, job)))


def read_curve(db, source: str, job: str) -> tuple[list[int], list[float]]:
    """One followed job's steps and scores (NaN where none), in step order, through the
    connection ``db`` (inside the poll's transaction: what it wrote counts)."""
    rows = db.execute("SELECT step, score FROM shadow_evals WHERE source=? AND job=? "
                      "ORDER BY step", (source, job)).fetchall()
    return [s for s, _ in rows], [math.nan if v is None else v for _, v in rows]


def followed(store: StateStore, ended_only: bool = True) -> list[dict[str, Any]]:
    """The followed jobs (those that ended, by default), with their curves."""
    if not has_tables(store):
        return []
    where = " WHERE ended = 1" if ended_only else ""
    jobs = _dicts(store, "SELECT source, job, tenant, gpus, ended, end_reason, censored FROM "
                         f"shadow_jobs{where} ORDER BY tenant, source, job")
    for j in jobs:
        j["curve"] = curve(store, j["source"], j["job"])
    return jobs


def write(db, jobs: list[tuple], rules: list[tuple], evals: list[tuple]) -> None:
    """One poll's followed jobs, rules and evals, inside the poll's transaction."""
    db.executemany(
        "INSERT INTO shadow_jobs(source, job, tenant, gpus, last_seen, ended, end_reason, "
        "censored) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(source, job) DO UPDATE SET "
        "gpus=excluded.gpus, last_seen=excluded.last_seen, ended=excluded.ended, "
        "end_reason=excluded.end_reason, censored=excluded.censored", jobs)
    db.executemany(
        "INSERT INTO shadow_rules(source, job, rule, live, state, stop_step, best_step, "
        "stop_at, stop_time) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(source, job, rule) DO "
        "UPDATE SET state=excluded.state, stop_step=excluded.stop_step, "
        "best_step=excluded.best_step, stop_at=excluded.stop_at, "
        "stop_time=excluded.stop_time", rules)
    db.executemany("INSERT OR IGNORE INTO shadow_evals(source, job, step, score, time) "
                   "VALUES (?,?,?,?,?)", evals)


def write_scores(db, scored: list[tuple]) -> None:
    """The scores of the jobs that ended this poll, inside the poll's transaction."""
    db.executemany(f"INSERT OR IGNORE INTO shadow_scores({', '.join(SCORE_COLUMNS)}) "
                   f"VALUES ({','.join('?' * len(SCORE_COLUMNS))})", scored)
