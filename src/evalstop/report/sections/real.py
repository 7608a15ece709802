"""Sections for ``real_corpus`` (stop rules scored on the lab's real RLHF runs) and
``real_main`` (the main table and composability with real RLHF curves in the simulator)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from evalstop.experiments.spec import display
from evalstop.report.blocks import Block, Bullets, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.files import write_csv
from evalstop.report.fmt import num, pct, with_ci
from evalstop.report.plots import COLUMNS, PANEL_W, save_png
from evalstop.report.sections.common import (
    HARM_NOTE,
    HARM_ROWS,
    TENANT_NOTE,
    example_jobs_figure,
    header,
)

EXAMPLE_SPEC = "evalstop:k=2"  # the rule whose stops the example plots mark
DPI = 110


# ---- real_corpus -------------------------------------------------------------------------
def render_corpus(ctx: SectionContext) -> list[Block]:
    from evalstop.experiments.real_corpus import validate_shipped
    from evalstop.lab.corpus import load_corpus

    exp = ctx.experiment
    rows, meta = validate_shipped()
    write_csv(ctx.out_dir / f"{exp.name}_detectors.csv", rows)
    curves, labels = load_corpus()
    summary = meta.get("summary", {})
    n, n_hack = len(curves), sum(lab.hacking for lab in labels.values())
    blocks: list[Block] = [
        Heading(2, f"{exp.title} (`{exp.name}`)"),
        Para(f"**Question.** {exp.question}"),
        Para(f"**Corpus.** {n} runs, {n_hack} hacking ({pct(n_hack / n)}), "
             f"{len(next(iter(curves.values())))} evals each (step 0 included); "
             f"{num(summary.get('total_run_wall_s', math.nan) / 60, 1)} CPU-minutes to "
             f"generate. Regenerate: `{meta.get('command', 'n/a')}`. "
             f"**Label rule:** {meta.get('label_rule', 'n/a')}. Each run's eval is the gold "
             f"reward of fresh samples; the detectors see only the eval log (eval, proxy, "
             f"loss, progress)."),
        _grid_table(meta, labels),
        _detector_table(rows),
        _harm_table(rows),
        Para("Delay: evals from the smoothed gold peak to the stop, over stopped hacking "
             "runs (negative: before the peak). Gold kept: the smoothed gold at the kept "
             "checkpoint (the best eval when stopped, else the final one), against the run's "
             "peak and against running to the end. Gain kept: share of the achievable gain "
             "(peak - start, summed over runs) delivered. `none` is no rule at all. "
             "StopAt-0.65 stops every run (all are RLHF runs), so its precision is the "
             "corpus' hacking rate."),
        Bullets(tuple(_reading(rows, curves, labels))),
        *_corpus_figures(ctx, curves, labels),
        Para(f"CSV: `{exp.name}_detectors.csv` (every column of the table, and more)."),
        *_dense_blocks(),
    ]
    return blocks


def _dense_blocks() -> list[Block]:
    """A few rules on the dense-eval corpora (an eval at every step on a fixed eval set),
    with both harm figures: where the tenant's view and the smoothed-gold view part."""
    from evalstop.experiments.real_corpus import validate_dense
    from evalstop.lab.dense import DENSE, load_dense_corpus

    out = []
    for world, spec in DENSE.items():
        curves, labels = load_dense_corpus(world=world)
        n = [len(c) for c in curves.values()]
        name = (f"{world} ({spec.role}; {len(curves)} runs, "
                f"{sum(lab.hacking for lab in labels.values())} hacking, {min(n)}-{max(n)} evals)")
        for r in validate_dense(world=world):
            if r["spec"] == "none":
                continue
            out.append((name, f"`{r['spec']}`", pct(r["precision"]),
                        pct(r["recall"]), pct(r["fpr"]), num(r["delay_median"], 0),
                        f"{r['harmful']} ({pct(r['harmful_rate'])})",
                        f"{r['tenant_harmful']} ({pct(r['tenant_harmful_rate'])})",
                        num(r["tenant_loss_stopped_median"], 3)))
    return [Heading(3, "Densely evaluated runs"),
            Table(("Corpus", "Rule", "Precision", "Recall", "FPR", "Delay, median (evals)",
                   "Harmful stops", "Harmful stops, tenant view",
                   "Tenant loss, median over stopped healthy runs"), tuple(out),
                  caption="The lab's dense-eval corpora (`evalstop.lab.dense`): the same "
                  "worlds, evaluated at every RL step on one fixed eval set, so consecutive "
                  "evals share their items and their errors. Harmful stops as in the table "
                  "above. " + TENANT_NOTE.replace("jobs", "runs") + " Tenant loss: that "
                  "shortfall as a share of the run's gain (negative: the delivered checkpoint "
                  "is above the run's end).")]


