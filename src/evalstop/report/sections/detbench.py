"""Section for the detector benchmark (``evalstop.detbench``) inside the reproduce report.

It renders the summary ``run_detector_benchmark`` returns (the content of
``detectors.json``), so the report and the benchmark's own files cannot disagree. The
benchmark writes its plots into its own folder; images are referenced relative to the
report's folder, which is how both renderers resolve them (Markdown by relative link,
HTML by reading the file to embed it).
"""

from __future__ import annotations

from pathlib import Path

# detbench.report imports report.plots (so this package) first: its names are read when a
# section is written, not at import, or the import would be circular.
from evalstop.detbench import report as bench_report
from evalstop.detbench.bench import shortfall_text, target_on
from evalstop.detbench.lineup import same_rule
from evalstop.experiments.methods import EVALSTOP_SPEC
from evalstop.report.blocks import Block, Heading, Image, Para, Table
from evalstop.report.fmt import num

DIR = "detectors"  # the benchmark's folder under the report's folder
PART_TITLE = {
    "tuning": "Tuning part (the families the default was chosen on)",
    "held_out": "Held-out part (NOT tuned on)",
    "fresh": "Fresh held-out part (written blind after the first was examined; run once)",
    "workload": "Workload part (the simulator's own curves; report-only)",
}
PART_SHORT = {"tuning": "tuning", "held_out": "held-out (not tuned on)",
              "fresh": "fresh held-out (blind)",
              "workload": "workload (report-only)"}
COLUMNS = ("precision", "recall", "fpr", "harmful_rate", "regret_healthy", "saved", "delay",
           "quality", "quality_hacking", "tenant_harmful_rate")
HEADER = ("Precision", "Recall", "FPR", "Harmful stops", "Regret, healthy", "Compute saved",
          "Delay (evals)", "Quality kept", "Quality kept, hacking runs",
          "Harmful stops, tenant view")


def _find(rows: dict, spec: str) -> str | None:
    """The key of ``rows`` naming the same rule as ``spec`` (specs are compared canonically)."""
    return next((k for k in rows if same_rule(k, spec)), None)


def _cells(m: dict) -> tuple[str, ...]:
    return tuple(num(m.get(k), 1 if k == "delay" else 3) for k in COLUMNS)


def _lineup(summary: dict) -> list[tuple[str, str]]:
    """(label, spec) of each detector at its main setting, plus the default if separate."""
    out = [(d["label"], d["main_spec"]) for d in summary["detectors"]]
    default = summary["default_spec"]
    if not any(same_rule(s, default) for _, s in out):
        out.append(("default", default))
    return [(f"**{lab}** (default)" if same_rule(s, default) else lab, s)
            for lab, s in out]


def pooled_table(summary: dict, part: str) -> Table:
    rows = summary["parts"][part]["pooled"]
    body, first = [], None
    for label, spec in _lineup(summary):
        key = _find(rows, spec)
        if key is not None:
            first = first or rows[key]
            body.append((label, f"`{key}`", *_cells(rows[key])))
    size = (f"{first['runs']} runs, {first['hacking']} hacking" if first else "no runs")
    return Table(("Detector", "Spec", *HEADER), tuple(body),
                 caption=f"{PART_TITLE[part]}: pooled over every sigma and noise kind ({size})")


def family_table(summary: dict) -> Table:
    default, paper = summary["default_spec"], EVALSTOP_SPEC
    body = []
    for part in summary["parts"]:
        for fam, rows in summary["parts"][part]["by_family"].items():
            for name, spec in (("default", default), ("paper's rule", paper)):
                key = _find(rows, spec)
                if key is not None:
                    body.append((PART_SHORT[part], f"`{fam}`", name, *_cells(rows[key])))
    return Table(("Part", "Family", "Rule", *HEADER), tuple(body),
                 caption=f"Per family: the default (`{default}`) against the paper's rule "
                 f"(`{paper}`). Families without hacking runs have no recall (n/a) and precision "
                 "0 (or n/a with no stops) by definition: read their FPR")


def snr_table(summary: dict) -> Table | None:
    """Recall by decline-SNR bucket (``evalstop.detbench.detectability``), where recorded."""
    from evalstop.detbench.detectability import LABELS, VISIBLE

    body = []
    for part, p in summary["parts"].items():
        for spec, d in p.get("detectability", {}).items():
            body.append((PART_SHORT[part], f"`{spec}`",
                         *(f"{num(b['recall'], 2)} ({num(b['share'], 2)})" for b in d["buckets"]),
                         num(d["visible_recall"], 3)))
    if not body:
        return None
    return Table(("Part", "Rule", *(f"SNR {b}" for b in LABELS), f"Recall, SNR >= {VISIBLE:g}"),
                 tuple(body),
                 caption="Recall by decline SNR (share of the part's hacking runs in brackets). "
                 "Decline SNR = sqrt(sum over evals after the true peak of (peak gain - gain)^2) "
                 "/ sigma: the evidence of the fall that the whole run offers to someone who knows "
                 "the peak level. Below about 3 no online rule can tell the fall from noise at a "
                 "useful precision; a decline with SNR >= 4 is plainly visible, so misses there "
                 "are the rule's own")


def _target(summary: dict) -> Para:
    t = summary["target"]
    sel = summary["selection"]
    fresh = (f" On the fresh held-out part (written blind): {_numbers(t, 'fresh')}."
             if "fresh" in t else "")
    return Para(
        f"**The benchmark's own target** (held-out part, pooled): precision >= "
        f"{t['precision']:g}, recall >= {t['recall']:g}, quality kept >= {t['quality']:g}. "
        f"`{t['spec']}`: {_numbers(t, 'held_out')}.{fresh}{_known_noise(summary)} "
        f"Re-applying the selection rule ({sel['rule']}) to this run's tuning part picks "
        f"`{sel['selected_on_tuning']}`.")


