"""The report's first screen: what a platform would save, from the ``platform`` study alone
(the fitted workload, the same with real lab runs, the savings map), its table, then one
line on the paper's setting (the ``main`` study). Each line names its study and says so
when that study did not run.
"""

from __future__ import annotations

from evalstop.experiments.methods import EVALSTOP_SRTF, SRTF
from evalstop.experiments.paper import figures_for
from evalstop.experiments.platform import FALLS, FITTED_POINT, LAB_POINT, PEAKS, map_point
from evalstop.report.blocks import Block, Bullets, slug
from evalstop.report.claims import compare
from evalstop.report.fmt import pct, signed_pct
from evalstop.report.sections import platform
from evalstop.report.sections.claim_map import cell_values

_RATES = ("precision", "recall", "fpr")


def _paper(metric: str, field: str = "mean") -> float:
    return next(f.value for f in figures_for("main")
                if (f.method, f.metric, f.field) == (EVALSTOP_SRTF.label, metric, field))


def holds_line(summaries: dict, preset: str | None) -> str:
    if "main" not in summaries:
        return ("**Does the paper's result hold in its own setting?** Not measured: the "
                "`main` study did not run (`evalstop reproduce --only main`).")
    v = cell_values(summaries["main"], "paper", EVALSTOP_SRTF.label)
    verdicts = {m: compare(m, "mean", v[m], _paper(m)) for m in _RATES}
    worse = [m for m in _RATES if verdicts[m] == "worse than claimed"]
    answer = ("**No**" if worse else "**Yes**") if all(
        x != "n/a" for x in verdicts.values()) else "**Not measurable**"
    where = (f"on the `{preset}` knob preset" if preset
             else "in the paper's setting (preset `paper`, the `main` study)")
    jct = compare("jct_mean_s", "delta_pct", v["jct"], _paper("jct_mean_s", "delta_pct"))
    jct_text = {"better than claimed": "larger than claimed",
                "worse than claimed": "smaller than claimed"}.get(jct, jct)
    return (f"**Does the paper's result hold in its own setting?** {answer}, {where}: the paper's rule "
            f"(`evalstop:k=2`) has precision {pct(v['precision'])} (paper "
            f"{pct(_paper('precision'))}), recall {pct(v['recall'])} "
            f"({pct(_paper('recall'))}) and FPR {pct(v['fpr'])} ({pct(_paper('fpr'))}) in "
            f"the main table; its JCT change, {signed_pct(v['jct'])} (paper "
            f"{signed_pct(_paper('jct_mean_s', 'delta_pct'))}), is {jct_text}.")


def platform_lines(summaries: dict) -> list[str]:
    """What a platform saves, from the ``platform`` study alone: the fitted workload, the
    same with real lab runs, and the savings map's range (the numbers: ``rules_table``)."""
    if "platform" not in summaries:
        return [("**What would a platform save?** Not measured: the `platform` study did "
                 "not run (`evalstop reproduce --only platform`).")]
    s = summaries["platform"]
    (d, d_name), (k, k_name) = platform.RULES
    lines = []
    for point, question, where in (
            (FITTED_POINT, "What would a platform save?",
             "On the workload fitted to measured runs"),
            (LAB_POINT, "And with real runs?", "With every RLHF job a real lab run")):
        fd, fk = (platform.rule_figures(s, point, m) for m in (d, k))
        lines.append(f"**{question}** {where} (`platform`, point `{point}`): {d_name} frees "
                     f"{pct(fd['freed_share'], 0)} of the GPU-hours wasted past peaks with "
                     f"{pct(fd['harmful'])} harmful stops; {k_name} frees "
                     f"{pct(fk['freed_share'], 0)} but stops {pct(fk['harmful'])} of "
                     f"non-hacking jobs harmfully (table below).")
    if s.get(map_point(PEAKS[0], FALLS[0]), d, "waste_gpu_h") is not None:
        (dlo, dhi), (klo, khi) = (platform.map_range(s, m) for m in (d, k))
        lines.append(f"**Where does my fleet sit?** On the savings map (`platform`, hacking "
                     f"runs peaking at {PEAKS[0]:g}-{PEAKS[-1]:g} of the run and falling "
                     f"x{FALLS[0]:g}-x{FALLS[-1]:g} as far as the fitted runs), {d_name} frees "
                     f"{pct(dlo, 0)}-{pct(dhi, 0)} of the waste, {k_name} {pct(klo, 0)}-"
                     f"{pct(khi, 0)}; {platform.corner_text(s)} See "
                     f"[the map](#{slug(platform.MAP_HEADING)}).")
    return lines


def first_screen(summaries: dict, preset: str | None = None) -> list[Block]:
    out: list[Block] = [Bullets((*platform_lines(summaries), holds_line(summaries, preset)))]
    if "platform" in summaries:
        st = summaries["platform"]
        out.append(platform.rules_table(st, _seeds(st)))
    return out


def _seeds(summary) -> int:
    row = summary.get(FITTED_POINT, SRTF.label, "waste_gpu_h")
    return int(row["n"]) if row is not None else 0
