"""``evalstop watch --report DIR``: the shadow retrospective, HTML and Markdown.

Read from the state database (read-only, so a running controller's state can be
reported): the score per tenant and rule (``shadow_score.summarise``), a figure of
savings against harm per rule, and a figure of runs with each rule's would-be stop on the
run's curve, coloured by its verdict. ``report.md`` and ``report.html`` are built from one
list of blocks (``evalstop.report.blocks``); the HTML embeds its PNGs and has no scripts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from evalstop.fileio import prepare_out_dir, write_text
from evalstop.integrations.watch import shadow_store
from evalstop.integrations.watch.records import show
from evalstop.integrations.watch.shadow_status import cost_text, hours_text
from evalstop.integrations.watch.store import StateStore
from evalstop.metrics.tenant_harm import TENANT_TOL
from evalstop.report.blocks import Bullets, Heading, Image, Para, Table
from evalstop.report.html import to_html
from evalstop.report.markdown import to_markdown
from evalstop.report.plots import PANEL_H, PANEL_W, panel_grid, save_png

COLOURS = {"right": "#1a7f37", "harmful": "#b00020", "neutral": "#777777"}
MARKERS = "ovs^DP*Xh<>p"
MAX_RUNS = 12  # runs drawn in the curves figure


def _plain(text: str, limit: int = 80) -> str:
    """Tenant text for a report cell or a plot: escaped, and without the characters that
    Markdown, the report's inline markup or matplotlib's mathtext would read."""
    out = show(str(text), limit)
    for ch, sub in (("`", "'"), ("*", "\u2217"), ("$", "\uff04"), ("[", "("), ("]", ")")):
        out = out.replace(ch, sub)
    return out


def savings_plot(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Per (tenant, rule): evals freed against harmful stops and against median cost."""
    fig = Figure(figsize=(PANEL_W * 2, PANEL_H + 0.6))
    panels = (("harmful", "harmful stops"), ("median_cost", "median tenant cost (% of gain)"))
    for k, (field, ylabel) in enumerate(panels):
        ax = fig.add_subplot(1, 2, k + 1)
        for i, r in enumerate(rows):
            y = r[field]
            if y is None:
                continue
            y = 100 * y if field == "median_cost" else y
            ax.scatter(r["evals_freed"], y, s=30 + 8 * r["stops"], alpha=0.75,
                       marker=MARKERS[i % len(MARKERS)],
                       label=f"{_plain(r['tenant'])}: {_plain(r['rule'])}"
                             + (" (its rule)" if r["live"] else ""))
        if field == "median_cost":
            for y in (100 * TENANT_TOL, -100 * TENANT_TOL):
                ax.axhline(y, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel("evals freed (after the would-be stops)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    if rows:
        handles, labels = fig.axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8,
                   markerscale=0.6)
    fig.suptitle("Savings against harm, per tenant and rule (marker size: stops)")
    fig.tight_layout(rect=(0, 0.06 + 0.035 * ((len(rows) - 1) // 4), 1, 1))
    return save_png(fig, path, 2)


def _chosen(jobs: list[dict[str, Any]], stops: dict[tuple[str, str], list[dict]]
            ) -> list[dict[str, Any]]:
    """The runs to draw: up to half with a harmful stop, the rest with a right one, then
    any other stopped run."""
    def has(j, v):
        return any(s["verdict"] == v for s in stops.get((j["source"], j["job"]), []))
    harmful = [j for j in jobs if has(j, "harmful")][:MAX_RUNS // 2]
    right = [j for j in jobs if has(j, "right") and not has(j, "harmful")]
    rest = [j for j in jobs if (j["source"], j["job"]) in stops and j not in harmful
            and j not in right]
    return (harmful + right + rest)[:MAX_RUNS]


def curves_plot(path: Path, jobs: list[dict[str, Any]], scores: list[dict[str, Any]],
                rules: list[str]) -> Path:
    """Each chosen run's curve, with every rule's would-be stop on it (marker: rule,
    colour: verdict) and its kept checkpoint (a small dot of the same colour)."""
    stops: dict[tuple[str, str], list[dict]] = {}
    for s in scores:
        if s["stopped"] and not s["censored"]:
            stops.setdefault((s["source"], s["job"]), []).append(s)
    chosen = _chosen(jobs, stops)
    n_rows, cols = panel_grid(max(1, len(chosen)))
    fig = Figure(figsize=(PANEL_W * cols, 3.0 * n_rows + 0.6))
    for k, j in enumerate(chosen):
        ax = fig.add_subplot(n_rows, cols, k + 1)
        steps = np.array([c[0] for c in j["curve"]], float)
        vals = np.array([np.nan if c[1] is None else c[1] for c in j["curve"]], float)
        ax.plot(steps, vals, "-", color="#1f6feb", linewidth=1.2)
        at = dict(zip(steps.tolist(), vals.tolist(), strict=True))
        for s in stops.get((j["source"], j["job"]), []):
            m = MARKERS[rules.index(s["rule"]) % len(MARKERS)]
            c = COLOURS[s["verdict"]]
            ax.plot(s["stop_step"], at.get(float(s["stop_step"]), np.nan), m, ms=9,
                    color=c, markeredgecolor="black", markeredgewidth=0.5)
            ax.axvline(s["stop_step"], color=c, linestyle="--", linewidth=0.8, alpha=0.6)
            ax.plot(s["best_step"], at.get(float(s["best_step"]), np.nan), "o", ms=4, color=c)
        ax.set_title(f"{_plain(j['tenant'])} / {_plain(j['job'], 60)}", fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.set_ylabel("eval", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles = [fig.axes[0].plot([], [], MARKERS[i % len(MARKERS)], color="black",
                                label=_plain(r))[0] for i, r in enumerate(rules)] if chosen else []
    handles += [fig.axes[0].plot([], [], "s", color=c, label=v)[0]
                for v, c in COLOURS.items()] if chosen else []
    handles += [fig.axes[0].plot([], [], "o", ms=4, color="black",
                                 label="kept checkpoint")[0]] if chosen else []
    if handles:
        fig.legend(handles=handles, loc="lower center", ncol=min(8, len(handles)),
                   fontsize=8)
    fig.suptitle("Shadow stops on their runs' curves (marker: rule; colour: verdict)")
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    return save_png(fig, path, cols)


def score_table(rows: list[dict[str, Any]]) -> Table:
    cells = tuple(
        (_plain(r["tenant"]), _plain(r["rule"]) + (" (its rule)" if r["live"] else ""),
         *(str(r[f]) for f in ("runs", "stops", "right", "harmful", "neutral", "evals_freed")),
         f"{r['wall_s_freed'] / 3600:.3g}", hours_text(r), cost_text(r), str(r["pending"]))
        for r in rows)
    return Table(("tenant", "rule", "runs", "stops", "right", "harmful", "neutral",
                  "evals freed", "hours freed", "GPU-hours freed", "median cost",
                  "awaiting end"), cells,
                 caption="Runs: jobs followed to their end (a run a live stop cut short is "
                         "not scored).")


def write_report(store: StateStore, out_dir: str) -> Path:
    """Write ``report.html``, ``report.md`` and their PNGs under ``out_dir``; returns the
    HTML's path."""
    out = prepare_out_dir(out_dir, "--report")
    scores = shadow_store.scores(store)
    rows = shadow_store.summary(store)
    jobs = shadow_store.followed(store)
    rules = sorted({r["rule"] for r in rows})
    blocks: list = [
        Heading(1, "Shadow retrospective"),
        Para(f"What each rule would have done on this fleet's own jobs, followed to their "
             f"end: {len(jobs)} runs ended, {sum(r['stops'] for r in rows)} shadow stops "
             f"over {len(rows)} (tenant, rule) pairs. Written "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}."),
        Bullets((f"**right**: the run fell and stayed down (the kept checkpoint's smoothed "
                 f"level beats the run's end by more than {TENANT_TOL:.0%} of its gain);",
                 f"**harmful**: the stop would have cost the tenant more than "
                 f"{TENANT_TOL:.0%} of the run's gain;",
                 "**neutral**: in between, or a run that never gained;",
                 "**cost**: the tenant-harm loss (`evalstop.metrics.tenant_harm`), the "
                 "median over a rule's stops; negative: the stop kept a better checkpoint "
                 "than the run's end.")),
    ]
    if not rows:
        blocks.append(Para("No job has been followed to its end yet."))
    else:
        savings_plot(out / "shadow_savings.png", rows)
        curves_plot(out / "shadow_curves.png", jobs, scores, rules)
        blocks += [Heading(2, "Score per tenant and rule"), score_table(rows),
                   Heading(2, "Savings against harm"),
                   Image("shadow_savings.png", "Per tenant and rule: evals freed against "
                         "harmful stops (left) and against the median tenant cost (right; "
                         "dashed: the harm thresholds)."),
                   Heading(2, "Stops on their runs"),
                   Image("shadow_curves.png", f"Up to {MAX_RUNS} runs, up to half with a "
                         "harmful stop: each rule's would-be stop on the run's curve, "
                         "coloured by its verdict, with its kept checkpoint.")]
    write_text(out / "report.md", to_markdown(blocks))
    return write_text(out / "report.html", to_html(blocks, out, "Shadow retrospective"))
