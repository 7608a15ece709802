"""Precision-recall plots, one per family and one per part, and harm-vs-compute-saved plots,
one per part (matplotlib, Agg backend)."""

from __future__ import annotations

from pathlib import Path

from evalstop.detbench.bench import PARTS, TARGET, BenchConfig
from evalstop.report.plots import save_png

# Two panels side by side, each about 660 px wide at 100 dpi (read at the report's width).
WIDE = (13.2, 5.2)


def write_pr_plots(out: Path, cfg: BenchConfig, summary: dict) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for part in PARTS:
        for scope, curves in summary["pr_curves"][part].items():
            name = f"pr_{part}.png" if scope == "pooled" else f"pr_{scope}.png"
            title = f"{scope} ({part.replace('_', '-')})" if scope != "pooled" else \
                f"pooled, {part.replace('_', '-')} part"
            if all(p["recall"] is None for c in curves.values() for p in c):
                fig, ax = plt.subplots(figsize=(WIDE[0] / 2, WIDE[1]))
                _fpr_only(ax, cfg, curves, title)
                fig.subplots_adjust(left=0.11, right=0.97, bottom=0.11, top=0.93)
            else:
                # The rules worth choosing crowd the top right: a second panel zooms there.
                fig, (ax, zoom) = plt.subplots(1, 2, figsize=WIDE)
                _pr(ax, cfg, curves, title)
                _pr(zoom, cfg, curves, title, legend=False)
                zoom.set(xlim=ZOOM_RECALL, ylim=ZOOM_PRECISION,
                         title="zoom: precision >= 0.85, recall >= 0.4")
                fig.subplots_adjust(left=0.06, right=0.99, bottom=0.11, top=0.93,
                                    wspace=0.15)
            # Fixed margins (as in the harm plots): tight_layout cost a third of each plot.
            save_png(fig, out / name, len(fig.axes), dpi=100)
            plt.close(fig)
            files.append(name)
    return files


ZOOM_RECALL, ZOOM_PRECISION = (0.4, 1.005), (0.85, 1.005)


def _pr(ax, cfg, curves, title, legend=True):
    for cand in cfg.lineup:
        pts = [p for p in curves[cand.label]
               if p["precision"] is not None and p["recall"] is not None]
        if not pts:
            continue
        line, = ax.plot([p["recall"] for p in pts], [p["precision"] for p in pts],
                        marker="o", ms=3, label=f"{cand.label} ({cand.knob})")
        for p in pts:
            ax.annotate(f"{p['value']:g}", (p["recall"], p["precision"]), fontsize=6,
                        color=line.get_color(), xytext=(2, 2), textcoords="offset points")
    ax.axhline(TARGET["precision"], color="grey", lw=0.6, ls="--")
    ax.axvline(TARGET["recall"], color="grey", lw=0.6, ls="--")
    ax.set(xlabel="recall", ylabel="precision", xlim=(-0.02, 1.02), ylim=(-0.02, 1.02),
           title=f"Precision-recall: {title}")
    if legend:
        ax.legend(fontsize=7, loc="lower left")


def _fpr_only(ax, cfg, curves, title):
    """A family with no hacking runs has no precision or recall: show each sweep's FPR."""
    for cand in cfg.lineup:
        pts = curves[cand.label]
        line, = ax.plot(range(len(pts)), [p["fpr"] for p in pts], marker="o", ms=3,
                        label=f"{cand.label} ({cand.knob})")
        for i, p in enumerate(pts):
            ax.annotate(f"{p['value']:g}", (i, p["fpr"]), fontsize=6, color=line.get_color(),
                        xytext=(2, 2), textcoords="offset points")
    ax.set(xlabel="position in the knob sweep (value annotated)", ylabel="false positive rate",
           ylim=(-0.02, 1.02), title=f"No hacking runs, FPR per knob value: {title}")
    ax.legend(fontsize=7, loc="upper right")


def write_harm_plots(out: Path, cfg: BenchConfig, summary: dict) -> list[str]:
    """Per part, pooled: each rule's knob sweep as harmful-stop rate against compute saved.

    The platform's gain (compute saved) against the tenant's cost (healthy runs whose stop
    lost more than 2% of their gain); the default is starred. A second panel zooms on the
    rules worth having: harmful stops up to ``ZOOM_HARM`` %."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for part in PARTS:
        fig, (ax, zoom) = plt.subplots(1, 2, figsize=WIDE)
        title = f"pooled, {part.replace('_', '-')} part"
        right = _harm(ax, cfg, summary, part, f"Harm vs compute saved: {title}")
        _harm(zoom, cfg, summary, part, f"zoom: harmful stops <= {ZOOM_HARM:g}%", legend=False)
        zoom.set(ylim=(-0.3, ZOOM_HARM), xlim=(-0.5, max(right, 1.0) * 1.1))
        # Fixed margins: tight_layout took about a third of these plots' time.
        fig.subplots_adjust(left=0.06, right=0.99, bottom=0.11, top=0.93, wspace=0.15)
        name = f"harm_{part}.png"
        save_png(fig, out / name, 2, dpi=100)
        plt.close(fig)
        files.append(name)
    return files


ZOOM_HARM = 5.0


def _harm(ax, cfg, summary, part, title, legend=True) -> float:
    """Draw the sweeps; return the largest compute saved (%) among points in the zoom."""
    curves = summary["pr_curves"][part]["pooled"]
    right = 0.0
    for cand in cfg.lineup:
        pts = [(100 * p["saved"], 100 * p["harmful_rate"], p["value"]) for p in curves[cand.label]
               if p.get("saved") is not None and p.get("harmful_rate") is not None]
        if not pts:
            continue
        line, = ax.plot([x for x, _, _ in pts], [y for _, y, _ in pts], marker="o", ms=3,
                        label=f"{cand.label} ({cand.knob})")
        for x, y, v in pts:
            ax.annotate(f"{v:g}", (x, y), fontsize=6, color=line.get_color(), xytext=(2, 2),
                        textcoords="offset points")
        right = max([right] + [x for x, y, _ in pts if y <= ZOOM_HARM])
    d = summary["parts"][part]["pooled"].get(summary.get("default_spec"))
    if d and d.get("saved") is not None and d.get("harmful_rate") is not None:
        ax.plot([100 * d["saved"]], [100 * d["harmful_rate"]], "*", ms=12, color="k",
                label="default")
    ax.set(xlabel="compute saved (% of eval intervals not run)",
           ylabel="harmful stops (% of non-hacking runs)", title=title)
    if legend:
        ax.legend(fontsize=7, loc="upper left")
    return right
