"""Write the benchmark's summary as JSON, CSV, a Markdown section and PNG plots."""

from __future__ import annotations

import csv
import json
import math
import time
from pathlib import Path

from evalstop.detbench import detectability, plots
from evalstop.detbench.bench import PARTS, TARGET, BenchConfig, shortfall_text, target_on
from evalstop.fileio import atomic_write, write_text

METRICS = ("runs", "hacking", "precision", "recall", "fpr", "delay", "early", "quality",
           "quality_hacking", "harmful", "harmful_rate", "regret_healthy", "regret_hacking",
           "saved", "tenant_harmful", "tenant_harmful_rate")
PART_TITLE = {"tuning": "tuning part", "held_out": "held-out part",
              "fresh": "fresh held-out part (written blind)",
              "workload": "workload part (report-only)"}


def _round(obj):
    if isinstance(obj, float):
        return None if math.isnan(obj) else round(obj, 6)
    if isinstance(obj, dict):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v) for v in obj]
    return obj


def spec_index(cfg: BenchConfig) -> dict[str, tuple[str, str, float | None]]:
    """spec -> (detector label, knob, knob value)."""
    out = {c.spec(v): (c.label, c.knob, v) for c in cfg.lineup for v in c.values}
    for spec in cfg.specs():
        out.setdefault(spec, ("default", "", None))
    return out


def pr_curves(cfg: BenchConfig, rows: dict[str, dict]) -> dict[str, list[dict]]:
    """Per candidate, its sweep in knob order: the points of its precision-recall curve."""
    return {c.label: [{"value": v, "spec": c.spec(v), **{k: rows[c.spec(v)][k] for k in
                                                         ("precision", "recall", "fpr",
                                                          "quality", "harmful_rate",
                                                          "regret_healthy", "saved")}}
                      for v in c.values] for c in cfg.lineup}


def write_all(out: Path, cfg: BenchConfig, summary: dict, start: float) -> None:
    """``start``: ``time.perf_counter()`` when the benchmark began (for the run time)."""
    out.mkdir(parents=True, exist_ok=True)
    summary["pr_curves"] = {
        part: {"pooled": pr_curves(cfg, summary["parts"][part]["pooled"]),
               **{f: pr_curves(cfg, rows)
                  for f, rows in summary["parts"][part]["by_family"].items()}}
        for part in PARTS
    }
    rounded = _round(summary)
    summary.clear()
    summary.update(rounded)
    # Each file atomically: a full disk used to leave detectors.json cut in half.
    write_text(out / "detectors.json", json.dumps(summary, indent=1) + "\n")
    _write_csv(out / "detectors.csv", cfg, summary)
    files = plots.write_pr_plots(out, cfg, summary) + plots.write_harm_plots(out, cfg, summary)
    elapsed = time.perf_counter() - start
    write_text(out / "detectors.md", markdown(cfg, summary, files, elapsed))
    write_text(out / "timing.json", json.dumps({"seconds": round(elapsed, 2)}) + "\n")


def _write_csv(path: Path, cfg: BenchConfig, summary: dict) -> None:
    index = spec_index(cfg)
    with atomic_write(path, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("part", "scope", "group", "detector", "knob", "value", "spec") + METRICS)
        for part in PARTS:
            p = summary["parts"][part]
            scopes = [("pooled", "all", p["pooled"])]
            scopes += [("family", f, rows) for f, rows in p["by_family"].items()]
            scopes += [("sigma", s, rows) for s, rows in p["by_sigma"].items()]
            scopes += [("noise", n, rows) for n, rows in p["by_noise"].items()]
            for scope, group, rows in scopes:
                for spec, m in rows.items():
                    label, knob, value = index[spec]
                    w.writerow((part, scope, group, label, knob, "" if value is None else value,
                                spec) + tuple("" if m[k] is None else m[k] for k in METRICS))


HARM_TEXT = (
    "Harmful stops: share of the non-hacking runs that were stopped and whose kept checkpoint "
    "is more than 2% of the run's gain (first eval to true peak) below what running to the "
    "end delivers (`evalstop.metrics.harm`); regret, healthy: that loss as a share of the "
    "gain, averaged over non-hacking runs (0 for a run not stopped); compute saved: share of "
    "all eval intervals not run. A healthy run stopped in a dip and kept at a checkpoint as "
    "good as its end is a false positive but no harm: read harm and compute saved for what a "
    "stop costs the tenant and gives the platform, precision and recall for the label. "
    "Harmful stops, tenant view: the same judged from the observed evals alone, as on a real "
    "run where the true quality is unknown (`evalstop.metrics.tenant_harm`): a non-hacking run "
    "stopped whose delivered checkpoint's smoothed eval level (mean of the evals within 2.5% "
    "of the run's length) is more than 5% of its gain below the mean of its last tenth.")


