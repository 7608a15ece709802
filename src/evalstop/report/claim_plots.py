"""The claim map's heatmaps: one panel per metric and eval count, cells on a
late-run SNR x decline SNR grid, the paper's region outlined and reference points marked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from matplotlib.colors import TwoSlopeNorm
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from evalstop.report.plots import PANEL_W, _save, panel_grid

# (marker, colour, label) of the reference points drawn on the maps.
MARKS = {
    "ours": ("*", "white", "the paper preset"),
    "preset": ("D", "magenta", "paper-assumptions"),
    "lab": ("^", "orange", "real lab runs (measured)"),
}


def _pos(value: float, grid: tuple[float, ...]) -> float:
    """A value's place on a categorical log-spaced axis (cell i at i), clipped just past
    the outer cells so that an off-grid point still shows, at the edge."""
    logs = np.log(np.asarray(grid, float))
    v = np.log(value)
    if v <= logs[0]:
        return max(-0.45, (v - logs[0]) / (logs[1] - logs[0]))
    if v >= logs[-1]:
        return min(len(grid) - 0.55, len(grid) - 1 + (v - logs[-1]) / (logs[-1] - logs[-2]))
    return float(np.interp(v, logs, np.arange(len(grid))))


def heatmaps(path: Path, *, lates: tuple[float, ...], declines: tuple[float, ...],
             panels: list[int], metrics: list[tuple[str, str]], values: dict,
             region: dict, marks: dict, title: str) -> Path:
    """``values[(metric, n_evals)]``: (len(lates), len(declines)) array (NaN = no cell);
    ``region[n_evals]``: bool array of the cells in the paper's region; ``marks[n_evals]``:
    list of (kind, late_snr, decline_snr) drawn with ``MARKS[kind]``. One panel per metric
    and eval count, metric by metric, at most ``COLUMNS`` side by side (each read at about
    600 px), every panel with its own scale."""
    cells = [(metric, name, n) for metric, name in metrics for n in panels]
    rows, cols = panel_grid(len(cells))
    fig = Figure(figsize=(PANEL_W * cols, 4.6 * rows + 0.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax in axes[len(cells):]:
        ax.set_visible(False)
    shown = set()
    for ax, (metric, name, n) in zip(axes, cells):
        v = values[(metric, n)]
        if metric == "jct":
            lim = max(1.0, float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 1.0)
            im = ax.imshow(v, origin="lower", cmap="RdBu_r",
                           norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
            fmt = "{:+.0f}"
        else:
            im = ax.imshow(100 * v, origin="lower", cmap="viridis", vmin=0, vmax=100,
                           aspect="auto")
            fmt = "{:.0f}"
        for i in range(len(lates)):
            for j in range(len(declines)):
                x = v[i, j] if metric == "jct" else 100 * v[i, j]
                if np.isfinite(x):
                    ax.text(j, i, fmt.format(x), ha="center", va="center", fontsize=8,
                            color="black" if metric == "jct" or x > 50 else "white")
                if region[n][i, j]:
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                           edgecolor="red", linewidth=2.0))
        for kind, late, decline in marks.get(n, []):
            m, colour, label = MARKS[kind]
            ax.plot(_pos(decline, declines), _pos(late, lates), m, color=colour,
                    markeredgecolor="black", markersize=12 if m == "*" else 9,
                    label=label if kind not in shown else None)
            shown.add(kind)
        ax.set_xticks(range(len(declines)), [f"{d:g}" for d in declines], fontsize=8)
        ax.set_yticks(range(len(lates)), [f"{x:g}" for x in lates], fontsize=8)
        ax.set_xlim(-0.5, len(declines) - 0.5)
        ax.set_ylim(-0.5, len(lates) - 0.5)
        ax.set_xlabel("decline SNR (per eval)", fontsize=9)
        ax.set_ylabel("late-run SNR (per eval)", fontsize=9)
        ax.set_title(f"{name}, {n} evals per run", fontsize=10)
        fig.colorbar(im, ax=ax, shrink=0.85).ax.tick_params(labelsize=8)
    handles, labels = [], []
    for ax in axes:
        h, lab = ax.get_legend_handles_labels()
        handles += h
        labels += lab
    handles.append(Rectangle((0, 0), 1, 1, fill=False, edgecolor="red", linewidth=2.0))
    labels.append("paper's region")
    fig.legend(handles, labels, loc="outside lower center", ncol=4, fontsize=9)
    fig.suptitle(title, fontsize=11)
    return _save(fig, path, cols)
