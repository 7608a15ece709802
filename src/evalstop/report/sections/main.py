"""Section for ``main``: our main table beside the paper's, absolute figures, examples,
and where ours differs from the paper and why."""

from __future__ import annotations

import math

import numpy as np

from evalstop.experiments.paper import SOURCE, figures_for
from evalstop.report import diagnostics, plots
from evalstop.report.blocks import Block, Bullets, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pct, pvalue, signed_pct, with_ci
from evalstop.report.sections.common import (
    HARM_NOTE,
    HARM_ROWS,
    TENANT_NOTE,
    H,
    example_jobs_figure,
    header,
)

# (metric, row label) of the comparison table: rates as values, then changes vs baseline
RATES = (("precision", "Precision"), ("recall", "Recall"),
         ("fpr", "FPR (all non-hacking jobs)"), ("fpr_rlhf", "FPR (healthy RLHF jobs only)"))
CHANGES = (("jct_mean_s", "Mean JCT vs baseline"), ("waste_gpu_h", "Wasted GPU-h vs baseline"))


def _paper(method: str, metric: str, field: str) -> str:
    """The paper's figure for this cell, as printed, or "not reported"."""
    for f in figures_for("main"):
        if (f.method, f.metric, f.field) == (method, metric, field):
            shown = pct(f.value) if field == "mean" else signed_pct(f.value)
            return shown + (f" ({f.note})" if f.note else "")
    return "not reported"


def comparison_table(ctx: SectionContext) -> Table:
    point = ctx.experiment.points[0]
    rows = []
    for m in point.methods:
        if m.baseline is None:
            continue
        for metric, label in RATES:
            r = ctx.summary.get(point.label, m.label, metric)
            rows.append((m.label, label, with_ci(r, n_total=ctx.run.settings.n_seeds),
                         _paper(m.label, metric, "mean"), ""))
        for metric, label, kind in HARM_ROWS:
            r = ctx.summary.get(point.label, m.label, metric)
            rows.append((m.label, label, with_ci(r, kind, 1 if kind == "pct" else 3,
                                                 n_total=ctx.run.settings.n_seeds),
                         "not reported", ""))
        for metric, label in CHANGES:
            r = ctx.summary.get(point.label, m.label, metric)
            rows.append((m.label, label.replace("baseline", m.baseline), with_ci(r, "delta"),
                         _paper(m.label, metric, "delta_pct"),
                         pvalue(r["p_value"]) if r else "n/a"))
    return Table(("Method", "Metric", "Ours: mean [95% CI]", f"Paper ({SOURCE})",
                  "Wilcoxon p (paired)"), tuple(rows),
                 caption="Main table, ours beside the paper's. A change is the relative change of "
                 "the means against the baseline, with a 95% paired bootstrap interval. "
                 + HARM_NOTE + " " + TENANT_NOTE)


def absolute_table(ctx: SectionContext) -> Table:
    point = ctx.experiment.points[0]
    rows = []
    for m in point.methods:
        g = ctx.summary.getter(point.label, m.label)
        if g("jct_mean_s") is None:
            continue
        rows.append((m.label, with_ci(g("jct_mean_s"), "num", 2, H),
                     num(g("jct_p50_s")["mean"] * H, 2), num(g("jct_p95_s")["mean"] * H, 2),
                     num(g("jct_rlhf_mean_s")["mean"] * H, 2) if g("jct_rlhf_mean_s") else "n/a",
                     with_ci(g("waste_gpu_h"), "num", 1),
                     (f"{num(g('quality_mean')['mean'], 3)} / "
                      f"{num(g('quality_hacking_mean')['mean'], 3)}"),
                     num(g("delay_mean_evals")["mean"], 2),
                     num(g("makespan_s")["mean"] * H, 1), pct(g("utilisation")["mean"])))
    return Table(("Method", "Mean JCT (h)", "p50 JCT (h)", "p95 JCT (h)", "RLHF mean JCT (h)",
                  "Wasted GPU-h", "Quality delivered (all / hacking)",
                  "Delay (evals after peak)", "Makespan (h)", "Utilisation"), tuple(rows),
                 caption="Absolute figures, means across seeds [95% CI]")


def decisions_table(ctx: SectionContext) -> Table:
    point = ctx.experiment.points[0]
    types = sorted({r["metric"][3:] for r in ctx.summary.rows if r["metric"].startswith("fp_")})
    rows = []
    for m in point.methods:
        rows.append((m.label, *(num(ctx.summary.value(point.label, m.label, metric), 1)
                                for metric in ("n_stopped", "tp", "fn",
                                               *(f"fp_{t}" for t in types), "tn",
                                               "early_stops"))))
    return Table(("Method", "Stopped", "TP", "FN", *(f"FP {t}" for t in types), "TN",
                  "TPs stopped before the true peak"), tuple(rows),
                 caption="Stop decisions per seed (means), false stops by job type")


