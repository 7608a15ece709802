"""The claim map section (``claim_map``), and the report's first-page answer: what must be
true for the paper's main-table figures, whether real runs satisfy it, and what a platform
should expect instead."""

from __future__ import annotations

import math

import numpy as np

from evalstop.experiments import claim_map as cm
from evalstop.experiments.assumption_search import MAX_FPR, MIN_PRECISION, MIN_RECALL
from evalstop.experiments.assumptions import PAPER_ASSUMPTIONS
from evalstop.experiments.methods import EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF
from evalstop.report.blocks import Block, Heading, Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.fmt import num, pct, signed_pct
from evalstop.workload.build import DEFAULT_SIGMA
from evalstop.workload.curves import eval_grid
from evalstop.workload.knobs import at_eval_count, default_snrs, lab_snrs

WATCH = ((EVALSTOP_SRTF.label, "every job watched"),
         (EVALSTOP_SRTF_RLHF.label, "RLHF jobs only watched"))
METRICS = (("precision", "precision (%)"), ("recall", "recall (%)"), ("fpr", "FPR (%)"),
           ("jct", "JCT change (%)"))
PAPER_N_EVALS = PAPER_ASSUMPTIONS.n_evals


def cell_values(summary, point: str, method: str) -> dict[str, float]:
    def mean(metric):
        return summary.value(point, method, metric)
    return {"precision": mean("precision"), "recall": mean("recall"), "fpr": mean("fpr"),
            "jct": summary.value(point, method, "jct_mean_s", "delta_pct")}


def paper_assumptions_cell(summaries: dict, preset: str | None) -> dict[str, float] | None:
    """k=2's main-table cell on the paper-assumptions workload: the ``assumptions`` study's,
    or the main table's when the whole run used that preset; None when neither ran."""
    if "assumptions" in summaries:
        return cell_values(summaries["assumptions"], "main: paper", EVALSTOP_SRTF.label)
    if preset == PAPER_ASSUMPTIONS.name and "main" in summaries:
        return cell_values(summaries["main"], "paper", EVALSTOP_SRTF.label)
    return None


def in_region(v: dict[str, float]) -> bool:
    """The paper's main-table region, on the means (NaN is outside)."""
    return (v["precision"] >= MIN_PRECISION and v["recall"] >= MIN_RECALL
            and v["fpr"] <= MAX_FPR)


def grid_values(summary) -> dict:
    """{(method, n_evals): {(late, decline): values}} over the map's cells that ran."""
    out: dict = {}
    for p in cm.EXPERIMENT.points:
        n = round(1.0 / p.workload["eval_interval"])
        key = (p.workload["late_snr"], p.workload["decline_snr"])
        for method, _ in WATCH:
            v = cell_values(summary, p.label, method)
            if all(math.isnan(x) for x in v.values()):
                continue
            out.setdefault((method, n), {})[key] = v
    return out


def region_edges(cells: dict) -> tuple[float, float] | None:
    """(smallest late SNR, smallest decline SNR) among cells in the region, None if none."""
    inside = [k for k, v in cells.items() if in_region(v)]
    if not inside:
        return None
    return min(k[0] for k in inside), min(k[1] for k in inside)


def _marks(lab: dict, preset: bool) -> dict[int, list]:
    marks = {}
    for n in cm.N_EVALS:
        late0, decline0 = default_snrs(eval_grid(1.0 / n), DEFAULT_SIGMA)
        m = [("ours", late0, decline0),
             ("lab", at_eval_count(lab["late_snr"], lab["n_evals"], n),
              at_eval_count(lab["decline_snr"], lab["n_evals"], n))]
        if preset and n == PAPER_ASSUMPTIONS.n_evals:
            m.insert(1, ("preset", *PAPER_ASSUMPTIONS.snrs()))
        marks[n] = m
    return marks


