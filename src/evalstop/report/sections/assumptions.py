"""The ``assumptions`` section: the paper's figures | ours under the paper-assumptions knob
preset | ours on the paper preset, for the main table, composability and the sweeps."""

from __future__ import annotations

from evalstop.experiments import paper_assumptions as pa
from evalstop.experiments.paper import FIGURES, claims_for
from evalstop.report.blocks import Block, Heading, Para, Table
from evalstop.report.claims import evaluate
from evalstop.report.context import SectionContext
from evalstop.report.fmt import pct, signed_pct, with_ci

NAMES = {"precision": "precision", "recall": "recall", "fpr": "FPR (all non-hacking)",
         "jct_mean_s": "mean JCT change", "waste_gpu_h": "wasted GPU-h change"}


def _show(field: str, v: float) -> str:
    return pct(v) if field == "mean" else signed_pct(v)


def _cell(summary, point: str, method: str, metric: str, field: str, n: int) -> str:
    if summary is None:
        return "not run"
    r = summary.get(point, method, metric)
    if r is None:
        return "n/a"
    return with_ci(r, "pct" if field == "mean" else "delta", n_total=n)


def _rows_of(summary, study: str) -> list[dict]:
    """The assumptions rows of one study, renamed back to the study's own points."""
    head = pa.label(study, "")
    return [{**r, "experiment": study, "point": r["point"][len(head):]}
            for r in summary.rows if str(r["point"]).startswith(head)]


def _main_table(ctx: SectionContext, n: int) -> Table:
    ours = ctx.others.get("main")
    rows = []
    for f in FIGURES:
        if f.experiment != "main":
            continue
        rows.append((f.method, NAMES.get(f.metric, f.metric), _show(f.field, f.value),
                     _cell(ctx.summary, pa.label("main", "paper"), f.method, f.metric, f.field, n),
                     _cell(ours, "paper", f.method, f.metric, f.field, n)))
    return Table(("Method", "Metric", "Paper", "Ours, paper-assumptions", "Ours, paper preset"),
                 tuple(rows), caption="Main table (200 jobs, 64 GPUs, as in the paper): means "
                 "[95% CI] over seeds; changes against SRTF-Est on the same seeds. Under the "
                 "preset, EvalStop+SRTF-Est watches RLHF jobs only (the preset's watch knob).")


def _claims_table(ctx: SectionContext) -> Table:
    rows = []
    for study in ("composability", "sigma", "hacking"):
        mine = _rows_of(ctx.summary, study)
        ours = ctx.others.get(study)
        for c in claims_for(study):
            pre = ": ".join(evaluate(c, mine)) if mine else "not run"
            cal = ": ".join(evaluate(c, ours.rows)) if ours is not None else "not run"
            rows.append((f"`{study}`", c.text, pre, cal))
    return Table(("Study", "Paper's claim", "Ours, paper-assumptions", "Ours, paper preset"),
                 tuple(rows), caption="The paper's sweep and composability claims, checked on "
                 "both workloads' means")


def _sweep_table(ctx: SectionContext, study: str, n: int) -> Table | None:
    from evalstop.experiments import registry

    exp = registry.get(study)
    ours = ctx.others.get(study)
    rows = []
    for p in exp.points:
        for m in p.methods:
            if m.detector is None:
                continue
            lbl = pa.label(study, p.label)
            row = [p.label if len(exp.points) > 1 else m.label]
            for metric, field in (("precision", "mean"), ("recall", "mean"), ("fpr", "mean"),
                                  ("jct_mean_s", "delta_pct")):
                row += [_cell(ctx.summary, lbl, m.label, metric, field, n),
                        _cell(ours, p.label, m.label, metric, field, n)]
            rows.append(tuple(row))
    if not rows:
        return None
    head = ["Point" if len(exp.points) > 1 else "Method"]
    for name in ("Precision", "Recall", "FPR", "JCT change"):
        head += [f"{name} (preset)", f"{name} (ours)"]
    return Table(tuple(head), tuple(rows), caption=f"`{study}` on the paper-assumptions preset "
                 "beside the paper preset (means [95% CI])")


def render(ctx: SectionContext) -> list[Block]:
    n = ctx.experiment.seeds(ctx.run.settings.n_seeds)
    blocks: list[Block] = [
        Heading(2, f"{ctx.experiment.title} (`{ctx.experiment.name}`)"),
        Para(f"**Question.** {ctx.experiment.question}"),
        Para(f"**Setup.** {' '.join(ctx.experiment.notes)} Each point pairs with the same point "
             f"of the paper-preset study (same seeds, arrivals and job sizes); {n} seeds; "
             f"{ctx.run.n_sims} simulations, {ctx.run.sim_s:.1f} CPU-s."),
        _main_table(ctx, n), _claims_table(ctx),
    ]
    for study in ("composability", "sigma", "hacking", "k"):
        t = _sweep_table(ctx, study, n)
        if t is not None:
            blocks.append(t)
    return blocks
