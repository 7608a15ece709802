"""Section for the sweeps (``sigma``, ``hacking``, ``k``): EvalStop vs its baseline at each
sweep value. The sweep value comes from the point (sigma, hacking) or the method (k)."""

from __future__ import annotations

from evalstop.experiments.paper import claims_for
from evalstop.report import plots
from evalstop.report.blocks import Block, Image, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import pvalue, with_ci
from evalstop.report.sections.common import (
    HARM_HEADER,
    HARM_NOTE,
    claims,
    harm_cells,
    header,
)


def _compared(ctx: SectionContext) -> list[tuple[float, str, str]]:
    """(x, point, method) for every method with a baseline, ordered by x."""
    out = []
    for p in ctx.experiment.points:
        for m in p.methods:
            if m.baseline is None:
                continue
            x = m.x if m.x is not None else p.x
            out.append((x, p.label, m.label))
    return sorted(out, key=lambda t: t[0])


def render(ctx: SectionContext) -> list[Block]:
    exp = ctx.experiment
    items = _compared(ctx)
    rows = []
    for x, p, m in items:
        g = ctx.summary.getter(p, m)
        jct = g("jct_mean_s")
        if jct is None:
            continue
        n = ctx.run.settings.n_seeds
        rows.append((f"{x:g}", with_ci(g("precision"), n_total=n), with_ci(g("recall"), n_total=n),
                     with_ci(g("fpr"), n_total=n), with_ci(g("fpr_rlhf"), n_total=n),
                     *harm_cells(g, n), with_ci(jct, "delta"), pvalue(jct["p_value"]),
                     with_ci(g("waste_gpu_h"), "delta"),
                     with_ci(g("delay_mean_evals"), "num", 2)))
    table = Table((exp.x_name or "x", "Precision", "Recall", "FPR (all non-hacking)",
                   "FPR (healthy RLHF)", *HARM_HEADER, "JCT change", "p (JCT)", "Waste change",
                   "Delay (evals after peak)"), tuple(rows),
                  caption="EvalStop+SRTF-Est against SRTF-Est on the same seeds at each value; "
                  "means [95% CI]. " + HARM_NOTE)
    xs = [x for x, _, _ in items]
    bounds = {}
    for c in claims_for(exp.name):
        if c.metric == "precision" and c.low is not None:
            bounds[0] = (100 * c.low, f"paper: precision >= {100 * c.low:g}%")
    path, rel = ctx.figure("rates")
    plots.lines_vs_x(
        path, xs,
        [("% (mean, 95% CI)", {name: [ctx.ci(p, m, metric, 100.0) for _, p, m in items]
                               for name, metric in (("precision", "precision"),
                                                    ("recall", "recall"),
                                                    ("FPR (all non-hacking)", "fpr"),
                                                    ("harmful stops", "harmful_rate"),
                                                    ("compute saved", "compute_saved"))}),
         ("change vs SRTF-Est (%)", {name: [ctx.delta_ci(p, m, metric) for _, p, m in items]
                                     for name, metric in (("mean JCT", "jct_mean_s"),
                                                          ("wasted GPU-h", "waste_gpu_h"))})],
        exp.x_name or "x", exp.title, bounds,
    )
    return [*header(ctx), table,
            Image(rel, f"Precision, recall, FPR, harmful stops and compute saved, and the JCT "
                       f"and waste change, vs "
                       f"{exp.x_name}"),
            *claims(ctx)]
