"""``evalstop watch --status``: what the controller knows, per job, from its state DB."""

from __future__ import annotations

from typing import Any

from evalstop.integrations.watch.records import show
from evalstop.integrations.watch.store import StateStore

COLUMNS = ("tenant", "job", "evals", "last_step", "last_score", "streak", "best_step", "best_score",
           "state", "action")


def status_rows(store: StateStore) -> list[dict[str, Any]]:
    actions = {(a.source, a.job): a for a in store.actions()}
    rows = []
    for job in store.jobs().values():
        rule = job.detector.get("rule", {})
        act = actions.get((job.source, job.job))
        rows.append({
            "tenant": job.tenant,
            "job": job.job,
            "source": job.source,
            "evals": job.n_evals,
            "last_step": job.last_step,
            "last_score": job.last_score,
            # Only streak-counting rules have a streak; others show None.
            "streak": rule.get("streak"),
            "best_step": job.best_step,
            "best_score": job.best_score,
            "stopped": job.stopped,
            "stop_step": job.stop_step,
            "reason": job.reason,
            "skipped": job.skipped,
            "state": f"stopped@{job.stop_step}" if job.stopped else "running",
            "action": None if act is None else act.status,
            "action_rc": None if act is None else act.rc,
            "command": None if act is None else act.command,
        })
    return rows


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return show(str(v), 80)  # tenant text: no raw escapes or newlines reach the terminal


def format_table(rows: list[dict[str, Any]]) -> str:
    table = [list(COLUMNS)] + [[_cell(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip()
             for line in table]
    stops = sum(1 for r in rows if r["stopped"])
    lines.append(f"{len(rows)} jobs, {stops} stopped")
    return "\n".join(lines) + "\n"
