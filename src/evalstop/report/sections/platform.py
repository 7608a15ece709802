"""Section for ``platform``: what each rule frees on the fitted workload and on real lab runs,
the savings map over how early and how far hacking runs fall, and the fit itself (held-out
real runs against the fitted generator and the paper's curves, statistic by statistic).

``rule_figures`` is the one place the study's headline numbers are read: the first screen
and this section's table both take them from it, so they cannot disagree."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure

from evalstop.experiments.methods import DEFAULT_SRTF, EVALSTOP_SRTF, SRTF
from evalstop.experiments.platform import FALLS, FITTED_POINT, LAB_POINT, PEAKS, map_point
from evalstop.report.blocks import Block, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pct, signed_pct
from evalstop.report.plots import PANEL_H, PANEL_W, save_png
from evalstop.report.sections.common import header

RULES = ((DEFAULT_SRTF.label, "`default`"), (EVALSTOP_SRTF.label, "`evalstop:k=2`"))
MAP_HEADING = "Savings map: how early and how far hacking runs fall"
# Generated runs the fit's section measures: 50 a seed of the run, at least 500 (a --quick
# run's figures are a smoke test; 1,000 at the default 20 seeds).
GOF_RUNS_PER_SEED, GOF_MIN_RUNS = 50, 500


def gof_runs(n_seeds: int) -> int:
    return max(GOF_MIN_RUNS, GOF_RUNS_PER_SEED * n_seeds)


def rule_figures(summary, point: str, method: str) -> dict[str, float]:
    """One rule's headline numbers at one point: GPU-hours freed a seed (waste of SRTF-Est
    alone minus its own), that as a share of the waste, JCT change, harmful stops, recall,
    precision."""
    def get(metric, field="mean"):
        return summary.value(point, method, metric, field)

    waste0 = summary.value(point, SRTF.label, "waste_gpu_h")
    waste = get("waste_gpu_h")
    return {"freed_gpu_h": waste0 - waste,
            "freed_share": (waste0 - waste) / waste0 if waste0 > 0 else math.nan,
            "waste_gpu_h": waste, "jct": get("jct_mean_s", "delta_pct"),
            "harmful": get("harmful_rate"), "recall": get("recall"),
            "precision": get("precision")}


def rules_table(summary, n_seeds: int) -> Table:
    rows = []
    for point, what in ((FITTED_POINT, "fitted to measured runs"),
                        (LAB_POINT, "RLHF jobs are real lab runs")):
        base = summary.value(point, SRTF.label, "waste_gpu_h")
        rows.append((f"`{point}` ({what})", "nothing (SRTF-Est alone)", "0 (0%)",
                     f"{base:,.0f}", "0%", "0%", "0%", "n/a"))
        for method, name in RULES:
            f = rule_figures(summary, point, method)
            rows.append(("", name, f"{f['freed_gpu_h']:,.0f} ({pct(f['freed_share'], 0)})",
                         f"{f['waste_gpu_h']:,.0f}", signed_pct(f["jct"]), pct(f["harmful"]),
                         pct(f["recall"]), pct(f["precision"])))
    return Table(("Workload (`platform` point)", "Rule on SRTF-Est",
                  "GPU-h freed a seed (share of waste)", "Wasted GPU-h left", "Mean JCT change",
                  "Harmful stops", "Recall", "Precision"), tuple(rows),
                 caption=(f"`platform` study, means over {n_seeds} seeds on 64 GPUs. Waste: "
                          "GPU-hours run past a job's true quality peak; freed: SRTF-Est "
                          "alone's waste minus the rule's, on the same workloads. Harmful "
                          "stops: share of non-hacking jobs whose kept checkpoint is more than "
                          "2% of their gain below what running on delivers."))


def map_values(summary, method: str, key: str) -> np.ndarray:
    """(falls, peaks) grid of one rule's ``rule_figures[key]`` over the savings map."""
    return np.array([[rule_figures(summary, map_point(p, f), method)[key] for p in PEAKS]
                     for f in FALLS])


