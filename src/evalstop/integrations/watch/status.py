"""``evalstop watch --status``: what the controller knows, per job, from its state DB."""

from __future__ import annotations

from typing import Any

from evalstop.integrations.watch.records import show
from evalstop.integrations.watch.store import StateStore

COLUMNS = ("tenant", "job", "evals", "last_step", "last_score", "streak", "best_step", "best_score",
           "state", "action")


def status_rows(store: StateStore, *, offset: int = 0,
                limit: int | None = None) -> list[dict[str, Any]]:
    """Every job's row, or with ``limit`` only that many from the ``offset``-th (the page
    reads one page's jobs and actions, never the whole fleet's)."""
    if limit is None:
        jobs = store.jobs()
        actions = {(a.source, a.job): a for a in store.actions()}
    else:
        jobs = store.jobs_page(offset, limit)
        actions = {(a.source, a.job): a for a in store.actions_of(jobs)}
    rows = []
    for job in jobs.values():
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
            "action_output": None if act is None else act.output,
            # The rule this job runs (its detector keeps the spec it started with), and the
            # name it was given ("default"), short enough for a page's column.
            "rule": _rule(job.detector),
            "rule_label": job.detector.get("label") or job.detector.get("spec"),
        })
    return rows


def _rule(state: dict[str, Any]) -> str | None:
    spec, mode = state.get("spec"), state.get("mode")
    return None if spec is None else f"{spec} (mode {mode})"


def format_actions(rows: list[dict[str, Any]]) -> str:
    """One line per finished action: its exit code and the last line it printed."""
    lines = []
    for r in rows:
        if r.get("action_rc") is None and not r.get("action_output"):
            continue
        tail = (r.get("action_output") or "").strip().splitlines()[-1:] or [""]
        lines.append(f"  {_cell(r['tenant'])}/{_cell(r['job'])}: {_cell(r['action'])}, exit "
                     f"{_cell(r['action_rc'])}: {show(tail[0], 200) or '(no output)'}")
    return "actions:\n" + "\n".join(lines) + "\n" if lines else ""


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


def fleet_rows(store: StateStore) -> list[dict[str, Any]]:
    """Each eval group's noise per tenant: ``sigma`` as the tenant's jobs read it (None
    until its own estimate is ready), ``own`` the estimate from its own jobs, the
    evals it pooled (``n``) and its jobs; in a shared group, ``held``: the jobs its
    estimate comes from (its most recent)."""
    from evalstop.detectors.recent_jobs import RecentJobsNoise
    from evalstop.detectors.shared_noise import estimate_from_state

    rows = []
    for (group, tenant), (state, jobs, sigma) in store.fleet().items():
        try:
            fleet = estimate_from_state(state)
        except ValueError:
            continue
        rows.append({"group": group, "tenant": tenant, "sigma": sigma, "own": fleet.sigma(),
                     "n": fleet.count, "jobs": jobs,
                     "held": fleet.jobs if isinstance(fleet, RecentJobsNoise) else None})
    return rows


def format_fleet(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    lines = ["fleet noise by eval group and tenant:"]
    for r in rows:
        sigma = "(warming up)" if r["sigma"] is None else f"sigma {r['sigma']:.4g}"
        if r["own"] is not None and r["sigma"] != r["own"]:
            sigma += f" (its own {r['own']:.4g})"
        of = f"{r['jobs']} jobs" if r.get("held") is None else \
            f"its latest {r['held']} of {r['jobs']} jobs"
        lines.append(f"  {_cell(r['group'])} [{_cell(r['tenant'])}]: {sigma} from "
                     f"{r['n']} evals of {of}")
    return "\n".join(lines) + "\n"


def page_html(db: str, health: str = "", page: int = 1, per_page: int | None = None,
              tenant_rules: dict[str, tuple[str, bool]] | None = None) -> str:
    """Page ``page`` (1-based, ``per_page`` jobs: ``page.PAGE_SIZE`` by default) of the
    status page from the state database at ``db`` (read-only, per call). Its cost is
    bounded by ``per_page``, whatever the fleet's size (but for the shadow score, one row
    per tenant and rule). ``tenant_rules``: each tenant's rule, shown beside its shadow
    record (``shadow_status.shadow_html``)."""
    from evalstop.integrations.watch.page import PAGE_SIZE, Paging, render_page
    from evalstop.integrations.watch.shadow_status import shadow_html, shadow_rows

    try:
        store = StateStore(db, readonly=True)
    except ValueError:
        return render_page([], {}, health=health + " No state yet.")
    try:
        total, stopped = store.job_counts()
        paging = Paging(page, per_page or PAGE_SIZE, total, stopped)
        rows = status_rows(store, offset=paging.offset, limit=paging.per_page)
        curves = store.curves_of((r["source"], r["job"]) for r in rows)
        fleet = fleet_rows(store)
        shadow = shadow_html(shadow_rows(store), tenant_rules)
    finally:
        store.close()
    for r in rows:
        r["key"] = f"{r['source']}\0{r['job']}"
    keyed = {f"{s}\0{j}": pts for (s, j), pts in curves.items()}
    return render_page(rows, keyed, fleet=fleet, health=health, paging=paging, extra=shadow)