def _figure(ctx: SectionContext, vals: dict, lab: dict, method: str, what: str) -> Image | None:
    from evalstop.report import claim_plots  # matplotlib loads only when drawing

    panels = [n for n in cm.N_EVALS if (method, n) in vals]
    if not panels:
        return None
    shape = (len(cm.LATE_SNRS), len(cm.DECLINE_SNRS))
    values, region = {}, {}
    for n in panels:
        region[n] = np.zeros(shape, bool)
        for metric, _ in METRICS:
            values[(metric, n)] = np.full(shape, np.nan)
        for (late, decline), v in vals[(method, n)].items():
            i, j = cm.LATE_SNRS.index(late), cm.DECLINE_SNRS.index(decline)
            for metric, _ in METRICS:
                values[(metric, n)][i, j] = v[metric]
            region[n][i, j] = in_region(v)
    stem = "all" if method == EVALSTOP_SRTF.label else "rlhf"
    path, rel = ctx.figure(f"heatmap_{stem}")
    # the preset watches RLHF jobs only, so it belongs on that map only
    with_preset = method == EVALSTOP_SRTF_RLHF.label and not PAPER_ASSUMPTIONS.watch_lora_dpo
    claim_plots.heatmaps(path, lates=cm.LATE_SNRS, declines=cm.DECLINE_SNRS, panels=panels,
                         metrics=list(METRICS), values=values, region=region,
                         marks=_marks(lab, with_preset),
                         title=f"evalstop:k=2 over SRTF-Est, {what}")
    return Image(rel, f"evalstop:k=2, {what}: precision, recall and FPR (all non-hacking "
                      "jobs) in %, JCT change against SRTF-Est in %, per cell (mean over "
                      "the cell's seeds). Red outline: the paper's region (precision >= 97%, "
                      "recall >= 98%, FPR <= 2%). Markers: the paper preset (star), the "
                      "paper-assumptions preset (diamond, 20-eval panel of the RLHF-only "
                      "map, as it watches RLHF jobs only), the real lab runs' measured SNRs "
                      "(triangle, carried from their 25 evals to the panel's count; drawn at "
                      "the edge when off the grid).")


def _where_table(ctx: SectionContext, vals: dict, lab: dict) -> Table:
    rows = []
    late_p, decline_p = PAPER_ASSUMPTIONS.snrs()
    for n in cm.N_EVALS:
        edges = region_edges(vals.get((EVALSTOP_SRTF_RLHF.label, n), {}))
        late0, decline0 = default_snrs(eval_grid(1.0 / n), DEFAULT_SIGMA)
        lab_late = at_eval_count(lab["late_snr"], lab["n_evals"], n)
        lab_decline = at_eval_count(lab["decline_snr"], lab["n_evals"], n)
        rows.append((str(n),
                     f">= {edges[0]:g} and >= {edges[1]:g}" if edges else "no cell",
                     f"{num(late0)} / {num(decline0)}",
                     f"{num(late_p)} / {num(decline_p)}" if n == PAPER_ASSUMPTIONS.n_evals else "",
                     f"{num(lab_late)} / {num(lab_decline)}"))
    return Table(("Evals per run", "Region reached at late / decline SNR (RLHF only watched)",
                  "Paper preset: late / decline SNR", "paper-assumptions",
                  "Real lab runs (measured)"), tuple(rows),
                 caption=(f"Per-eval SNRs at sigma {DEFAULT_SIGMA:g}. The lab runs were measured "
                          f"at their own {lab['n_evals']} evals per run and noise (sigma "
                          f"{lab['sigma']:.4f}, pooled second differences): late-run SNR "
                          f"{lab['late_snr']:.3f} over {lab['n_healthy']} healthy runs, decline "
                          f"SNR {lab['decline_snr']:.2f} over {lab['n_hacking']} hacking runs; "
                          "other eval counts carry them by the ratio of eval spacings."))


