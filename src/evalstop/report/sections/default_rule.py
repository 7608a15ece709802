"""Section for ``default_rule``: the recommended default beside the paper's rule on the
main table, every base scheduler and the sigma sweep, the issue's target checked from the
measured numbers, and the decomposition of k=2's JCT gain by the oracle that applies its
true stops only."""

from __future__ import annotations

import math

from evalstop.experiments import default_rule as dr
from evalstop.report import plots
from evalstop.report.blocks import Block, Bullets, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pct, pvalue, signed_pct, with_ci
from evalstop.report.sections.common import H, header
from evalstop.schedulers import SCHEDULERS

BASE = dr.MAIN_BASE
RULES = (("k=2", dr.paper_label), ("default", dr.default_label))


def _rules(base: str = BASE) -> list[tuple[str, str]]:
    """(short name, method label) of both rules on one base."""
    return [(name, label(base)) for name, label in RULES]


def _has(ctx: SectionContext, point: str, label: str) -> bool:
    return ctx.summary.get(point, label, "jct_mean_s") is not None


def _has_oracle(ctx: SectionContext, point: str) -> bool:
    return _has(ctx, point, dr.oracle_label(BASE))


def main_table(ctx: SectionContext) -> Table:
    p, n = dr.PAPER_POINT, ctx.run.settings.n_seeds
    alone = ctx.summary.getter(p, dr.bare(BASE).label)
    labels = [label for _, label in _rules()]
    # The rule's name as a column label; its full spec (150 characters) in the caption.
    columns = [f"+ paper's rule `{dr.EVALSTOP_SPEC}`", "+ `default`"]
    if _has_oracle(ctx, p):  # runs made before the oracle existed render without it
        labels.append(dr.oracle_label(BASE))
        columns.append("+ k=2, true stops only (oracle, not deployable)")
    if _has(ctx, p, dr.known_label(BASE)):
        labels.append(dr.known_label(BASE))
        columns.append("+ `cusum-known`, eval noise given")
    gs = [ctx.summary.getter(p, label) for label in labels]

    def rate(metric):
        return ["n/a (no stops)", *(with_ci(g(metric), n_total=n) for g in gs)]

    def change(metric):
        return ["(baseline)", *(f"{with_ci(g(metric), 'delta')} (p {pvalue(g(metric)['p_value'])})"
                                if g(metric) else "n/a" for g in gs)]

    def mean(metric, digits=1, scale=1.0):
        return [num(g(metric)["mean"] * scale, digits) if g(metric) else "n/a"
                for g in (alone, *gs)]

    rows = [
        ("Precision", *rate("precision")), ("Recall", *rate("recall")),
        ("FPR (all non-hacking jobs)", *rate("fpr")),
        ("FPR (healthy RLHF jobs only)", *rate("fpr_rlhf")),
        ("Stops per seed (TP / FP)", "0",
         *(f"{num(g('n_stopped')['mean'], 1)} ({num(g('tp')['mean'], 1)} / "
           f"{num(g('fp')['mean'], 1)})" for g in gs)),
        ("Delay (evals after the true peak, TPs)", "n/a", *mean("delay_mean_evals", 2)[1:]),
        ("Mean JCT (h)", *mean("jct_mean_s", 2, H)),
        ("Mean JCT vs SRTF-Est", *change("jct_mean_s")),
        ("Wasted GPU-h", *mean("waste_gpu_h")),
        ("Wasted GPU-h vs SRTF-Est", *change("waste_gpu_h")),
        ("Quality delivered, all jobs", *mean("quality_mean", 3)),
        ("Quality delivered, hacking jobs", *mean("quality_hacking_mean", 3)),
    ]
    return Table(("Metric", "SRTF-Est alone", *columns), tuple(rows),
                 caption="Main table (preset `paper`, 64 GPUs): means across seeds [95% CI]; "
                 "changes against SRTF-Est on the same seeds, paired bootstrap CI and Wilcoxon p; "
                 f"`default` is `{dr.DEFAULT}`")


def composability_table(ctx: SectionContext) -> Table:
    p, rows = dr.PAPER_POINT, []
    for base in SCHEDULERS:
        alone = ctx.summary.get(p, dr.bare(base).label, "jct_mean_s")
        if alone is None:
            continue
        cells = []
        for metric in ("jct_mean_s", "waste_gpu_h"):
            for _, label in _rules(base):
                cells.append(with_ci(ctx.summary.get(p, label, metric), "delta"))
        rows.append((dr.bare(base).label, with_ci(alone, "num", 2, H), *cells))
    return Table(("Base scheduler", "Mean JCT alone (h)", "JCT change, k=2", "JCT change, default",
                  "Waste change, k=2", "Waste change, default"), tuple(rows),
                 caption="Composability: each base scheduler wrapped by either rule, changes "
                 "against the bare base on the same seeds [95% paired bootstrap CI]")