def _reading(rows: list[dict], curves: dict, labels: dict) -> list[str]:
    """What the table says, in numbers read from it (nothing here is typed in by hand)."""
    by = {r["spec"]: r for r in rows}
    out = []
    hack = [r for r in curves if labels[r].hacking]
    if hack:
        peaks = [curves[r].progress[labels[r].peak_index] for r in hack]
        out.append(f"**Hacking runs peak early**: the smoothed gold peak of a hacking run is at "
                   f"a median {pct(float(np.median(peaks)), 0)} of training (range "
                   f"{pct(min(peaks), 0)}-{pct(max(peaks), 0)}), not at the 55-75% the paper's "
                   f"synthetic curves assume; a fixed StopAt-0.65 therefore stops late "
                   f"(mean delay {num(by['stopat:p=0.65']['delay_mean'], 1)} evals).")
    k2 = by.get("evalstop:k=2")
    if k2 is not None:
        out.append(f"**The paper's rule (k=2)** catches {pct(k2['recall'])} of hacking runs, "
                   f"{num(k2['delay_mean'], 1)} evals after the peak on average, but also stops "
                   f"{pct(k2['fpr'])} of healthy runs: their gold plateaus early and then moves "
                   f"by less than the eval noise from eval to eval, so two declines in a row "
                   f"come soon. Against running them to the end, those false stops change the "
                   f"healthy runs' kept gold by {k2['kept_vs_end_healthy']:+.4f} on average "
                   f"(the run is stopped on its plateau and keeps its best checkpoint).")
    default = next((r for r in rows if r["spec"] == "default"), None)
    known = next((r for r in rows if r["spec"].startswith("cusum-known:")), None)
    if known is not None and default is not None:
        out.append(f"**With the eval noise measured** from these logs (`evalstop noise`, which "
                   f"reads no label; `{known['spec']}`): precision {pct(known['precision'])}, "
                   f"recall {pct(known['recall'])}, FPR {pct(known['fpr'])}, against the "
                   f"default's {pct(default['precision'])}, {pct(default['recall'])} and "
                   f"{pct(default['fpr'])}, which estimates each run's noise from its own "
                   f"{len(curves[next(iter(curves))].eval)} evals.")
    good = [r for r in rows if r["spec"] != "none" and r["recall"] >= 0.9]
    if good:
        best = max(good, key=lambda r: (r["precision"], -r["fpr"]))
        out.append(f"**Among rules with recall >= 90%** the most precise is `{best['spec']}`: "
                   f"precision {pct(best['precision'])}, recall {pct(best['recall'])}, FPR "
                   f"{pct(best['fpr'])}, gold kept {best['kept_vs_peak']:+.4f} from the peak.")
    out += _harm_reading(by, good)
    return out


