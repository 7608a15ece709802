"""Section for ``frontier``: per eval noise and on lab curves, the best JCT gain each step
of precision buys over every rule and knob value, the issue's target region, and a plot."""

from __future__ import annotations

import math

from evalstop.detbench.lineup import LINEUP
from evalstop.experiments import default_rule as dr
from evalstop.experiments import frontier as fr
from evalstop.report import plots
from evalstop.report.blocks import Block, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import pct, signed_pct
from evalstop.report.sections.common import header

# Precision levels of the trade-off table.
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)
X_MIN = 40.0  # the plot's left edge, in %: stopping every job scores the hacking share (~47%)


def _points(ctx: SectionContext) -> tuple[str, ...]:
    """The points of the study as this run defined them."""
    return tuple(p.label for p in ctx.experiment.points)


def _named(c: fr.Config | None, value) -> str:
    return "none" if c is None else f"{value(c)} (`{c.label}`)"


def summary_table(fronts: tuple[fr.PointFrontier, ...]) -> Table:
    def gain(c):
        return signed_pct(c.gain)

    def prec(c):
        return pct(c.precision)

    rows = tuple(
        (f.title, pct(f.paper.precision) if f.paper else "n/a",
         signed_pct(f.paper.gain) if f.paper else "n/a", signed_pct(f.floor),
         signed_pct(f.oracle_gain), _named(f.best_precise(), gain),
         _named(f.best_precise(eval_only=False), gain),
         _named(f.most_precise_at_floor(eval_only=False), prec),
         str(len(f.in_target())))
        for f in fronts)
    t = f"{dr.TARGET_PRECISION:g}"
    return Table(("Workload", "Precision, k=2", "JCT gain, k=2",
                  f"Floor ({dr.TARGET_GAIN_SHARE:g} x k=2 gain)", "JCT gain, oracle",
                  f"Best gain at precision >= {t}, eval only",
                  f"Best gain at precision >= {t}, any rule (noise given too)",
                  "Highest precision at gain >= floor, any rule",
                  "Configurations in the target region, any rule"),
                 rows, caption="Per workload (eval noise sigma, or lab curves), over every "
                 "rule of the lineup at every knob value (SRTF-Est, means across seeds). The "
                 "oracle is for reference only")


def tradeoff_table(fronts: tuple[fr.PointFrontier, ...]) -> Table:
    rows = []
    for level in LEVELS:
        cells = []
        for f in fronts:
            c = f.best_precise(level=level)
            cells.append("none" if c is None else f"{signed_pct(c.gain)} ({c.label})")
        rows.append((f">= {level:g}", *cells))
    return Table(("Precision at least", *(f.title for f in fronts)), tuple(rows),
                 caption="What precision costs: the best JCT gain any eval-only rule reaches at "
                 "each precision level (and the configuration that reaches it)")


HARM_LEVELS = (0.005, 0.01, 0.02, 0.05)


def harm_table(fronts: tuple[fr.PointFrontier, ...]) -> Table:
    """The frontier judged by harm: the best gain at each ceiling on harmful stops."""
    rows = [("k=2 itself", *(f"{pct(f.paper.harmful)} harmful, {signed_pct(f.paper.gain)}"
                             if f.paper else "n/a" for f in fronts))]
    for level in HARM_LEVELS:
        cells = []
        for f in fronts:
            c = f.best_harmless(level)
            cells.append("none" if c is None else
                         f"{signed_pct(c.gain)} ({c.label}; precision {pct(c.precision)})")
        rows.append((f"<= {pct(level)}", *cells))
    return Table(("Harmful stops at most", *(f.title for f in fronts)), tuple(rows),
                 caption="What harm costs: the best JCT gain any eval-only rule reaches with "
                 "harmful stops (non-hacking jobs whose stop cost > 2% of their gain against "
                 "running to the end) at most each share of non-hacking jobs, with its "
                 "precision. Beside the precision table above: a rule can be imprecise and "
                 "still harmless when its false stops fall on plateaus")


