"""The report's first screen: three lines that answer, from this run's numbers, whether the
paper's main-table result holds on this workload, under what conditions it does, and what
the recommended rule does instead. Each line says so when the study behind it did not run.
"""

from __future__ import annotations

from evalstop.experiments.assumptions import PAPER_ASSUMPTIONS
from evalstop.experiments.methods import EVALSTOP_SRTF, SRTF, with_default
from evalstop.experiments.paper import figures_for
from evalstop.report.blocks import Block, Bullets, slug
from evalstop.report.claims import compare
from evalstop.report.fmt import pct, signed_pct
from evalstop.report.sections import claim_map
from evalstop.report.sections.claim_map import cell_values, paper_assumptions_cell
from evalstop.workload.build import DEFAULT_SIGMA
from evalstop.workload.curves import eval_grid
from evalstop.workload.knobs import at_eval_count, default_snrs, lab_snrs

PAPER_N_EVALS = 20
DEFAULT_SRTF = with_default("srtf-est").label
_RATES = ("precision", "recall", "fpr")


def _paper(metric: str, field: str = "mean") -> float:
    return next(f.value for f in figures_for("main")
                if (f.method, f.metric, f.field) == (EVALSTOP_SRTF.label, metric, field))


def holds_line(summaries: dict, preset: str | None) -> str:
    if "main" not in summaries:
        return ("**Does the paper's result hold here?** Not measured: the `main` study did "
                "not run (`evalstop reproduce --only main`).")
    v = cell_values(summaries["main"], "paper", EVALSTOP_SRTF.label)
    verdicts = {m: compare(m, "mean", v[m], _paper(m)) for m in _RATES}
    worse = [m for m in _RATES if verdicts[m] == "worse than claimed"]
    answer = ("**No**" if worse else "**Yes**") if all(
        x != "n/a" for x in verdicts.values()) else "**Not measurable**"
    where = f"on the `{preset}` knob preset" if preset else "on this run's calibrated workload"
    jct = compare("jct_mean_s", "delta_pct", v["jct"], _paper("jct_mean_s", "delta_pct"))
    jct_text = {"better than claimed": "larger than claimed",
                "worse than claimed": "smaller than claimed"}.get(jct, jct)
    return (f"**Does the paper's result hold here?** {answer}, {where}: the paper's rule "
            f"(`evalstop:k=2`) has precision {pct(v['precision'])} (paper "
            f"{pct(_paper('precision'))}), recall {pct(v['recall'])} "
            f"({pct(_paper('recall'))}) and FPR {pct(v['fpr'])} ({pct(_paper('fpr'))}) in "
            f"the main table; its JCT change, {signed_pct(v['jct'])} (paper "
            f"{signed_pct(_paper('jct_mean_s', 'delta_pct'))}), is {jct_text}.")


def conditions_line(summaries: dict, preset: str | None) -> str:
    late_p, decline_p = PAPER_ASSUMPTIONS.snrs()
    late0, decline0 = default_snrs(eval_grid(1.0 / PAPER_N_EVALS), DEFAULT_SIGMA)
    lab = lab_snrs()
    lab_late = at_eval_count(lab["late_snr"], lab["n_evals"], PAPER_N_EVALS)
    text = (f"**When does it hold?** When healthy RLHF runs still gain about {late_p:.1f} "
            f"noise sigmas per eval late in training (ours {late0:.2f}, the lab's real runs "
            f"{lab_late:.2f}), hacking runs lose about {decline_p:.1f} sigmas per eval after "
            f"their peak (ours {decline0:.2f}), and only RLHF jobs are watched")
    pre = paper_assumptions_cell(summaries, preset)
    if pre is not None:
        text += (f": on such a workload (`{PAPER_ASSUMPTIONS.name}`) k=2 gives precision "
                 f"{pct(pre['precision'])}, recall {pct(pre['recall'])}, FPR "
                 f"{pct(pre['fpr'])}.")
    else:
        text += (" (the `claim_map` and `assumptions` studies, which measure it, did not run "
                 "here).")
    if "claim_map" in summaries or "assumptions" in summaries:
        text += f" See [{claim_map.FIRST_PAGE}](#{slug(claim_map.FIRST_PAGE)})."
    return text


def default_line(summaries: dict) -> str:
    if "default_rule" not in summaries:
        return ("**What does the recommended rule do?** Not measured: the `default_rule` "
                "study did not run (`evalstop reproduce --only default_rule`).")
    s = summaries["default_rule"]

    def get(method, metric, field="mean"):
        return s.value("paper", method, metric, field)

    d, k = DEFAULT_SRTF, EVALSTOP_SRTF.label
    return (f"**What does the recommended rule do?** `default` has precision "
            f"{pct(get(d, 'precision'))}, recall "
            f"{pct(get(d, 'recall'))}, harmful stops {pct(get(d, 'harmful_rate'))} of "
            f"non-hacking jobs and a JCT change of "
            f"{signed_pct(get(d, 'jct_mean_s', 'delta_pct'))} against {SRTF.label} alone "
            f"(k=2: {pct(get(k, 'precision'))}, {pct(get(k, 'recall'))}, "
            f"{pct(get(k, 'harmful_rate'))}, {signed_pct(get(k, 'jct_mean_s', 'delta_pct'))}).")


def first_screen(summaries: dict, preset: str | None = None) -> list[Block]:
    return [Bullets((holds_line(summaries, preset), conditions_line(summaries, preset),
                     default_line(summaries)))]