def _fmt(x, digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _table(rows: list[tuple[str, str, dict]], first: str = "detector") -> list[str]:
    head = (f"| {first} | spec | precision | recall | FPR | harmful stops | regret, healthy "
            "| compute saved | delay (evals) | quality kept | quality kept, hacking runs "
            "| harmful stops, tenant view |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, spec, m in rows:
        lines.append(f"| {name} | `{spec}` | {_fmt(m['precision'])} | {_fmt(m['recall'])} | "
                     f"{_fmt(m['fpr'])} | {_fmt(m['harmful_rate'])} | "
                     f"{_fmt(m['regret_healthy'])} | {_fmt(m['saved'])} | "
                     f"{_fmt(m['delay'], 1)} | {_fmt(m['quality'])} | "
                     f"{_fmt(m['quality_hacking'])} | {_fmt(m.get('tenant_harmful_rate'))} |")
    return lines


def _main_rows(cfg: BenchConfig, summary: dict, rows: dict) -> list[tuple[str, str, dict]]:
    default = summary["default_spec"]
    out = [(c.label, c.main_spec, rows[c.main_spec]) for c in cfg.lineup]
    if all(c.main_spec != default for c in cfg.lineup):
        out.append(("default", default, rows[default]))
    return [(f"**{n}** (default)" if s == default else n, s, m) for n, s, m in out]


def _verdict(who: str, t: dict, part: str) -> str:
    """One line: a rule's pooled numbers on a held-out part against the target."""
    m, met, short = target_on(t, part)
    return (f"- {PART_TITLE[part]}: {who}: precision {_fmt(m['precision'])}, recall "
            f"{_fmt(m['recall'])}, quality kept {_fmt(m['quality'])} (harmful stops "
            f"{_fmt(m['harmful_rate'])} of healthy runs, compute saved {_fmt(m['saved'])}): "
            "target "
            f"**{'met' if met else 'missed'}**" + ("" if met else f" ({shortfall_text(short)})")
            + ".")


def _detectability(summary: dict) -> list[str]:
    """Recall by decline SNR: which misses were there to see."""
    parts = [p for p in PARTS if "detectability" in summary["parts"][p]]
    if not parts:
        return []
    L = ["### Recall by how visible the decline is", "",
         ("Decline SNR of a hacking run: sqrt(sum over evals after the true peak of "
         "(peak gain - gain)^2) / sigma, the evidence an observer who knew the peak level "
         "would have by the end of the run (`evalstop.detbench.detectability`). Below about "
         "3 no online rule can separate the decline from noise at a precision worth "
         f"having; recall at SNR >= {detectability.VISIBLE:g} is the share of plainly "
         "visible declines a rule catches."), "",
         "| part | rule | " + " | ".join(f"SNR {b}" for b in detectability.LABELS)
         + f" | recall at SNR >= {detectability.VISIBLE:g} |",
         "|---|---|" + "---|" * (len(detectability.LABELS) + 1)]
    for part in parts:
        for spec, d in summary["parts"][part]["detectability"].items():
            cells = [f"{_fmt(b['recall'], 2)} ({_fmt(b['share'], 2)})" for b in d["buckets"]]
            L.append(f"| {PART_TITLE[part]} | `{spec}` | " + " | ".join(cells)
                     + f" | {_fmt(d['visible_recall'])} |")
    L += ["", "Each cell: recall in the bucket (share of the part's hacking runs in it).", ""]
    return L


MEASURED_TEXT = (
    "**With the noise measured from a few finished runs.** `cusum-known` needs the eval's "
    "noise sigma; a platform that does not know it can measure it from jobs that already "
    "ran with the same eval (`evalstop noise LOG.jsonl`). For every held-out cell, K runs of "
    "the tuning part's families (drawn at random, the cell's sigma and noise kind) stand for "
    "those jobs; their pooled noise estimate is given to the rule, which then runs on the "
    "cell. Each cell draws its own calibration runs. Nothing was tuned for this: K, the "
    "estimator and the rule's parameters were fixed before it ran.")


def measured_table(summary: dict) -> tuple[tuple[str, ...], list[tuple[str, ...]], str] | None:
    """(header, rows, caption) of the measured-noise comparison, or None when not run."""
    m = summary.get("measured_noise")
    if not m:
        return None

    def cell(x: dict) -> str:
        return (f"{_fmt(x['precision'])} / {_fmt(x['recall'])} / {_fmt(x['quality'])} / "
                f"{_fmt(x['harmful_rate'])} / {_fmt(x['saved'])}")

    rows = [(r["label"], f"`{r['spec']}`", cell(r["held_out"]), cell(r["fresh"]),
             cell(r["both"]), "**met**" if r["met_both"] else shortfall_text(r["shortfall_both"]))
            for r in m["rows"]]
    header = ("Rule", "Spec", "Held-out part", "Fresh held-out part", "Both, pooled",
              "Target, both pooled")
    caption = ("Precision / recall / quality kept / harmful-stop rate / compute saved on the "
               "held-out parts, against the target "
               f"(precision >= {TARGET['precision']}, recall >= {TARGET['recall']}, quality kept "
               f">= {TARGET['quality']}); `{{sigma}}` is the true, given or measured sigma")
    return header, rows, caption


def markdown(cfg: BenchConfig, summary: dict, files: list[str], elapsed: float) -> str:
    c = summary["config"]
    default = summary["default_spec"]
    t = summary["target"]
    fams = {part: [f for f in c["families"] if f["part"] == part] for part in PARTS}
    lo, hi = c["hacking_end_ratio"]
    L = ["## Detector benchmark", ""]
    L.append(
        f"Labelled eval curves, {c['evals_per_run']} evals per run (one every "
        f"{100 // c['evals_per_run']}% of progress, the last at 1.0), {c['runs_per_cell']} runs "
        f"per cell, one cell per family x noise sigma ({', '.join(map(str, c['sigmas']))}, "
        "in units of the run's peak gain over its start) x noise kind (Gaussian; Student-t "
        f"with {c['t_df']} degrees of freedom scaled to the same interquartile range), "
        f"seed {c['seed']}. A run is *hacking* when its true quality peaks inside the run and "
        f"has fallen by at least {int(100 * c['hacking_min_drop'])}% of the peak gain by the "
        f"end (hacking generators end at {lo:g}-{hi:g} of the peak; healthy ones never "
        "decline). Detectors see the noisy eval (and proxy, loss, progress), never the label "
        "or the true curve. Quality kept: true gain of the kept checkpoint / the run's peak "
        "gain (a stopped run keeps the detector's best checkpoint, a run not stopped keeps "
        "its last); delay: evals from the true peak to the stop, over stopped hacking runs. "
        + HARM_TEXT)
    L.append("")
    for part in PARTS:
        L.append(f"Families, {PART_TITLE[part]}:")
        L += [f"- `{f['name']}` ({f['kind']}, {int(100 * f['hacking_rate'])}% hacking): "
              f"{f['description']}" for f in fams[part]]
        L.append("")
    L.append("The held-out part has its own families and its own random streams. Rules, "
             "their design and every parameter were chosen on the tuning part only; the "
             "held-out part was run once the default was fixed, and is reported as it came. "
             "The workload part runs the simulator's own curves (`evalstop.workload`) with "
             "Gaussian noise whose sigma is on their absolute 0..1 quality scale, where runs "
             "rise by only 0.10-0.50 and RLHF hacking runs fall by 5-27% of their rise (the "
             "workload's own label): at the same sigma it is several times noisier relative "
             "to the signal than the other parts. It was added after the default was fixed "
             "and is report-only. The fresh held-out part was written after the first "
             "held-out part had been examined (per family and by decline SNR) and after "
             "`cusum-known` was fixed, before anything ran on it: a blind check of the "
             "first part's verdicts.")
    L.append("")
    for part in PARTS:
        p = summary["parts"][part]
        L += [f"### {PART_TITLE[part].capitalize()}, pooled over all sigmas and noise kinds",
              ""]
        L += _table(_main_rows(cfg, summary, p["pooled"]))
        L.append("")
    L += [(f"### Target (held-out, pooled): precision >= {TARGET['precision']}, recall >= "
           f"{TARGET['recall']}, quality kept >= {TARGET['quality']}"), ""]
    L += [_verdict(f"`{default}`", t, part)
          for part in ("held_out", "fresh") if part in t]
    k = summary.get("target_known_noise")
    if k is not None:
        L += [_verdict(f"With the eval's noise sigma given, `{k['spec']}`", k, part)
              for part in ("held_out", "fresh") if part in k]
    sel = summary["selection"]
    L.append(f"The selection rule ({sel['rule']}) picks `{sel['selected_on_tuning']}`.")
    L.append("")
    measured = measured_table(summary)
    if measured is not None:
        header, rows, caption = measured
        L += ["### The noise measured from finished runs", "", MEASURED_TEXT, "",
              "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        L += ["| " + " | ".join(r) + " |" for r in rows]
        L += ["", caption + ".", ""]
    for part in PARTS:
        p = summary["parts"][part]
        L += [f"### Per family, {PART_TITLE[part]}", ""]
        rows = []
        for fam, frows in p["by_family"].items():
            rows += [(f"{fam}: {n}", s, m) for n, s, m in _main_rows(cfg, summary, frows)]
        L += _table(rows, "family: detector")
        L.append("")
    L += _detectability(summary)
    paper = cfg.lineup[0].main_spec
    for part in PARTS:
        L += [f"### By noise sigma, {PART_TITLE[part]} (default vs the paper's rule)", ""]
        rows = []
        for s, srows in summary["parts"][part]["by_sigma"].items():
            rows += [(f"sigma {s}", default, srows[default]), (f"sigma {s}", paper, srows[paper])]
        L += _table(rows, "noise")
        L.append("")
    L += ["### Precision-recall and harm-vs-saved curves", "",
          "Each curve sweeps a detector's main knob (" + ", ".join(
              f"{d['label']}: {d['knob']}" for d in summary["detectors"]) + "); precision-"
          "recall: one plot per family and one per part, pooled; harmful stops against "
          "compute saved: one per part, pooled (`harm_PART.png`): " + ", ".join(
              f"`{f}`" for f in files) + ".", "",
          f"Benchmark run time: {elapsed:.1f} s.", ""]
    return "\n".join(L)