def _cell_table(vals: dict) -> Table:
    rows = []
    for n in cm.N_EVALS:
        for late in cm.LATE_SNRS:
            for decline in cm.DECLINE_SNRS:
                cells = [vals.get((m, n), {}).get((late, decline)) for m, _ in WATCH]
                if all(c is None for c in cells):
                    continue
                row = [str(n), f"{late:g}", f"{decline:g}"]
                for c in cells:
                    row += (["n/a"] * 4 if c is None else
                            [pct(c["precision"], 0), pct(c["recall"], 0), pct(c["fpr"], 0),
                             signed_pct(c["jct"], 0)])
                row.append(", ".join(w.split()[0] for (m, w), c in zip(WATCH, cells)
                                     if c is not None and in_region(c)) or "")
                rows.append(tuple(row))
    return Table(("Evals", "Late SNR", "Decline SNR", "Prec (all)", "Rec (all)", "FPR (all)",
                  "JCT (all)", "Prec (RLHF)", "Rec (RLHF)", "FPR (RLHF)", "JCT (RLHF)",
                  "In region"), tuple(rows),
                 caption="Every cell of the map: evalstop:k=2 watching every job (all) and RLHF "
                         "jobs only (RLHF); means over the cell's seeds. 'In region': which "
                         "watch setting reaches the paper's region there.")


def render(ctx: SectionContext) -> list[Block]:
    st, exp = ctx.run.settings, ctx.experiment
    lab = lab_snrs()
    vals = grid_values(ctx.summary)
    blocks: list[Block] = [
        Heading(2, f"{exp.title} (`{exp.name}`)"),
        Para(f"**Question.** {exp.question}"),
        Para(f"**Setup.** {len(exp.points)} cells: late-run SNR "
             f"{', '.join(f'{x:g}' for x in cm.LATE_SNRS)} x decline SNR "
             f"{', '.join(f'{x:g}' for x in cm.DECLINE_SNRS)} x "
             f"{', '.join(str(n) for n in cm.N_EVALS)} evals per run (cells whose decline "
             "would be too shallow to count as hacking are left out). Each cell is the "
             f"main table's workload (preset `paper`, {exp.points[0].jobs(st.n_jobs)} jobs, "
             f"{ctx.run.n_gpus} GPUs, sigma {DEFAULT_SIGMA:g}, load 0.9) with its RLHF curves "
             "stretched to the cell's SNRs; SRTF-Est alone, with evalstop:k=2 on every job, "
             f"and on RLHF jobs only. **{exp.seeds(st.n_seeds)} seed(s) per cell** "
             f"(a {exp.seed_fraction:g} share of the run's {st.n_seeds}, to keep the grid "
             "cheap): a cell's figures are coarser than the main studies', and the region is "
             f"drawn from means. {ctx.run.n_sims} simulations, {ctx.run.sim_s:.1f} CPU-s."),
        Para("**The knobs.** Late-run SNR: a healthy RLHF run's mean gain per eval over the "
             "second half of training, in units of the eval noise. Decline SNR: a hacking "
             "run's mean loss per eval after its true peak, in noise units. Both are per "
             "eval: the same curves give twice the SNR with half as many evals."),
    ]
    for method, what in reversed(WATCH):
        img = _figure(ctx, vals, lab, method, what)
        if img is not None:
            blocks.append(img)
    blocks += [_where_table(ctx, vals, lab), _cell_table(vals)]
    return blocks


FIRST_PAGE = "What must be true for the paper's figures"