def _figures(ctx: SectionContext) -> list[Block]:
    out: list[Block] = []
    es, base = ctx.kept("EvalStop+SRTF-Est"), ctx.kept("SRTF-Est")
    if es is not None:
        out.append(example_jobs_figure(
            ctx, es, f"EvalStop+SRTF-Est, seed {es.seed}: example jobs",
            "Example jobs: observed eval (dots), true quality (line), proxy reward (dashed, "
            "right axis), true peak (dotted), stop (red), delivered checkpoint (star)"))
    if es is not None and base is not None:
        path, rel = ctx.figure("occupancy")
        plots.occupancy(path, [(base.method, base.result), (es.method, es.result)], ctx.run.n_gpus,
                        f"GPUs in use, seed {es.seed}")
        out.append(Image(rel, f"Cluster GPU occupancy over time, same workload (seed {es.seed})"))
    return out


METRIC_NAMES = {"precision": "precision", "recall": "recall",
                "fpr": "FPR (all non-hacking)", "fpr_rlhf": "FPR (healthy RLHF)",
                "jct_mean_s": "mean JCT change", "waste_gpu_h": "wasted GPU-h change"}


def _vs_paper(ours: dict | None, field: str, paper: float) -> str:
    """How our value sits against the paper's: inside our 95% CI, or how it differs."""
    if ours is None or not math.isfinite(ours[field]):
        return "ours n/a"
    lo, hi = (ours["lo"], ours["hi"]) if field == "mean" else (ours["delta_lo"], ours["delta_hi"])
    if math.isfinite(lo) and math.isfinite(hi) and lo <= paper <= hi:
        return "the paper's value is inside our 95% CI"
    if field == "mean":
        gap = 100 * (ours[field] - paper)
        return f"ours is {abs(gap):.1f} points {'higher' if gap > 0 else 'lower'}"
    bigger = abs(ours[field]) > abs(paper)
    same_sign = (ours[field] < 0) == (paper < 0)
    if not same_sign:
        return "ours goes the other way"
    return f"ours is a {'larger' if bigger else 'smaller'} change"


def differences(ctx: SectionContext) -> list[Block]:
    point = ctx.experiment.points[0].label
    items = []
    for f in figures_for("main"):
        r = ctx.summary.get(point, f.method, f.metric)
        show = pct if f.field == "mean" else signed_pct
        ours = show(r[f.field]) if r else "n/a"
        items.append(f"{f.method}, {METRIC_NAMES.get(f.metric, f.metric)}: ours {ours}, "
                     f"paper {show(f.value)}: {_vs_paper(r, f.field, f.value)}.")
    return [Heading(3, "Where ours differs from the paper"), Bullets(tuple(items)),
            Heading(3, "Why"), Bullets(tuple(_why(ctx, point)))]