def _sigma_points(ctx: SectionContext) -> list[tuple[float, str]]:
    return sorted((p.x, p.label) for p in ctx.experiment.points if p.x is not None)


def sigma_table(ctx: SectionContext) -> Table:
    n, rows = ctx.run.settings.n_seeds, []
    for x, p in _sigma_points(ctx):
        cells = []
        for metric, kind in (("precision", "pct"), ("recall", "pct"), ("fpr", "pct"),
                             ("jct_mean_s", "delta")):
            for _, label in _rules():
                r = ctx.summary.get(p, label, metric)
                cells.append(with_ci(r, kind, n_total=n if kind == "pct" else None))
        rows.append((f"{x:g}", *cells))
    header_cells = [f"{m} ({rule})" for m in ("Precision", "Recall", "FPR (all non-hacking)",
                                               "JCT change") for rule, _ in RULES]
    return Table(("sigma", *header_cells), tuple(rows),
                 caption="Eval noise sweep, SRTF-Est with each rule; means [95% CI], JCT change "
                 "against SRTF-Est alone on the same seeds")


def sigma_plot(ctx: SectionContext) -> Image:
    pts = _sigma_points(ctx)
    xs = [x for x, _ in pts]

    def series(metric, delta=False):
        return {rule: [ctx.delta_ci(p, label, metric) if delta else ctx.ci(p, label, metric, 100.0)
                       for _, p in pts] for rule, label in _rules()}

    path, rel = ctx.figure("sigma")
    plots.lines_vs_x(
        path, xs,
        [("precision (%)", series("precision")), ("recall (%)", series("recall")),
         ("FPR, all non-hacking (%)", series("fpr")),
         ("mean JCT change vs SRTF-Est (%)", series("jct_mean_s", delta=True))],
        "eval noise sigma", "The paper's rule (k=2) and the default vs eval noise",
        {0: (100 * dr.TARGET_PRECISION, f"target {100 * dr.TARGET_PRECISION:g}%")})
    return Image(rel, "Precision, recall, FPR and JCT change vs sigma for the paper's rule "
                      "(k=2) and the default (means, 95% CI)")


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def target_blocks(ctx: SectionContext) -> list[Block]:
    check = dr.target_check(ctx.summary, [x for x, _ in _sigma_points(ctx)])
    rows = tuple(
        (f"{c.sigma:g}", pct(c.paper_precision), "yes" if c.in_scope else "no (target silent)",
         pct(c.default_precision), _yes(c.precision_ok), signed_pct(c.paper_gain),
         signed_pct(c.default_gain), signed_pct(c.gain_floor), _yes(c.gain_ok),
         (_yes(c.holds) if c.in_scope else "n/a"))
        for c in check.per_sigma)
    share = f"{dr.TARGET_GAIN_SHARE:g}"
    table = Table(("sigma", "Precision, k=2", "k=2 below target?", "Precision, default",
                   f">= {dr.TARGET_PRECISION:g}?", "JCT gain, k=2", "JCT gain, default",
                   f"Floor ({share} x k=2 gain)", "Gain within 10%?", "Both hold?"), rows,
                  caption="The issue's target per sigma, from the means above. JCT gain = minus "
                  "the relative change of mean JCT against SRTF-Est alone")
    scope = check.in_scope
    if not scope:
        verdict = ("**Target met vacuously**: the paper's rule keeps precision >= "
                   f"{dr.TARGET_PRECISION:g} at every sigma, so the target does not apply.")
    elif check.met:
        verdict = (f"**Target met** at all {len(scope)} sigma(s) where the paper's rule falls "
                   f"below {dr.TARGET_PRECISION:g}.")
    else:
        bad = [c for c in scope if not c.holds]
        verdict = (f"**Target not met**: it fails at {len(bad)} of the {len(scope)} sigma(s) "
                   f"where the paper's rule falls below {dr.TARGET_PRECISION:g} "
                   f"({', '.join(f'{c.sigma:g}' for c in bad)}).")
    target = (f"**Target (issue 5).** In the sigma sweep, the default's precision stays >= "
              f"{dr.TARGET_PRECISION:g} at every sigma where the paper's rule falls below that, "
              f"at no more than 10% worse JCT gain (default's gain >= {share} x the paper rule's "
              f"gain; for a negative gain, within 10% of its size). Checked on means across seeds.")
    blocks: list[Block] = [Heading(3, "The issue's target"), Para(target), table, Para(verdict)]
    if scope and not check.met:
        blocks += _why(ctx, check)
    return blocks + decomposition_blocks(check) + known_noise_blocks(check)