def _harm_reading(by: dict, good: list[dict]) -> list[str]:
    """Harm against FPR: how many false stops cost the tenant anything."""
    out = []
    shown = [by[s] for s in ("evalstop:k=2", "default") if s in by]
    if shown:
        out.append("**A false stop is not always a harmful one**: " + "; ".join(
            f"`{r['spec']}` stops {pct(r['fpr'])} of healthy runs, {pct(r['harmful_rate'])} "
            f"harmfully (mean healthy regret {r['regret_healthy_mean']:+.3f})" for r in shown)
            + ". A healthy lab run often plateaus early; stopped there, its kept best "
            "checkpoint is within 2% of its gain of its end, which precision against the "
            "final-state label still counts as an error.")
    if good:
        best = min(good, key=lambda r: (r["harmful_rate"], -r["compute_saved"]))
        out.append(f"**Among rules with recall >= 90%** the one with the fewest harmful stops "
                   f"is `{best['spec']}`: {best['harmful']} harmful ({pct(best['harmful_rate'])} "
                   f"of healthy runs), compute saved {pct(best['compute_saved'])}, precision "
                   f"{pct(best['precision'])}.")
    return out


def _grid_table(meta: dict, labels: dict) -> Table:
    runs = meta.get("runs", {})
    cells: dict[tuple[int, float], list[bool]] = {}
    for run_id, lab in labels.items():
        cfg = runs.get(run_id, {}).get("config", {})
        if cfg:
            cells.setdefault((cfg["pairs"], cfg["beta"]), []).append(lab.hacking)
    pairs = sorted({p for p, _ in cells})
    betas = sorted({b for _, b in cells})
    rows = tuple((str(p), *(f"{sum(cells[(p, b)])}/{len(cells[(p, b)])}"
                            if (p, b) in cells else "" for b in betas)) for p in pairs)
    return Table(("Preference pairs", *(f"beta={b:g}" for b in betas)), rows,
                 caption="Hacking runs per grid cell (hacking / runs): few pairs and no KL "
                         "penalty hack, many pairs or a strong penalty stay healthy")


def _detector_table(rows: list[dict]) -> Table:
    out = []
    for r in rows:
        delay = (f"{num(r['delay_mean'], 1)} ({num(r['delay_median'], 0)})"
                 if math.isfinite(r["delay_mean"]) else "n/a")
        out.append((f"`{r['spec']}`", str(r["stopped"]), pct(r["precision"]), pct(r["recall"]),
                    pct(r["fpr"]), delay, num(r["gold_kept"], 3), f"{r['kept_vs_peak']:+.3f}",
                    f"{r['kept_vs_end']:+.3f}", f"{r['kept_vs_end_hacking']:+.3f}",
                    f"{r['kept_vs_end_healthy']:+.3f}", pct(r["gain_kept"])))
    return Table(("Rule", "Stopped", "Precision", "Recall", "FPR", "Delay, mean (median)",
                  "Gold kept", "vs peak", "vs end (all)", "vs end (hacking)",
                  "vs end (healthy)", "Gain kept"), tuple(out),
                 caption="Every stop rule replayed on every run, scored against the labels")


def _harm_table(rows: list[dict]) -> Table:
    out = [(f"`{r['spec']}`", pct(r["precision"]), pct(r["recall"]), pct(r["fpr"]),
            f"{r['harmful']} ({pct(r['harmful_rate'])})", num(r["regret_healthy_mean"], 3),
            num(r["regret_healthy_p95"], 3), num(r["regret_hacking_mean"], 2),
            pct(r["compute_saved"]),
            f"{r['tenant_harmful']} ({pct(r['tenant_harmful_rate'])})") for r in rows]
    return Table(("Rule", "Precision", "Recall", "FPR", "Harmful stops (share of healthy)",
                  "Regret, healthy: mean", "p95", "Regret, hacking: mean", "Compute saved",
                  "Harmful stops, tenant view"),
                 tuple(out),
                 caption="What each rule's stops cost the tenants and saved the platform, "
                 "beside precision and recall. " + HARM_NOTE.replace("jobs", "runs")
                 + " The true curve is the smoothed gold the label rule reads. A negative "
                 "regret is quality the stop saved: a hacking run here gives back several "
                 "times its (often small) gain, so its regret is far below -1. "
                 + TENANT_NOTE.replace("jobs", "runs"))


