"""Section for ``composability``: each base scheduler with and without EvalStop."""

from __future__ import annotations

from evalstop.report import plots
from evalstop.report.blocks import Block, Image, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pvalue, with_ci
from evalstop.report.sections.common import H, claims, header


def render(ctx: SectionContext) -> list[Block]:
    point = ctx.experiment.points[0]
    pairs = [(m.baseline, m.label) for m in point.methods if m.baseline is not None]
    rows = []
    for base, wrapped in pairs:
        g = lambda label, metric: ctx.summary.get(point.label, label, metric)  # noqa: E731
        jct0, jct1 = g(base, "jct_mean_s"), g(wrapped, "jct_mean_s")
        w0, w1 = g(base, "waste_gpu_h"), g(wrapped, "waste_gpu_h")
        if jct0 is None or jct1 is None:
            continue
        rows.append((base, with_ci(jct0, "num", 2, H), with_ci(jct1, "num", 2, H),
                     with_ci(jct1, "delta"), pvalue(jct1["p_value"]), num(w0["mean"], 1),
                     num(w1["mean"], 1), with_ci(w1, "delta"), pvalue(w1["p_value"]),
                     with_ci(g(wrapped, "precision")), with_ci(g(wrapped, "recall"))))
    table = Table(("Base scheduler", "Mean JCT (h)", "+EvalStop (h)", "JCT change", "p",
                   "Wasted GPU-h", "+EvalStop", "Waste change", "p", "Precision", "Recall"),
                  tuple(rows), caption="Means across seeds [95% CI]; changes are paired "
                  "against the bare base on the same seeds (Wilcoxon p)")
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
    return [*header(ctx), table, Image(rel, "Mean JCT and wasted GPU-hours per base scheduler, "
                                       "with and without EvalStop"), *claims(ctx)]
