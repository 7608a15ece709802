"""Section for ``regime``: the main table's EvalStop figures at each eval frequency and
load, and which setting comes closest to the paper's (computed, not chosen by hand)."""

from __future__ import annotations

import math

from evalstop.experiments.paper import figures_for
from evalstop.report.blocks import Block, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import pct, signed_pct
from evalstop.report.sections.common import HARM_HEADER, HARM_NOTE, harm_cells, header

# (metric, field, scale to a comparable unit): fractions as they are, JCT change in %/100.
_COMPARED = (("precision", "mean", 1.0), ("recall", "mean", 1.0), ("fpr", "mean", 1.0),
             ("jct_mean_s", "delta_pct", 0.01))


def _value(row: dict | None, field: str) -> float:
    return float("nan") if row is None else float(row[field])


def render(ctx: SectionContext) -> list[Block]:
    exp = ctx.experiment
    paper = {(f.metric, f.field): f.value for f in figures_for("main")
             if f.method == "EvalStop+SRTF-Est"}
    rows, scored = [], []
    for p in exp.points:
        for m in p.methods:
            if m.detector is None:
                continue
            vals = {(metric, field): _value(ctx.summary.get(p.label, m.label, metric), field)
                    for metric, field, _ in _COMPARED}
            rows.append((p.label, m.label, pct(vals["precision", "mean"]),
                         pct(vals["recall", "mean"]), pct(vals["fpr", "mean"]),
                         *harm_cells(ctx.summary.getter(p.label, m.label),
                                     ctx.run.settings.n_seeds),
                         signed_pct(vals["jct_mean_s", "delta_pct"])))
            # Distance to the paper over the four headline figures, each on a 0..1 scale.
            dist = sum(abs(vals[metric, field] - paper[metric, field]) * scale
                       for metric, field, scale in _COMPARED if (metric, field) in paper)
            if not math.isnan(dist):
                scored.append((dist, p.label, m.label, vals))
    table = Table(("Setting", "Method", "Precision", "Recall", "FPR (all non-hacking)",
                   *HARM_HEADER, "JCT change vs SRTF-Est"), tuple(rows),
                  caption="Means across seeds [95% CI where given]; each setting's methods "
                  "share its workloads. " + HARM_NOTE)
    blocks = [*header(ctx), table]
    if scored:
        dist, point, method, v = min(scored, key=lambda s: s[0])
        # Within 5 points of the paper on both at once, anywhere in the grid?
        both = any(w["precision", "mean"] >= paper["precision", "mean"] - 0.05
                   and w["recall", "mean"] >= paper["recall", "mean"] - 0.05
                   for *_, w in scored)
        blocks.append(Para(
            f"**Closest to the paper** (smallest summed gap over precision, recall, FPR and "
            f"JCT change): {method} at *{point}*: precision {pct(v['precision', 'mean'])} "
            f"(paper {pct(paper['precision', 'mean'])}), recall {pct(v['recall', 'mean'])} "
            f"({pct(paper['recall', 'mean'])}), FPR {pct(v['fpr', 'mean'])} "
            f"({pct(paper['fpr', 'mean'])}), JCT {signed_pct(v['jct_mean_s', 'delta_pct'])} "
            f"({signed_pct(paper['jct_mean_s', 'delta_pct'])}). Fewer evals per run raise "
            "precision (fewer chances for two chance declines on a plateau, larger true "
            "gains between evals) and lower recall (fewer evals left after a late peak); "
            "the JCT saving grows with load, because queueing delay does. "
            + ("Some setting here comes within 5 points of the paper's precision and "
               "recall together." if both else "No setting here comes within 5 points of "
               "the paper's precision and recall together.")))
    return blocks