def known_noise_blocks(check: dr.TargetCheck) -> list[Block]:
    """The same target for ``cusum-known`` told each point's eval noise; beside the issue's
    target (which is about the default), never part of its verdict."""
    if not any(math.isfinite(c.known_gain) for c in check.per_sigma):
        return []
    rows = tuple(
        (f"{c.sigma:g}", pct(c.known_precision),
         _yes(c.known_precision >= dr.TARGET_PRECISION), signed_pct(c.known_gain),
         signed_pct(c.default_gain), signed_pct(c.oracle_gain), signed_pct(c.gain_floor),
         _yes(c.known_gain >= c.gain_floor))
        for c in check.per_sigma)
    table = Table(("sigma", "Precision, known noise", f">= {dr.TARGET_PRECISION:g}?",
                   "JCT gain, known noise", "JCT gain, default", "JCT gain, oracle",
                   "Floor (0.9 x k=2 gain)", "Gain within 10%?"), rows,
                  caption="`cusum-known:sigma=S` with S each point's eval noise, SRTF-Est, "
                  "means across seeds")
    text = ("**If the platform knows its eval noise.** `cusum-known` measures drops in the "
            "given sigma instead of a per-job estimate. Here it is told each point's noise; the "
            "table holds it to the same bars as the default.")
    return [Heading(3, "With the eval noise known"), Para(text), table]


def decomposition_blocks(check: dr.TargetCheck) -> list[Block]:
    """k=2's JCT gain split by the oracle that applies its true stops only; beside the
    target, never part of its verdict. Empty for runs made without the oracle."""
    if not any(math.isfinite(c.oracle_gain) for c in check.per_sigma):
        return []
    rows = tuple(
        (f"{c.sigma:g}", signed_pct(c.paper_gain), pct(c.paper_precision),
         signed_pct(c.oracle_gain), pct(c.oracle_precision), pct(c.true_stop_share),
         signed_pct(c.default_gain), pct(c.default_precision), pct(c.default_share))
        for c in check.per_sigma)
    table = Table(("sigma", "JCT gain, k=2", "Precision, k=2",
                   "JCT gain, k=2 true stops only (oracle)", "Precision, oracle",
                   "Oracle gain / k=2 gain", "JCT gain, default", "Precision, default",
                   "Default gain / oracle gain"), rows,
                  caption="Where k=2's JCT gain comes from, SRTF-Est, means across seeds. The "
                  "oracle is not deployable: it reads the hidden hacking label")
    text = ("**Decomposing k=2's gain.** The oracle runs the paper's rule but applies its stops "
            "only to jobs that are truly hacking (eval scores are pre-drawn, so it stops exactly "
            "the hacking jobs k=2 stops, at the same eval, and lets every healthy job run on); "
            "its gain is what k=2's true stops earn, the rest of k=2's gain is bought by "
            "killing healthy jobs, and the last column is the default's gain as a share of "
            "that true-stop gain. This decomposition does not change the target's verdict "
            "above.")
    return [Heading(3, "Where the paper rule's JCT gain comes from"), Para(text), table]


def _span(values: list[float], fmt) -> str:
    """"a" or "a to b" over the finite values, for a sentence."""
    vals = sorted(v for v in values if math.isfinite(v))
    if not vals:
        return "n/a"
    return fmt(vals[0]) if fmt(vals[0]) == fmt(vals[-1]) else f"{fmt(vals[0])} to {fmt(vals[-1])}"


def _gap_lead(cs) -> str:
    """How the default's gap to k=2 splits, from the measured gains: "Most" only where, at
    every sigma given, the part k=2's true stops earn beyond the default (oracle - default)
    exceeds the part its false stops buy (k=2 - oracle)."""
    if all(c.oracle_gain - c.default_gain > c.paper_gain - c.oracle_gain for c in cs):
        return "Most of the gap is recall and timing"
    return "Part of the gap is recall and timing"


