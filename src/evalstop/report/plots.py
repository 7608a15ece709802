"""The report's figures. Each function draws one PNG from plain numbers.

Figures are built with ``matplotlib.figure.Figure`` directly, never ``pyplot``: no global
backend or figure state, so nothing here depends on (or changes) the caller's matplotlib
setup, and rendering works headless (Agg).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from evalstop.fileio import atomic_write

DPI = 110
# A figure is read at the report's width (about 1300 px): at most COLUMNS panels side by
# side, each PANEL_W inches (660 px) wide, so no panel is drawn below about 600 px.
COLUMNS = 2
PANEL_W, PANEL_H = 6.0, 4.0
# The PNG text key that says how many panels sit side by side (the browser test reads it).
COLUMNS_KEY = "Columns"
# (mean, lo, hi) of one quantity across seeds; NaN bounds draw no error bar.
Ci = tuple[float, float, float]


def panel_grid(n: int) -> tuple[int, int]:
    """(rows, columns) for ``n`` panels, at most ``COLUMNS`` side by side."""
    cols = max(1, min(COLUMNS, n))
    return (n + cols - 1) // cols, cols


def save_png(fig, path: Path, columns: int, dpi: int = DPI) -> Path:
    """Write ``fig`` atomically as a PNG that records how many panels sit side by side."""
    with atomic_write(path, "wb") as fh:
        fig.savefig(fh, format="png", dpi=dpi, metadata={COLUMNS_KEY: str(columns)})
    return path


def _save(fig: Figure, path: Path, columns: int = 1) -> Path:
    if fig.get_layout_engine() is None:  # a figure may have chosen its own (constrained)
        fig.tight_layout()
    return save_png(fig, path, columns)


def _errs(cis: list[Ci]) -> tuple[np.ndarray, np.ndarray]:
    m = np.array([c[0] for c in cis], float)
    lo = np.array([c[1] for c in cis], float)
    hi = np.array([c[2] for c in cis], float)
    err = np.vstack([np.where(np.isfinite(lo), m - lo, 0.0), np.where(np.isfinite(hi), hi - m, 0.0)])
    return m, err


def grouped_bars(path: Path, groups: list[str], panels: list[tuple[str, dict[str, list[Ci]]]],
                 title: str) -> Path:
    """One panel per (y label, {series: per-group CI}), bars grouped by ``groups``."""
    rows, cols = panel_grid(len(panels))
    fig = Figure(figsize=(PANEL_W * cols, PANEL_H * rows + 0.4))
    width = 0.8 / max(1, max(len(s) for _, s in panels))
    x = np.arange(len(groups))
    for k, (ylabel, series) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, k + 1)
        for j, (name, cis) in enumerate(series.items()):
            m, err = _errs(cis)
            ax.bar(x + (j - (len(series) - 1) / 2) * width, m, width, yerr=err, capsize=3,
                   label=name)
        ax.set_xticks(x, groups, rotation=20)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
        if k == 0:
            ax.legend(fontsize=8)
    fig.suptitle(title)
    return _save(fig, path, cols)


def lines_vs_x(path: Path, xs: list[float], panels: list[tuple[str, dict[str, list[Ci]]]],
               xlabel: str, title: str, bounds: dict[int, tuple[float, str]] | None = None) -> Path:
    """One panel per (y label, {series: CI per x}); ``bounds[panel] = (y, label)`` draws a
    dashed reference line (e.g. the paper's claimed floor)."""
    rows, cols = panel_grid(len(panels))
    fig = Figure(figsize=(PANEL_W * cols, PANEL_H * rows + 0.4))
    for k, (ylabel, series) in enumerate(panels):
        ax = fig.add_subplot(rows, cols, k + 1)
        for name, cis in series.items():
            m, err = _errs(cis)
            ax.errorbar(xs, m, yerr=err, marker="o", capsize=3, label=name)
        if bounds and k in bounds:
            y, label = bounds[k]
            ax.axhline(y, color="grey", linestyle="--", linewidth=1, label=label)
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return _save(fig, path, cols)


def example_curves(path: Path, workload, result, jobs: list[tuple[int, str]], title: str) -> Path:
    """Per job: observed eval (dots), true quality (line), proxy reward (dashed, right axis),
    the true peak (dotted), the stop (red line) and the delivered checkpoint (star)."""
    rows, cols = panel_grid(len(jobs))
    fig = Figure(figsize=(PANEL_W * cols, 3.6 * rows + 0.4))
    prog = np.asarray(workload.eval_progress, float)
    for k, (i, name) in enumerate(jobs):
        ax = fig.add_subplot(rows, cols, k + 1)
        ax.plot(prog, workload.eval_obs[i], "o", ms=3, color="C0", label="observed eval")
        ax.plot(prog, workload.eval_true[i], "-", color="C0", alpha=0.6, label="true quality")
        ax.axvline(workload.peak_progress[i], color="grey", linestyle=":", label="true peak")
        kept = int(result.kept_eval[i])
        if bool(result.stopped[i]):
            ax.axvline(prog[int(result.stop_eval[i])], color="C3", label="stopped")
        if kept >= 0:
            ax.plot(prog[kept], workload.eval_obs[i, kept], "*", ms=12, color="C2",
                    label="kept checkpoint")
        ax2 = ax.twinx()
        ax2.plot(prog, workload.proxy[i], "--", color="C1", alpha=0.7, label="proxy reward")
        ax2.tick_params(axis="y", labelcolor="C1", labelsize=7)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("training progress")
        ax.set_ylabel("eval score")
        if k == 0:
            h1, l1 = ax.get_legend_handles_labels()
            h2, l2 = ax2.get_legend_handles_labels()
            ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower center")
    fig.suptitle(title)
    return _save(fig, path, cols)


def occupancy(path: Path, runs: list[tuple[str, object]], n_gpus: int, title: str) -> Path:
    """GPUs in use over time (step plot) for runs of the same workload."""
    fig = Figure(figsize=(PANEL_W * COLUMNS, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    for label, res in runs:
        t = np.asarray(res.timeline_t, float) / 3600.0
        ax.step(t, res.timeline_used, where="post", label=label, linewidth=1)
    ax.axhline(n_gpus, color="grey", linestyle="--", linewidth=1, label=f"{n_gpus} GPUs")
    ax.set_xlabel("time (hours)")
    ax.set_ylabel("GPUs in use")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title)
    return _save(fig, path)


def precision_gain(path: Path, panels: list[dict], title: str, x_min: float = 40.0) -> Path:
    """One panel per workload: each rule's (precision %, JCT gain %) along its knob, with
    the target region shaded. A panel is ``{"title", "floor", "precision",
    "series": {name: [(p, g), ...]}, "marks": {name: (p, g)}}``. Precision below ``x_min``
    is off the panel (the caller says which rules lie there)."""
    rows, cols = panel_grid(len(panels))
    fig = Figure(figsize=(PANEL_W * cols, PANEL_H * rows + 0.8), layout="constrained")
    handles: dict[str, object] = {}
    for k, panel in enumerate(panels):
        ax = fig.add_subplot(rows, cols, k + 1)
        for i, (name, pts) in enumerate(panel["series"].items()):
            pts = [(p, g) for p, g in pts if np.isfinite(p) and np.isfinite(g)]
            if pts:  # a fixed colour per series: one legend serves every panel
                handles[name], = ax.plot(*zip(*pts), "o-", ms=3, linewidth=1,
                                         color=f"C{i % 10}")
        for j, (name, (p, g)) in enumerate(panel["marks"].items()):
            if np.isfinite(p) and np.isfinite(g):
                handles[name], = ax.plot(p, g, "*X"[j % 2], ms=11, linestyle="none",
                                         color="k" if j == 0 else "C9")
        floor = panel["floor"]
        if np.isfinite(floor):
            top = max(ax.get_ylim()[1], floor + 5)
            handles["target region"] = ax.fill_between(
                [panel["precision"], 100.0], floor, top, color="C2", alpha=0.15)
            ax.set_ylim(top=top)
        ax.set_xlim(x_min, 101.0)
        ax.set_title(panel["title"], fontsize=10)
        ax.set_xlabel("precision (%)")
        ax.set_ylabel("JCT gain vs base (%)")
        ax.grid(alpha=0.3)
    fig.legend(list(handles.values()), list(handles), loc="outside lower center",
               ncol=min(5, len(handles)), fontsize=8)
    fig.suptitle(title)
    return _save(fig, path, cols)