def _fitted_peak() -> float:
    from evalstop.workload.fit import load_fit

    return float(load_fit()["table"]["fit"]["hacking/peak_at"]["median"])


def _map_figure(ctx: SectionContext) -> Image:
    path, rel = ctx.figure("savings_map")
    fig = Figure(figsize=(PANEL_W * 2, PANEL_H + 0.6))
    axes = fig.subplots(1, 2)
    peak = _fitted_peak()
    for ax, (method, name) in zip(axes, RULES, strict=True):
        share = map_values(ctx.summary, method, "freed_share")
        prec = map_values(ctx.summary, method, "precision")
        harm = map_values(ctx.summary, method, "harmful")
        rec = map_values(ctx.summary, method, "recall")
        ax.imshow(share * 100, origin="lower", cmap="viridis", vmin=0, vmax=100, aspect="auto")
        for i in range(len(FALLS)):
            for j in range(len(PEAKS)):
                ax.text(j, i, f"{pct(share[i, j], 0)} freed\nrecall {pct(rec[i, j], 0)}\n"
                        f"prec {pct(prec[i, j], 0)}\nharm {pct(harm[i, j])}", ha="center",
                        va="center", fontsize=8,
                        color="white" if not share[i, j] > 0.6 else "black")
        ax.set_xticks(range(len(PEAKS)), [f"{p:g}" for p in PEAKS])
        ax.set_yticks(range(len(FALLS)), [f"x{f:g}" for f in FALLS])
        # At the bottom edge of its row, clear of the cell's text.
        ax.plot(np.interp(peak, PEAKS, range(len(PEAKS))), FALLS.index(1.0) - 0.4, marker="*",
                markersize=13, color="red", markeredgecolor="white", clip_on=False)
        ax.set_xlabel("where every hacking run peaks (share of the run)")
        ax.set_ylabel("how far it falls (x the fitted runs' fall)")
        ax.set_title(f"{name.strip('`')} on SRTF-Est: share of wasted GPU-h freed", fontsize=10)
    fig.suptitle("Savings map (`platform` study): red star = the fitted preset's median "
                 "hacking peak, its own falls", fontsize=10)
    fig.tight_layout()
    save_png(fig, path, 2)
    return Image(rel, "Savings map (`platform`): share of the waste each rule frees, its "
                 "precision and harmful stops, by where hacking runs peak and how far they "
                 "fall; the star is the fitted workload.")


def _map_reading(summary) -> str:
    def span(values, digits):
        lo, hi = pct(np.nanmin(values), digits), pct(np.nanmax(values), digits)
        return lo if lo == hi else f"{lo}-{hi}"

    parts = []
    for method, name in RULES:
        parts.append(f"{name} frees {span(map_values(summary, method, 'freed_share'), 0)} of "
                     f"the waste at precision {span(map_values(summary, method, 'precision'), 0)}"
                     f" and harmful stops {span(map_values(summary, method, 'harmful'), 1)}")
    return f"Across the map, {'; '.join(parts)}. {corner_text(summary)}"


def corner_text(summary) -> str:
    """`default`'s saving at the map's two far corners: early and far, late and shallow."""
    early = rule_figures(summary, map_point(PEAKS[0], FALLS[-1]), RULES[0][0])["freed_share"]
    late = rule_figures(summary, map_point(PEAKS[-1], FALLS[0]), RULES[0][0])["freed_share"]
    return (f"`default` frees {pct(early, 0)} where hacking runs peak at {PEAKS[0]:g} of the "
            f"run and fall x{FALLS[-1]:g}, {pct(late, 0)} where they peak at {PEAKS[-1]:g} and "
            f"fall x{FALLS[0]:g}.")


def map_range(summary, method: str) -> tuple[float, float]:
    share = map_values(summary, method, "freed_share")
    return float(np.nanmin(share)), float(np.nanmax(share))


# --- the fit -------------------------------------------------------------------------