def _why(ctx: SectionContext, check: dr.TargetCheck) -> list[Block]:
    """Why the target fails, in the measured numbers of the failing sigmas."""
    paper, default = dr.paper_label(BASE), dr.default_label(BASE)
    by_point = {x: p for x, p in _sigma_points(ctx)}

    def v(x, method, metric):
        return ctx.summary.value(by_point[x], method, metric)

    failing = [c for c in check.in_scope if not c.holds]
    rows, fp_share = [], {}
    for c in failing:
        stops, fp = v(c.sigma, paper, "n_stopped"), v(c.sigma, paper, "fp")
        fp_share[c.sigma] = fp / stops if stops > 0 else math.nan
        rows.append((f"{c.sigma:g}", num(v(c.sigma, default, "n_stopped"), 1),
                     num(v(c.sigma, default, "fp"), 1), pct(v(c.sigma, default, "recall")),
                     num(stops, 1), num(fp, 1), pct(fp_share[c.sigma]),
                     pct(v(c.sigma, paper, "recall")),
                     num(v(c.sigma, default, "quality_mean"), 3),
                     num(v(c.sigma, paper, "quality_mean"), 3)))
    table = Table(("sigma", "Stops, default", "of them false", "Recall, default", "Stops, k=2",
                   "of them false", "False share, k=2", "Recall, k=2",
                   "Quality delivered, default", "Quality delivered, k=2"), tuple(rows),
                  caption="Where the target fails: stops per seed (means) and quality delivered "
                  "over all jobs, SRTF-Est with each rule")
    def across(cs, method, metric, fmt=lambda x: num(x, 1)):
        return _span([v(c.sigma, method, metric) for c in cs], fmt)

    def sigmas(cs):
        return ", ".join(f"{c.sigma:g}" for c in cs)

    items = []
    low = [c for c in failing if not c.precision_ok]
    if low:
        items.append(
            f"**Precision.** The default falls below {dr.TARGET_PRECISION:g} at sigma "
            f"{sigmas(low)} ({_span([c.default_precision for c in low], pct)}). There it stops "
            f"{across(low, default, 'n_stopped')} jobs per seed, {across(low, default, 'fp')} of "
            f"them false: with so few stops, each false stop moves its precision a lot.")
    slow = [c for c in failing if not c.gain_ok]
    if slow:
        text = (
            f"**JCT gain.** At sigma {sigmas(slow)} the default's gain is "
            f"{_span([c.default_gain for c in slow], signed_pct)} against the paper rule's "
            f"{_span([c.paper_gain for c in slow], signed_pct)}. The paper's rule stops "
            f"{across(slow, paper, 'n_stopped')} jobs per seed, the default "
            f"{across(slow, default, 'n_stopped')}, and "
            f"{_span([fp_share[c.sigma] for c in slow], pct)} of the paper rule's stops are "
            f"jobs that were not hacking: the GPU time those false stops free shortens the "
            f"queue for everyone, at a cost in quality delivered. ")
        if all(math.isfinite(c.oracle_gain) for c in slow):
            # Measured by the oracle: how much of k=2's gain the false stops account for.
            text += (
                f"The oracle below measures that part: k=2's true stops alone keep "
                f"{_span([c.true_stop_share for c in slow], pct)} of its gain, so a rule "
                f"that keeps its precision gives up only the rest by design. "
                f"{_gap_lead(slow)}: the default catches "
                f"{across(slow, default, 'recall', pct)} of the hacking jobs here (k=2 "
                f"{across(slow, paper, 'recall', pct)}), "
                f"{across(slow, default, 'delay_mean_evals', lambda x: num(x, 1))} evals "
                f"after the true peak (k=2 "
                f"{across(slow, paper, 'delay_mean_evals', lambda x: num(x, 1))}), ")
        else:
            text += ("A rule that keeps its precision gives that gain up by design. The rest "
                     f"is recall: the default catches {across(slow, default, 'recall', pct)} "
                     "of the hacking jobs here, ")
        items.append(
            text + "because the simulator's hacking RLHF curves fall by little compared with "
            "the eval noise (see the detector benchmark's workload part), so it frees less "
            "compute.")
    return [table, Bullets(tuple(items))]


def render(ctx: SectionContext) -> list[Block]:
    return [*header(ctx), *(Para(n) for n in ctx.experiment.notes),
            Heading(3, "Main table: SRTF-Est with either rule"), main_table(ctx),
            Heading(3, "Composability: every base scheduler with either rule"),
            composability_table(ctx),
            Heading(3, "Eval noise sweep"), sigma_table(ctx), sigma_plot(ctx),
            *target_blocks(ctx)]