def first_page(summaries: dict, preset: str | None = None) -> list[Block]:
    """One paragraph with numbers, from the claim map, the assumptions study and the main
    and real-curve studies where they ran; nothing when neither map nor preset ran. Under
    a knob preset (``preset``) the main study ran on it, so its figures are named so."""
    if "claim_map" not in summaries and "assumptions" not in summaries:
        return []
    lab = lab_snrs()
    late_p, decline_p = PAPER_ASSUMPTIONS.snrs()
    late0, decline0 = default_snrs(eval_grid(1.0 / PAPER_N_EVALS), DEFAULT_SIGMA)
    lab_late = at_eval_count(lab["late_snr"], lab["n_evals"], PAPER_N_EVALS)
    lab_decline = at_eval_count(lab["decline_snr"], lab["n_evals"], PAPER_N_EVALS)
    parts = []
    need = (f"healthy RLHF runs that still gain about {late_p:.1f} noise sigmas per eval late "
            f"in training (ours: {late0:.2f}), hacking runs that lose about {decline_p:.1f} "
            f"sigmas per eval after their peak (ours: {decline0:.2f}), and a rule that "
            f"watches RLHF jobs only, at {PAPER_N_EVALS} evals per run")
    if "claim_map" in summaries:
        grid = grid_values(summaries["claim_map"])
        cells = grid.get((EVALSTOP_SRTF_RLHF.label, PAPER_N_EVALS), {})
        edges = region_edges(cells)
        any_all = any(in_region(v) for (m, _), cs in grid.items() if m == EVALSTOP_SRTF.label
                      for v in cs.values())
        if edges:
            need += (f" (on the claim map's coarser grid at {PAPER_N_EVALS} evals, the cells in "
                     f"the region all have late-run SNR >= {edges[0]:g} and decline SNR >= "
                     f"{edges[1]:g}"
                     + ("" if any_all else "; with LoRA and DPO jobs watched no cell reaches it")
                     + ")")
    parts.append(f"EvalStop's main-table "
                 f"precision 98.3%, recall 99.3% and FPR 1.5% need {need}.")
    pre = paper_assumptions_cell(summaries, preset)
    if pre is not None:
        v = pre
        parts.append(f"The least-changed such workload (`paper-assumptions`: both stretches "
                     f"x{PAPER_ASSUMPTIONS.c_late:g}, i.e. the RLHF curves as if the eval noise "
                     f"were {DEFAULT_SIGMA / PAPER_ASSUMPTIONS.c_late:g} instead of "
                     f"{DEFAULT_SIGMA:g}) gives precision {pct(v['precision'])}, recall "
                     f"{pct(v['recall'])}, FPR {pct(v['fpr'])} and a JCT change of "
                     f"{signed_pct(v['jct'])} (paper -9.4%; our cluster runs at load 0.9, "
                     "see `regime`).")
    verdict = ("do not satisfy it" if lab_late < late_p or lab_decline < decline_p else
               "satisfy it")
    parts.append(f"**Real runs {verdict}:** the lab's real over-optimisation runs fall steeply "
                 f"(decline SNR {lab_decline:.1f} at {PAPER_N_EVALS} evals) but their healthy "
                 f"runs plateau (late-run SNR {lab_late:.2f}, "
                 f"{late_p / max(lab_late, 1e-9):.0f}x too low), as do the paper preset's curves.")
    expect = []
    if "main" in summaries and preset is None:
        v = cell_values(summaries["main"], "paper", EVALSTOP_SRTF.label)
        r = cell_values(summaries["main"], "paper", EVALSTOP_SRTF_RLHF.label)
        expect.append(f"on the paper preset k=2 has precision {pct(v['precision'])} and FPR "
                      f"{pct(v['fpr'])} ({pct(r['precision'])} and {pct(r['fpr'])} watching "
                      "RLHF jobs only)")
    if "real_main" in summaries and preset is None:
        v = cell_values(summaries["real_main"], "lab", EVALSTOP_SRTF.label)
        expect.append(f"with real lab curves {pct(v['precision'])} and {pct(v['fpr'])}")
    if expect:
        parts.append("**A platform should expect** far more false stops than the paper's: "
                     + "; ".join(expect) + ", unless its healthy runs still climb by more "
                     "than the eval noise per eval (measure both with `evalstop noise` and "
                     "the late gains of finished jobs), or it uses a noise-aware rule (see the "
                     "detector benchmark and `default_rule`).")
    return [Heading(2, FIRST_PAGE), Para(" ".join(parts))]