def _gof(seed: int, n: int):
    from evalstop.workload import fit as fitmod
    from evalstop.workload.fit_check import fitted_values, paper_values

    _, held = fitmod.split(fitmod.shipped_runs())
    rng = np.random.default_rng([seed, 44])
    return {"held-out real runs": (fitmod.measure(held), [r.hacking for r in held]),
            "fitted": fitted_values(rng, n), "paper": paper_values(rng, n)}


def fit_blocks(ctx: SectionContext) -> list[Block]:
    from evalstop.workload.fit import load_fit
    from evalstop.workload.fit_check import rows
    from evalstop.workload.shape_stats import TABLE, rows_of, table

    n_gen = gof_runs(ctx.run.settings.n_seeds)
    values = _gof(ctx.run.settings.base_seed, n_gen)
    tables = {k: table(*v) for k, v in values.items()}
    checked = rows(tables["held-out real runs"], tables["fitted"])
    fit = load_fit()
    trows = tuple((r["what"], num(r["real_median"], 3),
                   f"[{num(r['band'][0], 3)}, {num(r['band'][1], 3)}]",
                   num(r["generated_median"], 3),
                   num(tables["paper"][r["statistic"]]["median"], 3),
                   "yes" if r["in_band"] else "no") for r in checked)
    n_fit = sum(len(v) for v in fit["runs"].values())
    n_held = len(values["held-out real runs"][0])
    path, rel = ctx.figure("fit")
    shown = [t for t in TABLE if t[1] != "n_evals"]
    cols = 2
    nrows = (len(shown) + cols - 1) // cols
    fig = Figure(figsize=(PANEL_W * cols, 2.6 * nrows))
    axes = fig.subplots(nrows, cols).ravel()
    for ax, (cls, key, what) in zip(axes, shown, strict=False):
        data = [[s[key] for s in rows_of(st, h, cls) if np.isfinite(s[key])]
                for st, h in values.values()]
        labels = [name for name, d in zip(values, data, strict=True) if d]
        ax.boxplot([d for d in data if d], orientation="horizontal", tick_labels=labels, showfliers=False)
        ax.set_title(what, fontsize=9)
        if key in ("fall_share", "noise_over_gain"):
            ax.set_xscale("log")
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    fig.suptitle("Real (held out) against simulated, statistic by statistic: boxes are the "
                 "middle half, whiskers 1.5 IQR", fontsize=10)
    fig.tight_layout()
    save_png(fig, path, cols)
    return [
        Heading(3, "The fit: held-out real runs against the generators"),
        Para(f"The fitted preset's RLHF curves are drawn from {n_fit} measured runs (the fit "
             f"part of {fit['sources']}); the other {n_held} runs are held out "
             f"({fit['split_rule']}) and judge the fit. Every statistic is measured by the "
             f"same code on real and generated runs (`evalstop.workload.shape_stats`); the "
             f"band is the held-out runs' middle half (25th to 75th percentile), or 3 "
             f"standard errors for the share of hacking runs. {n_gen:,} runs from each "
             f"generator; `tests/test_workload_fit.py` checks the same bands."),
        Table(("Statistic (median)", "Held-out real runs", "Band", "Fitted preset",
               "Paper preset", "Fitted in band"), trows,
              caption="Medians; the paper preset at its own 20 evals and noise 0.02."),
        Image(rel, "Held-out real runs against the fitted and the paper preset's generated "
              "runs, per statistic of the fit."),
    ]


def render(ctx: SectionContext) -> list[Block]:
    blocks = [*header(ctx), rules_table(ctx.summary, ctx.run.settings.n_seeds)]
    if all(ctx.summary.get(map_point(p, f), SRTF.label, "waste_gpu_h") is not None
           for p in PEAKS for f in FALLS):
        blocks += [Heading(3, MAP_HEADING),
                   _map_figure(ctx), Para(_map_reading(ctx.summary))]
    return blocks + fit_blocks(ctx)
