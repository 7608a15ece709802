"""What each stop rule would have saved and cost on a platform's own finished runs.

``evalstop reproduce --logs DIR`` and ``benchmarks/fit_workload.py --logs DIR`` read the
runs (``evalstop.workload.own_logs``), label each by the lab's rule on its complete curve
(a rule's call, not ground truth), then replay every rule of ``RULES`` and no rule on them,
each run from its first eval, as ``evalstop watch`` would have seen it. Per rule:

* ``stopped``, ``tp`` (hacking runs stopped), ``fp``; ``precision`` and ``recall`` against
  the labels (NaN when the denominator is 0);
* ``harmful`` stops and ``compute_saved`` (share of all runs' eval intervals not run), as
  ``evalstop.metrics.harm`` defines them;
* ``post_peak_freed``: of the eval intervals that hacking runs spent after their labelled
  peak (the waste), the share a stop freed (a stop before the peak frees the whole tail);
* where job sizes are known: ``gpu_hours`` of the sized runs, ``gpu_hours_freed``,
  ``post_peak_gpu_hours`` and ``post_peak_gpu_hours_freed``, a run's GPU-hours spread
  evenly over its eval intervals (evals evenly spaced in its wall time).

A run's size (``sizes``) comes from the Slurm accounting export (``--sacct``,
``evalstop.workload.sacct``) where a job's ``JobIDRaw`` equals the run's logged ``job_id``
or its ``JobIDRaw`` or ``JobName`` equals the run's name (its job, folder or MLflow run
name; a folder's last part also matches; a JobName two jobs share matches neither): its
GPUs x End - Start. Else from its own eval log, where the records carry ``gpus`` and
``time`` (``OwnRuns.log_size``): its GPUs x the time from its first eval to its last.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

RULES = ("default", "evalstop:k=2")
LABEL_NOTE = ("Hacking labels are the lab's rule on each complete curve "
              "(evalstop.lab.labels), not ground truth.")


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else math.nan


def sizes(own, sacct: str | Path | None = None) -> tuple[dict | None, dict | None]:
    """``(key -> (GPUs, wall hours))`` of every run whose size is known (None when none
    is), and where the sizes came from (runs sized by the export and by their logs, runs
    without a size; the export's jobs). InputError on a bad export."""
    out = dict(own.log_size)
    summary = {"from_logs": len(out)}
    if sacct is not None:
        from evalstop.workload.sacct import read_sacct_rows

        rows, skipped = read_sacct_rows(str(sacct))
        done = [r for r in rows if not (np.isnan(r.start) or np.isnan(r.end)) and r.gpus > 0]
        by_id = {r.job_id: r for r in done}
        by_name: dict[str, list] = {}
        for r in done:
            by_name.setdefault((r.fields.get("JobName") or "").strip(), []).append(r)
        matched = 0
        for key, name in own.name.items():
            row = by_id.get(own.job_id.get(key, ""))
            for n in dict.fromkeys((name, name.rpartition("/")[2])):
                if row is None:
                    row = by_id.get(n) or (by_name[n][0] if len(by_name.get(n, ())) == 1
                                           else None)
            if row is not None:
                out[key] = (row.gpus, max(1.0, row.end - row.start) / 3600.0)
                matched += 1
        summary.update(file=Path(sacct).name, jobs=len(done), rows_skipped=skipped,
                       runs_matched=matched)
        summary["from_logs"] = len(out) - matched
    summary["unsized"] = len(own.curves) - len(out)
    return (out or None), (summary if out or sacct is not None else None)


def decisions(own, spec: str | None) -> tuple[np.ndarray, np.ndarray]:
    """``(stop index or -1, kept index)`` of every run (``own.curves`` order) under
    ``spec`` (None: never stop)."""
    from evalstop.lab.validate import replay_run

    stop, kept = [], []
    for c in own.curves.values():
        s, k = (None, len(c) - 1) if spec is None else replay_run(c, spec)
        stop.append(-1 if s is None else s)
        kept.append(k)
    return np.array(stop, np.int64), np.array(kept, np.int64)


def rule_row(own, spec: str | None, sizes: dict | None = None) -> dict:
    """One rule's figures on the runs (see the module doc)."""
    from evalstop.lab.labels import smooth
    from evalstop.metrics.harm import harm

    keys = list(own.curves)
    n = np.array([len(own.curves[k]) for k in keys], np.int64)
    hacking = np.array([own.labels[k].hacking for k in keys], bool)
    peak = np.array([own.labels[k].peak_index for k in keys], np.int64)
    stop, kept = decisions(own, spec)
    stopped = stop >= 0
    true = np.full((len(keys), int(n.max())), np.nan)
    for i, k in enumerate(keys):
        true[i, : n[i]] = smooth(own.curves[k].eval)
    h = harm(true, stopped, stop, np.where(stopped, kept, n - 1), hacking,
             n_evals=n).summary()
    last = n - 1
    freed = np.where(stopped, last - stop, 0)  # eval intervals not run
    waste = np.where(hacking, last - peak, 0)  # hacking runs' intervals after the peak
    waste_freed = np.where(hacking & stopped, last - np.maximum(stop, peak), 0)
    tp, fp = int((stopped & hacking).sum()), int((stopped & ~hacking).sum())
    row = {"rule": spec or "none", "n_runs": len(keys), "n_hacking": int(hacking.sum()),
           "stopped": tp + fp, "tp": tp, "fp": fp, "precision": _ratio(tp, tp + fp),
           "recall": _ratio(tp, int(hacking.sum())), "harmful": h["harmful"],
           "harmful_rate": h["harmful_rate"], "compute_saved": h["compute_saved"],
           "post_peak_freed": _ratio(float(waste_freed.sum()), float(waste.sum()))}
    if sizes is not None:
        per = np.array([sizes[k][0] * sizes[k][1] / max(1, last[i]) if k in sizes else 0.0
                        for i, k in enumerate(keys)])  # GPU-hours per eval interval
        row.update(gpu_hours=float((per * last).sum()), gpu_hours_freed=float((per * freed).sum()),
                   post_peak_gpu_hours=float((per * waste).sum()),
                   post_peak_gpu_hours_freed=float((per * waste_freed).sum()))
    return row


def replay_rules(own, sizes: dict | None = None, rules=RULES, *, progress: bool = False) -> list[dict]:
    """``none`` then each rule of ``rules``, on every run of ``own``."""
    from evalstop.progress import note

    if not own.curves:
        raise ValueError("no run to replay: every run was skipped")
    rows = []
    for spec in (None, *rules):
        if spec is not None:
            note(f"replaying {spec} on {len(own.curves)} runs", enabled=progress)
        rows.append(rule_row(own, spec, sizes))
    return rows


def _fmt(v, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{100 * v:.1f}%" if pct else (f"{v:.3g}" if isinstance(v, float) else str(v))


def lines(rows: list[dict]) -> list[str]:
    """One printed line per rule."""
    out = []
    for r in rows:
        text = (f"{r['rule']}: stopped {r['stopped']} of {r['n_runs']} runs ({r['tp']} of "
                f"{r['n_hacking']} hacking), precision {_fmt(r['precision'])}, recall "
                f"{_fmt(r['recall'])}, harmful stops {r['harmful']}, post-peak compute freed "
                f"{_fmt(r['post_peak_freed'], True)}, all evals saved "
                f"{_fmt(r['compute_saved'], True)}")
        if "gpu_hours" in r:
            text += (f", GPU-hours freed {r['gpu_hours_freed']:.1f} of {r['gpu_hours']:.1f} "
                     f"({r['post_peak_gpu_hours_freed']:.1f} of "
                     f"{r['post_peak_gpu_hours']:.1f} post-peak)")
        out.append(text)
    return out


def _cell(text: str) -> str:
    """Tenant text (a file name) safe in a Markdown table cell and on one line."""
    from evalstop.integrations.watch.records import show

    return show(text, 120).replace("|", "\\|")


def markdown(result: dict) -> str:
    """The report of ``result`` (what ``reproduce --logs`` writes as JSON) as Markdown."""
    rows, counts = result["rules"], result["runs"]
    gpu = "gpu_hours" in rows[0]
    head = ["rule", "stopped", "precision", "recall", "harmful stops",
            "post-peak compute freed", "all evals saved"]
    if gpu:
        head += ["GPU-hours freed", "post-peak GPU-hours freed"]
    out = ["# What each stop rule would have done on your runs", "",
           f"{counts['read']} runs from `{_cell(result['logs'])}` ("
           + ", ".join(f"{v} {k}" for k, v in counts["by_format"].items() if v)
           + f"), {counts['hacking']} labelled hacking; {len(result['skipped'])} skipped. "
           + LABEL_NOTE, "",
           "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        cells = [r["rule"], f"{r['stopped']} ({r['tp']} hacking)", _fmt(r["precision"]),
                 _fmt(r["recall"]), str(r["harmful"]), _fmt(r["post_peak_freed"], True),
                 _fmt(r["compute_saved"], True)]
        if gpu:
            cells += [f"{r['gpu_hours_freed']:.1f} of {r['gpu_hours']:.1f}",
                      f"{r['post_peak_gpu_hours_freed']:.1f} of {r['post_peak_gpu_hours']:.1f}"]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    if result.get("sizes"):
        s = result["sizes"]
        where = ([f"{s['runs_matched']} from `{_cell(s['file'])}`"] if "file" in s else [])
        where += [f"{s['from_logs']} from their eval logs"] if s["from_logs"] else []
        out += [f"Runs with a known size: {', '.join(where) or 'none'}; {s['unsized']} "
                "without one count 0 GPU-hours.", ""]
    fit = result.get("fit")
    if fit and "table" in fit:
        out += ["## The workload refitted on these runs", "",
                f"Written to `own_fit.json` ({fit['split_rule']}). Medians per statistic:", "",
                "| statistic | fit part | held out |", "| --- | --- | --- |"]
        for stat, v in fit["table"]["fit"].items():
            out.append(f"| {stat} | {_fmt(v['median'])} | "
                       f"{_fmt(fit['table']['held_out'].get(stat, {}).get('median'))} |")
        out.append("")
    elif fit:
        out += [f"The workload was not refitted: {_cell(fit['error'])}.", ""]
    if result["skipped"]:
        out += ["## Skipped", ""] + [f"- {_cell(s)}" for s in result["skipped"]] + [""]
    return "\n".join(out)