def _numbers(t: dict, part: str) -> str:
    m, met, short = target_on(t, part)
    verdict = "met" if met else f"not met ({shortfall_text(short)})"
    return (f"precision {num(m['precision'], 3)}, recall {num(m['recall'], 3)}, quality kept "
            f"{num(m['quality'], 3)}, harmful stops {num(m.get('harmful_rate'), 3)}, compute "
            f"saved {num(m.get('saved'), 3)}: **{verdict}**")


def _known_noise(summary: dict) -> str:
    k = summary.get("target_known_noise")
    if k is None:
        return ""
    fresh = f"; fresh part: {_numbers(k, 'fresh')}" if "fresh" in k else ""
    return (f" Given the eval's noise sigma (`{k['spec']}`, where `{{sigma}}` is each cell's "
            f"sigma): held-out {_numbers(k, 'held_out')}{fresh}.")


def _measured(summary: dict) -> list[Block]:
    from evalstop.detbench.report import MEASURED_TEXT, measured_table

    table = measured_table(summary)
    if table is None:
        return []
    header, rows, caption = table
    return [Heading(3, "The noise measured from finished runs"), Para(MEASURED_TEXT),
            Table(header, tuple(rows), caption=caption)]


def _images(summary: dict, out_dir: Path, rel_dir: str) -> list[Block]:
    """Pooled PR plot per part, then one per family; a plot that is missing is said so."""
    blocks: list[Block] = []
    missing = []
    healthy = {f["name"] for f in summary["config"]["families"] if f["hacking_rate"] == 0}
    for part, p in summary["parts"].items():
        where = PART_SHORT[part]
        for stem, what in ((f"pr_{part}", f"Precision-recall, pooled: {where}"),
                           *((f"pr_{f}", (f"FPR per knob value (no hacking runs): `{f}`, {where}"
                                          if f in healthy else
                                          f"Precision-recall: `{f}`, {where}"))
                             for f in p["families"])):
            rel = f"{rel_dir}/{stem}.png"
            if (out_dir / rel).is_file():
                blocks.append(Image(rel, what))
            else:
                missing.append(f"`{rel}`")
    for part in summary["parts"]:
        rel = f"{rel_dir}/harm_{part}.png"
        if (out_dir / rel).is_file():
            blocks.append(Image(rel, f"Harmful stops against compute saved, pooled: "
                                     f"{PART_SHORT[part]} (the default starred)"))
        else:
            missing.append(f"`{rel}`")
    if missing:
        blocks.append(Para(f"Plots not found: {', '.join(missing)}."))
    return blocks


def render(summary: dict, out_dir: Path, *, quick: bool = False, rel_dir: str = DIR,
           seconds: float | None = None) -> list[Block]:
    c = summary["config"]
    when = f" in {seconds:.1f} s" if seconds is not None else ""
    quick_note = (" This is the **--quick** benchmark (few runs per cell, three sigmas, each "
                  "knob at its ends and main value): a smoke test.") if quick else ""
    blocks: list[Block] = [
        Heading(2, "Detector benchmark: the stop rules on labelled curves (`bench-detectors`)"),
        Para(f"Every stop rule on labelled synthetic eval curves: {c['evals_per_run']} evals per "
             f"run, {c['runs_per_cell']} runs per cell, one cell per family x noise sigma "
             f"({', '.join(f'{s:g}' for s in c['sigmas'])}, in units of the run's peak gain) x "
             f"noise kind ({', '.join(c['noises'])}), seed {c['seed']}; run{when}. A run is "
             f"hacking when its true quality peaks inside the run and falls by at least "
             f"{100 * c['hacking_min_drop']:g}% of the peak gain by the end. Quality kept: true "
             f"gain of the kept checkpoint over the run's peak gain; delay: evals from the true "
             f"peak to the stop, over caught hacking runs. {bench_report.HARM_TEXT} Full tables, CSV and "
             f"JSON in `{rel_dir}/`." + quick_note),
        Para("**The held-out part was not tuned on.** The default's design and every parameter "
             "were chosen on the tuning part's families only; the held-out families have other "
             "shapes and their own random streams, and were run once the default was fixed. "
             "The workload part runs the simulator's own curves, was added after the default "
             "was fixed, and is report-only."),
        Table(("Family", "Part", "Kind", "Hacking share", "Description"),
              tuple((f"`{f['name']}`", PART_SHORT[f["part"]], f["kind"],
                     f"{100 * f['hacking_rate']:.0f}%", f["description"])
                    for f in c["families"]),
              caption="Curve families"),
    ]
    for part in summary["parts"]:
        blocks += [Heading(3, PART_TITLE[part]), pooled_table(summary, part)]
    blocks.append(_target(summary))
    blocks += _measured(summary)
    snr = snr_table(summary)
    if snr is not None:
        blocks += [Heading(3, "Which misses were there to see"), snr]
    blocks += [Heading(3, "Per family: the default vs the paper's rule"),
               family_table(summary),
               Heading(3, "Precision-recall and harm-vs-saved curves"),
               Para("One precision-recall plot per part (pooled) and per family. Each curve "
                    "sweeps one detector's main knob (values annotated); the dashed lines mark "
                    "the target precision and recall. A family without hacking runs has no "
                    "precision-recall curve; its plot shows each sweep's FPR instead. Then one "
                    "plot per part of harmful stops (% of non-hacking runs) against compute "
                    "saved (% of eval intervals not run), the same sweeps: down and to the "
                    "right is better."),
               *_images(summary, out_dir, rel_dir)]
    return blocks
