"""Section for ``composability``: each base scheduler with and without EvalStop."""

from __future__ import annotations

from evalstop.report import plots
from evalstop.report.blocks import Block, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pvalue, with_ci
from evalstop.report.sections.common import (
    HARM_HEADER,
    HARM_NOTE,
    H,
    claims,
    harm_cells,
    header,
)


def render(ctx: SectionContext) -> list[Block]:
    point = ctx.experiment.points[0]
    pairs = [(m.baseline, m.label) for m in point.methods if m.baseline is not None]
    rows = []
    for base, wrapped in pairs:
        g0, g1 = ctx.summary.getter(point.label, base), ctx.summary.getter(point.label, wrapped)
        jct0, jct1 = g0("jct_mean_s"), g1("jct_mean_s")
        w0, w1 = g0("waste_gpu_h"), g1("waste_gpu_h")
        if jct0 is None or jct1 is None:
            continue
        rows.append((base, with_ci(jct0, "num", 2, H), with_ci(jct1, "num", 2, H),
                     with_ci(jct1, "delta"), pvalue(jct1["p_value"]), num(w0["mean"], 1),
                     num(w1["mean"], 1), with_ci(w1, "delta"), pvalue(w1["p_value"]),
                     with_ci(g1("precision")), with_ci(g1("recall")), *harm_cells(g1)))
    table = Table(("Base scheduler", "Mean JCT (h)", "+EvalStop (h)", "JCT change", "p",
                   "Wasted GPU-h", "+EvalStop", "Waste change", "p", "Precision", "Recall",
                   *HARM_HEADER),
                  tuple(rows), caption="Means across seeds [95% CI]; changes are paired "
                  "against the bare base on the same seeds (Wilcoxon p). " + HARM_NOTE)
    path, rel = ctx.figure("bars")
    bases = [b for b, _ in pairs]
    plots.grouped_bars(
        path, bases,
        [("mean JCT (h)", {"base alone": [ctx.ci(point.label, b, "jct_mean_s", H) for b, _ in pairs],
                           "with EvalStop": [ctx.ci(point.label, w, "jct_mean_s", H)
                                             for _, w in pairs]}),
         ("wasted GPU-hours", {"base alone": [ctx.ci(point.label, b, "waste_gpu_h") for b, _ in pairs],
                               "with EvalStop": [ctx.ci(point.label, w, "waste_gpu_h")
                                                 for _, w in pairs]})],
        "Each base scheduler with and without EvalStop (95% CI)",
    )
    blocks = [*header(ctx), table, Image(rel, "Mean JCT and wasted GPU-hours per base "
                                              "scheduler, with and without EvalStop")]
    if _same_decisions(ctx, point.label, [w for _, w in pairs]):
        blocks.append(Para(
            "Precision, recall and wasted GPU-hours are the same under every base: a stop "
            "depends only on the job's own evals, which no base scheduler changes (a "
            "preempted job resumes where it was and is evaluated at the same points). The "
            "base decides only when jobs run, so only JCT differs."))
    return blocks + claims(ctx)


def _same_decisions(ctx: SectionContext, point: str, wrapped: list[str]) -> bool:
    """Whether every wrapped base stopped exactly the same jobs on every seed (same TP/FP
    counts and waste per seed)."""
    seen = set()
    for label in wrapped:
        rows = sorted((r for r in ctx.run.rows if r["point"] == point and r["method"] == label),
                      key=lambda r: r["seed"])
        seen.add(tuple((r["tp"], r["fp"], round(r["waste_gpu_h"], 6)) for r in rows))
    return len(seen) == 1
