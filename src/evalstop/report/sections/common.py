"""Pieces every section uses: the heading and setup, the paper's claims, a generic table."""

from __future__ import annotations

from evalstop.experiments.paper import SOURCE, claims_for
from evalstop.report.blocks import Block, Bullets, Heading, Image, Para, Table
from evalstop.report.claims import evaluate
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pvalue, with_ci

H = 1 / 3600.0  # seconds -> hours

# What the stops cost the tenants and saved the platform (``metrics.stop_cost``), shown
# beside precision/recall wherever a study has them.
HARM_ROWS = (("harmful_rate", "Harmful stops (share of non-hacking jobs)", "pct"),
             ("regret_healthy_mean", "Regret, non-hacking jobs (mean share of gain)", "num"),
             ("compute_saved", "Compute saved (share of eval intervals)", "pct"),
             ("tenant_harmful_rate", "Harmful stops, tenant view (share of non-hacking jobs)",
              "pct"))
HARM_HEADER = ("Harmful stops", "Regret, non-hacking", "Compute saved")
HARM_NOTE = ("Harmful stops: share of non-hacking jobs stopped with a kept checkpoint more than "
             "2% of their gain (first eval to true peak) below what running to the end "
             "delivers; regret: that loss as a share of the gain, mean over non-hacking jobs "
             "(0 when not stopped); compute saved: share of all jobs' eval intervals not run. "
             "A false positive stopped in a dip it would only have regained is no harm.")


TENANT_NOTE = ("Harmful stops, tenant view: the same question asked of the observed evals alone, "
               "as a platform must on a real job whose true quality nobody knows "
               "(`evalstop.metrics.tenant_harm`): a non-hacking job stopped whose delivered "
               "checkpoint's smoothed eval level (mean of the evals within 2.5% of its length) "
               "is more than 5% of its gain below the mean eval of its last tenth.")


def harm_cells(get, n_total: int | None = None) -> tuple[str, str, str]:
    """Harmful-stop rate, mean healthy regret and compute saved of one (point, method),
    mean [95% CI]; ``get`` is ``Summary.getter(point, method)``."""
    return (with_ci(get("harmful_rate"), n_total=n_total),
            with_ci(get("regret_healthy_mean"), "num", 3, n_total=n_total),
            with_ci(get("compute_saved"), n_total=n_total))


def header(ctx: SectionContext) -> list[Block]:
    exp, st = ctx.experiment, ctx.run.settings
    methods: dict[str, list[str]] = {}
    for p in exp.points:
        for m in p.methods:
            spec = f"`{m.base}`" + (f" + `{m.detector}`" if m.detector else "")
            if m.job_types is not None:
                spec += f" (stops {', '.join(sorted(m.job_types))} jobs only)"
            if m.oracle_hacking_only:
                spec += (" (ORACLE, not deployable: stops applied to truly hacking jobs "
                         "only, read from the hidden label)")
            specs = methods.setdefault(m.label, [])
            if spec not in specs:  # a label may run a different spec per point
                specs.append(spec)
    points = ", ".join(f"`{p.label}`" for p in exp.points)
    jobs = "/".join(str(j) for j in sorted({p.jobs(st.n_jobs) for p in exp.points}))
    return [
        Heading(2, f"{exp.title} (`{exp.name}`)"),
        Para(f"**Question.** {exp.question}"),
        Para(f"**Setup.** {exp.seeds(st.n_seeds)} seeds (base seed {st.base_seed}), {jobs} jobs "
             f"per workload, {ctx.run.n_gpus} GPUs, restart overhead {st.restart_overhead_s:g} s; "
             f"workload points: {points}. {ctx.run.n_sims} simulations, "
             f"{ctx.run.sim_s:.1f} CPU-s simulating "
             f"({1000 * ctx.run.sim_s / max(1, ctx.run.n_sims):.0f} ms per run)."),
        Bullets(tuple(f"**{label}**: " + (specs[0] if len(specs) == 1 else
                                          "by point, " + "; ".join(specs))
                      for label, specs in methods.items())),
    ]


def claims(ctx: SectionContext) -> list[Block]:
    cl = claims_for(ctx.experiment.name)
    if not cl:
        return []
    rows = tuple((c.text, *evaluate(c, ctx.summary.rows)) for c in cl)
    return [Table(("Paper's claim (" + SOURCE + ")", "Ours", "Verdict"), rows,
                  caption="The paper's claims for this study, checked against our means")]


def generic_table(ctx: SectionContext) -> Table:
    """Every (point, method): decisions, JCT and waste, with the change vs its baseline."""
    rows = []
    for p in ctx.experiment.points:
        for m in p.methods:
            g = ctx.summary.getter(p.label, m.label)
            jct, waste = g("jct_mean_s"), g("waste_gpu_h")
            if jct is None:
                continue
            n = ctx.experiment.seeds(ctx.run.settings.n_seeds)
            rows.append((
                p.label, m.label, with_ci(g("precision"), n_total=n),
                with_ci(g("recall"), n_total=n), with_ci(g("fpr"), n_total=n),
                *harm_cells(g, n), with_ci(jct, "num", 2, H),
                with_ci(jct, "delta") if m.baseline else "", pvalue(jct["p_value"]),
                num(waste["mean"], 1), with_ci(waste, "delta") if m.baseline else "",
            ))
    return Table(("Point", "Method", "Precision", "Recall", "FPR (all non-hacking)",
                  *HARM_HEADER, "Mean JCT (h)", "JCT change", "p (JCT)", "Wasted GPU-h",
                  "Waste change"),
                 tuple(rows), caption="Means across seeds [95% CI]; changes against each "
                 "method's baseline on the same seeds, p from the paired Wilcoxon test. "
                 + HARM_NOTE)


def generic(ctx: SectionContext) -> list[Block]:
    return [*header(ctx), generic_table(ctx), *claims(ctx)]


def example_jobs_figure(ctx: SectionContext, kept, title: str, caption: str) -> Image:
    """The kept run's example jobs (``diagnostics.example_jobs``) drawn as eval curves."""
    from evalstop.report import diagnostics, plots  # matplotlib loads only when drawing

    jobs = diagnostics.example_jobs(kept.workload, kept.result)
    path, rel = ctx.figure("examples")
    plots.example_curves(path, kept.workload, kept.result, jobs, title)
    return Image(rel, caption)