def verdict(fronts: tuple[fr.PointFrontier, ...]) -> Para:
    checked = [f for f in fronts if math.isfinite(f.floor)]  # the paper rule's gain is known
    if not checked:
        return Para("**The target region could not be checked**: the paper rule's JCT gain "
                    "is undefined at every point.")
    hits = [f for f in checked if f.in_target()]
    if hits:
        names = "; ".join(f"{f.title}: {', '.join(c.label for c in f.in_target())}"
                          for f in hits)
        return Para(f"**Target region reached** at {len(hits)} of {len(fronts)} point(s) by "
                    f"{names}. Picked on the scored seeds: check on fresh seeds before "
                    "relying on it.")
    where = ("at any point" if len(checked) == len(fronts) else
             f"at any of the {len(checked)} point(s) where it can be checked (the paper rule's "
             f"JCT gain is undefined at the other {len(fronts) - len(checked)})")
    text = (f"**No rule reaches the target region {where}**, even though the best "
            "configuration is picked on the seeds it is scored on.")
    # Shares of the paper rule's gain are only meaningful where that gain is positive.
    gaining = [f for f in checked if f.paper.gain > 0]
    best = [(f, f.best_precise(eval_only=False)) for f in gaining]
    shares = [c.gain / f.paper.gain for f, c in best if c is not None]
    none = sum(c is None for _, c in best)
    t = f"{dr.TARGET_PRECISION:g}"
    clauses = []
    if shares:
        notes = []
        if none:
            notes.append(f"no configuration reaches that precision at {none} point(s)")
        if len(gaining) < len(checked):
            notes.append(f"{len(checked) - len(gaining)} point(s) where the paper rule does "
                         "not gain left out")
        clauses.append(f"at precision >= {t} the best gain is {pct(min(shares), 0)} to "
                       f"{pct(max(shares), 0)} of the paper rule's"
                       + (f" ({'; '.join(notes)})" if notes else ""))
    elif none:
        clauses.append(f"no configuration reaches precision >= {t} where the paper rule gains")
    precs = [c.precision for c in (f.most_precise_at_floor(eval_only=False) for f in checked)
             if c is not None]
    if precs:
        clauses.append(f"reaching {dr.TARGET_GAIN_SHARE:g} x the paper rule's gain takes "
                       f"precision of at most {pct(max(precs))}")
    if clauses:
        joined = "; ".join(clauses)
        text += f" {joined[0].upper()}{joined[1:]}."
    # The cause is stated only where the data show it: a rule that reads no eval at all
    # (``stopat``, by training progress) keeps the paper rule's gain.
    blind = [(f, c) for f in checked for c in f.configs
             if c.signal == "progress" and c.gain >= f.floor]
    if blind:
        n = len({f.point for f, _ in blind})
        text += (f" `{blind[0][1].label}`, which reads no eval, reaches the floor at {n} of "
                 f"{len(checked)} point(s): JCT gain here comes mostly from how much run time a "
                 "rule cuts, whichever jobs it cuts it from, so a rule that stops only jobs it "
                 "is sure of frees little.")
    return Para(text)


def plot(ctx: SectionContext, fronts: tuple[fr.PointFrontier, ...]) -> Image:
    panels = []
    for f in fronts:
        series = {c.label: [(100 * x.precision, x.gain) for x in f.configs
                            if x.candidate == c.label] for c in LINEUP}
        marks = {}
        if f.paper:
            marks["paper's rule k=2"] = (100 * f.paper.precision, f.paper.gain)
        oracle = ctx.summary.value(f.point, dr.oracle_label(fr.BASE), "precision")
        marks["oracle (not deployable)"] = (100 * oracle, f.oracle_gain)
        panels.append({"title": f.title, "floor": f.floor,
                       "precision": 100 * dr.TARGET_PRECISION, "series": series,
                       "marks": marks})
    path, rel = ctx.figure("precision_gain")
    plots.precision_gain(path, panels, "JCT gain against precision, every rule and knob value "
                         "(SRTF-Est)", x_min=X_MIN)
    off = sorted({x.candidate for f in fronts for x in f.configs if x.precision < X_MIN / 100})
    return Image(rel, "Each rule's precision and JCT gain along its knob, per eval noise and on "
                      "lab curves; the "
                      "shaded box is the issue's target region"
                 + (f". Off the left edge (precision under {X_MIN:g}%): {', '.join(off)}"
                    if off else ""))


def render(ctx: SectionContext) -> list[Block]:
    fronts = fr.frontier(ctx.summary, _points(ctx))
    return [*header(ctx), *(Para(n) for n in ctx.experiment.notes),
            Heading(3, "The target region"), summary_table(fronts), verdict(fronts),
            plot(ctx, fronts), Heading(3, "What precision costs"), tradeoff_table(fronts),
            Heading(3, "What harm costs"), harm_table(fronts)]