def _pick_examples(curves: dict, labels: dict) -> list[str]:
    """Two hacking runs (the largest drop, and the latest peak) and two healthy runs (the
    largest and smallest gain): chosen by the labels' numbers, so reproducible."""
    hack = [r for r in curves if labels[r].hacking]
    ok = [r for r in curves if not labels[r].hacking]
    picks: list[str] = []
    if hack:
        picks.append(max(hack, key=lambda r: labels[r].drop))
        late = max(hack, key=lambda r: (labels[r].peak_index, labels[r].drop))
        if late not in picks:
            picks.append(late)
    if ok:
        picks.append(max(ok, key=lambda r: labels[r].gain))
        small = min(ok, key=lambda r: labels[r].gain)
        if small not in picks:
            picks.append(small)
    return picks


def _corpus_figures(ctx: SectionContext, curves: dict, labels: dict) -> list[Block]:
    from evalstop.lab.labels import smooth
    from evalstop.lab.validate import replay_run

    out: list[Block] = []
    picks = _pick_examples(curves, labels)
    if picks:
        path, rel = ctx.figure("examples")
        fig = Figure(figsize=(PANEL_W * COLUMNS, 4.0 * ((len(picks) + 1) // 2)))
        for k, run_id in enumerate(picks):
            c, lab = curves[run_id], labels[run_id]
            stop, kept = replay_run(c, EXAMPLE_SPEC)
            ax = fig.add_subplot((len(picks) + 1) // 2, 2, k + 1)
            ax.plot(c.step, c.eval, "o", ms=3, color="C0", label="gold eval")
            ax.plot(c.step, smooth(c.eval), "-", color="C0", alpha=0.6, label="gold, smoothed")
            ax.axvline(lab.peak_step, color="grey", linestyle=":", label="smoothed peak")
            if stop is not None:
                ax.axvline(c.step[stop], color="C3", label=f"stop ({EXAMPLE_SPEC})")
            ax.plot(c.step[kept], c.eval[kept], "*", ms=12, color="C2", label="kept checkpoint")
            ax2 = ax.twinx()
            ax2.plot(c.step, c.proxy, "--", color="C1", alpha=0.8, label="proxy reward")
            ax2.plot(c.step, c.loss, "-.", color="C4", alpha=0.8, label="training loss")
            ax2.tick_params(axis="y", labelsize=7)
            ax.set_title(f"{run_id}: {'hacking' if lab.hacking else 'healthy'}", fontsize=9)
            ax.set_xlabel("RL step")
            ax.set_ylabel("gold score")
            if k == 0:
                h1, l1 = ax.get_legend_handles_labels()
                h2, l2 = ax2.get_legend_handles_labels()
                ax.legend(h1 + h2, l1 + l2, fontsize=6, loc="lower left")
        fig.suptitle("Lab runs: gold eval, proxy reward and loss (right axis)")
        _save(fig, path, COLUMNS)
        out.append(Image(rel, f"Example runs: gold eval (dots) and smoothed (line), proxy and "
                              f"loss (right axis), the smoothed peak (dotted), the stop of "
                              f"`{EXAMPLE_SPEC}` (red) and the kept checkpoint (star)"))
    path, rel = ctx.figure("all_runs")
    fig = Figure(figsize=(PANEL_W * COLUMNS, 4.4))
    for k, (name, field) in enumerate((("gold - start", "eval"), ("proxy reward", "proxy"))):
        ax = fig.add_subplot(1, 2, k + 1)
        for run_id, c in curves.items():
            y = getattr(c, field)
            y = y - y[0] if field == "eval" else y
            ax.plot(c.step, y, color="C3" if labels[run_id].hacking else "C0", alpha=0.25,
                    linewidth=0.8)
        ax.set_xlabel("RL step")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    fig.suptitle("Every run: hacking (red) and healthy (blue)")
    _save(fig, path, COLUMNS)
    out.append(Image(rel, "All runs' gold gain over the start and proxy reward, by label: the "
                          "proxy rises in every run, gold falls only in the hacking ones"))
    return out


def _save(fig: Figure, path: Path, columns: int) -> None:
    fig.tight_layout()
    save_png(fig, path, columns, DPI)


# ---- real_main ---------------------------------------------------------------------------
MAIN_RATES = (("precision", "Precision"), ("recall", "Recall"), ("fpr", "FPR (all non-hacking)"),
              ("fpr_rlhf", "FPR (healthy RLHF)"))
MAIN_CHANGES = (("jct_mean_s", "Mean JCT change"), ("waste_gpu_h", "Wasted GPU-h change"))


def render_main(ctx: SectionContext) -> list[Block]:
    points = [p.label for p in ctx.experiment.points]
    n = ctx.run.settings.n_seeds
    main_methods = ("EvalStop+SRTF-Est", "Default+SRTF-Est",
                    "EvalStop+SRTF-Est (oracle: true stops only)", "StopAt-0.65", "Loss plateau",
                    "Loss plateau (eps=0.1)")
    rows = []
    for m in main_methods:
        for metric, label in MAIN_RATES:
            rows.append((m, label, *(with_ci(ctx.summary.get(p, m, metric), n_total=n)
                                     for p in points)))
        for metric, label in MAIN_CHANGES:
            rows.append((m, label, *(with_ci(ctx.summary.get(p, m, metric), "delta")
                                     for p in points)))
        rows.append((m, "Quality delivered (hacking jobs)",
                     *(with_ci(ctx.summary.get(p, m, "quality_hacking_mean"), "num", 3)
                       for p in points)))
        for metric, label, kind in HARM_ROWS:
            rows.append((m, label, *(with_ci(ctx.summary.get(p, m, metric), kind,
                                             1 if kind == "pct" else 3, n_total=n)
                                     for p in points)))
    main_table = Table(("Method", "Metric", *(f"RLHF curves: {p}" for p in points)),
                       tuple(rows),
                       caption="Main-table figures, real (lab) RLHF curves beside synthetic "
                               "ones on the same seeds; changes against SRTF-Est alone. "
                               + HARM_NOTE + " " + TENANT_NOTE)
    from evalstop.experiments.real_main import OTHER_BASES

    comp = []
    for base in ("srtf-est", *OTHER_BASES):
        lab = f"EvalStop+{display(base)}"
        comp.append((display(base),
                     *(with_ci(ctx.summary.get(p, lab, "jct_mean_s"), "delta") for p in points),
                     *(with_ci(ctx.summary.get(p, lab, "waste_gpu_h"), "delta") for p in points)))
    comp_table = Table(("Base", *(f"JCT change ({p})" for p in points),
                        *(f"Waste change ({p})" for p in points)), tuple(comp),
                       caption="Composability: EvalStop on each base, against the bare base")
    out: list[Block] = [*header(ctx), main_table, comp_table,
                        Bullets(tuple(ctx.experiment.notes) + (
                            ("Quality delivered is on each curve family's own scale: the lab "
                            "gold score is about 0.9-1.1 with drops of 0.02-0.3, the "
                            "synthetic quality 0.3-0.95, so the two columns' quality "
                            "ratios are not comparable with each other."),))]
    kept = ctx.kept("EvalStop+SRTF-Est")
    if kept is not None:
        out.append(example_jobs_figure(
            ctx, kept, f"EvalStop+SRTF-Est on lab RLHF curves, seed {kept.seed}",
            "Example jobs with lab RLHF curves: observed eval (dots), smoothed gold (line), "
            "proxy (dashed), true peak (dotted), stop (red), kept checkpoint (star)"))
    return out