def _why(ctx: SectionContext, point: str) -> list[str]:
    def v(method: str, metric: str, field: str = "mean") -> float:
        return ctx.summary.value(point, method, metric, field)

    es, notes = "EvalStop+SRTF-Est", []
    kept = ctx.kept(es)
    sigma = kept.workload.meta.get("sigma", float("nan")) if kept else float("nan")
    fp_parts = ", ".join(f"{num(v(es, f'fp_{t}'), 1)} {t}" for t in ("lora", "dpo", "rlhf"))
    flat = diagnostics.flat_gain_share(kept.workload, sigma) if kept else float("nan")
    notes.append(
        f"**EvalStop's false stops** (precision {pct(v(es, 'precision'))}, FPR "
        f"{pct(v(es, 'fpr'))}; paper 98.3%, 1.5%): per seed, {num(v(es, 'fp'), 1)} non-hacking "
        f"jobs are stopped ({fp_parts}). They are jobs whose true quality is flat or nearly "
        f"flat late in training while the eval noise is not: on a flat stretch with "
        f"independent noise an eval completes two consecutive declines with probability 1/6, "
        f"so a k=2 rule fires on most long plateaus. In our workload (seed 0) "
        f"{pct(flat)} of the non-hacking jobs' eval-to-eval true gains in the second half of "
        f"training are smaller than the noise (sigma = {sigma:g}). An FPR near the paper's "
        f"1.5% at this noise needs healthy curves whose eval-to-eval gains stay well above "
        f"the noise to the end, or few evals on flat stretches; ours do not, and we did not "
        f"tune the workload or the rule to reproduce it. The `sigma` and `k` studies show the "
        f"trade-off.")
    if kept:
        missed, caught, n_missed, n_caught = diagnostics.missed_vs_caught(kept.workload, kept.result)
        notes.append(
            f"**EvalStop's misses** (recall {pct(v(es, 'recall'))}, paper 99.3%): in seed 0 the "
            f"{n_missed} missed hacking jobs lose a median {num(missed, 3)} of true quality from "
            f"peak to end, the {n_caught} caught ones {num(caught, 3)}: a shallow decline under "
            f"noise {sigma:g} does not give two clean declines in a row.")
    base_jct = v("SRTF-Est", "jct_mean_s") * H
    run_h = float(np.mean(kept.workload.duration_s)) / 3600.0 if kept else float("nan")
    notes.append(
        f"**JCT** ({signed_pct(v(es, 'jct_mean_s', 'delta_pct'))}, paper -9.4%): at load "
        f"{kept.workload.meta.get('load', float('nan')) if kept else 'n/a'} on "
        f"{ctx.run.n_gpus} GPUs, SRTF-Est's mean JCT is {num(base_jct, 1)} h against a mean run "
        f"time of {num(run_h, 1)} h, so most of a job's JCT is queueing; every GPU-hour "
        f"freed by a stop (true or false) shortens the queue for everyone, and queueing delay "
        f"falls faster than the work removed. The size of the change depends on the load "
        f"and the job mix, which the paper's summary does not pin down; false stops also "
        f"shorten the jobs they end (at a cost in quality, see the quality column).")
    notes.append(
        f"**Wasted compute** ({signed_pct(v(es, 'waste_gpu_h', 'delta_pct'))}, paper -21.8%): "
        f"what remains is the GPU time of missed hacking jobs and of the evals between the "
        f"true peak and the stop (mean delay {num(v(es, 'delay_mean_evals'), 2)} evals).")
    if kept:
        types = np.asarray(kept.workload.type).astype(str)
        rlhf = types == "rlhf"
        hack_share = float(np.mean(np.asarray(kept.workload.hacking)[rlhf])) if rlhf.any() else math.nan
        notes.append(
            f"**StopAt-0.65** (precision {pct(v('StopAt-0.65', 'precision'))}, FPR "
            f"{pct(v('StopAt-0.65', 'fpr'))}; paper 57.1%, 64.5%): it stops every RLHF job, so "
            f"its precision is the share of hacking jobs among RLHF jobs ({pct(hack_share)} in "
            f"seed 0, 60% expected in the preset) and its FPR is the healthy RLHF jobs' share "
            f"of all non-hacking jobs. This is arithmetic on the job mix, not a property of "
            f"the rule; the paper's figures fit a slightly different mix.")
    lp, live = "Loss plateau", "Loss plateau (eps=0.1)"
    base_rate = float(np.mean(kept.workload.hacking)) if kept else math.nan
    notes.append(
        f"**Loss plateau** (default window=5, eps=0.01: {num(v(lp, 'n_stopped'), 1)} stops per "
        f"seed, precision {pct(v(lp, 'precision'))}, recall {pct(v(lp, 'recall'))}; paper "
        f"57.0%, 38.3%): our losses decay exponentially and rarely improve by under 1% over "
        f"a quarter of the run, so the default almost never fires. At eps=0.1 (our proposed "
        f"live setting, chosen from how often it fires, not from labels) it stops "
        f"{num(v(live, 'n_stopped'), 1)} jobs per seed with precision "
        f"{pct(v(live, 'precision'))} and recall {pct(v(live, 'recall'))}. Either way the loss "
        f"falls through hacking, so the rule cannot tell hacking jobs from healthy ones: "
        f"hacking jobs are {pct(base_rate)} of all jobs (seed 0), and a rule blind to hacking "
        f"has a precision near that share, lower when it fires first on the jobs whose loss "
        f"converges fastest (here LoRA and DPO).")
    return notes


def render(ctx: SectionContext) -> list[Block]:
    return [*header(ctx), comparison_table(ctx), absolute_table(ctx), decisions_table(ctx),
            Para("FPR is given with both denominators: all non-hacking jobs (LoRA, DPO and "
                 "healthy RLHF; the paper's denominator) and healthy RLHF jobs only. n/a marks "
                 "an undefined ratio (e.g. precision with no stops)."),
            *_figures(ctx), *differences(ctx)]
