"""Judge ``plong`` (``block-cusum``'s progress-aware start) ONCE on held-out material.

    python benchmarks/judge_progress.py [--plong L] [--seed 1] [--runs 30] [--seed21 0]
        [--out benchmarks/results/issue46] [--candidate SPEC --candidate-label L --name N]

Run after ``benchmarks/tune_progress.py`` chose ``plong`` on tuning material at seed 0
(``--plong`` defaults to its pick, read from ``progress_tune.json``; nothing here chooses
anything). Every rule is told each eval's progress, (j + 1) / the run's length, as a
platform that knows the run's length does. Rules: the default and the default with
``plong=L``, each with the noise stated and not stated (and a fleet prior on issue 21's
material); for the record (shown, not chosen on), the default at the tuning's other
values of ``plong``, noise stated, on the failure shapes. With ``--candidate``, that spec
(chosen on tuning material, e.g. by ``tune_wandering.py``) instead of ``plong``'s values.

Two parts, written as ``NAME.json`` and ``NAME.md``:

* ``progress_judge``: the held-out issue-46 failure shapes at ``--seed``
  (``judge_failshapes.py``'s material: long runs of 100-1,000 evals, short collapse and
  dead runs of 20-60 evals);
* ``progress_judge21``: issue 21's table at ``--seed21`` (``judge_long_default.py``'s
  held-out parts: long runs at 1x, 2x, 4x; 6-12-eval runs; the 20-eval families; the
  real-shaped synthetic runs; the lab corpora), with progress.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from evalstop.detbench import realshape
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.failshape import fail_cells
from evalstop.detbench.failshape_score import cell_outcome as fail_outcome
from evalstop.detbench.failshape_score import pool as fail_pool
from evalstop.detbench.longshape_score import cell_outcome as long_outcome
from evalstop.detbench.longshape_score import pool as long_pool
from evalstop.detectors import DEFAULT_SPEC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_default import lab_cell
from judge_failshapes import candidate_args, rule_row, target_rows
from judge_failshapes import targets_met as fail_targets
from judge_long_default import (
    cell_rows,
    dense_lab_cells,
    family_rows,
    held_out_long,
    small_gain_cells,
)
from judge_long_default import targets_met as targets21
from tune_progress import PLONGS


def gated(plong: int) -> str:
    return f"{DEFAULT_SPEC},plong={plong}"


def label(plong: int) -> str:
    return f"default, plong={plong}"


def fail_part(seed: int, runs: int, plong: int, candidate: tuple[str, str] | None = None
              ) -> dict:
    """``candidate`` (label, spec): judged beside the default instead of ``plong``'s
    values."""
    mats = {"long": fail_cells(seed, runs, held_out=True),
            "short": fail_cells(seed, runs, held_out=True, short=True)}
    assert all("held-out" in c.part for cells in mats.values() for c in cells)
    name2, spec2 = candidate or (label(plong), gated(plong))
    rules = [(name, spec, mode) for name, spec in (("default", DEFAULT_SPEC), (name2, spec2))
             for mode in ("stated", "own")]
    if candidate is None:
        rules += [(f"{label(v)} (shown)", gated(v), "stated") for v in PLONGS if v != plong]
    rows = []
    t0 = time.perf_counter()
    for name, spec, mode in rules:
        row = {"rule": name, "spec": spec, "noise": mode}
        for part, cells in mats.items():
            row[part] = fail_pool(cells, [fail_outcome(spec, c, mode, progress=True)
                                          for c in cells])
        rows.append(row)
        print(f"{time.perf_counter() - t0:6.0f}s failshapes: {name} ({mode})", flush=True)
    return {"seed": seed, "runs_per_cell": runs, "default": DEFAULT_SPEC,
            "plong": plong, "beside": name2, "progress": "each eval's (j + 1) / evals",
            "rows": rows,
            "targets": {m: fail_targets(rows, "default", m) for m in ("stated", "own")},
            "targets_plong": {m: fail_targets(rows, name2, m) for m in ("stated", "own")}}


def part21(seed: int, plong: int, runs=12, short_runs=50, family_runs=20,
           synthetic_runs=4, candidate: tuple[str, str] | None = None) -> dict:
    name2, spec2 = candidate or (label(plong), gated(plong))
    rules = [(name, spec, mode) for name, spec in (("default", DEFAULT_SPEC), (name2, spec2))
             for mode in ("stated", "fleet", "own")]
    t0 = time.perf_counter()
    parts: dict = {}
    long = held_out_long(seed, runs)
    rows = []
    for name, spec, mode in rules:
        outs = [long_outcome(spec, c, mode, progress=True) for c in long]
        row = {"rule": name, "spec": spec, "noise": mode, **long_pool(long, outs)}
        row["by_freq"] = {str(f): long_pool([c for c in long if c.freq == f],
                                            [o for c, o in zip(long, outs) if c.freq == f])
                          for f in sorted({c.freq for c in long})}
        rows.append(row)
        print(f"{time.perf_counter() - t0:6.0f}s issue 21 long: {name} ({mode})", flush=True)
    parts["long"] = {"runs": sum(c.runs for c in long), "rows": rows}
    short = realshape.short_cells(seed, short_runs, held_out=True)
    parts["short"] = {"runs": sum(c.runs for c in short), "rows": cell_rows(short, rules, progress=True)}
    for part, fresh in (("families", False), ("families (fresh)", True)):
        sets = runs_mod.build(seed, family_runs, held_out=True, fresh=fresh)
        # the benchmark's runner gives each eval its progress already
        parts[part] = {"runs": sum(rs.runs for rs in sets), "rows": family_rows(sets, rules)}
    syn = [c for c in realshape.synthetic(seed, synthetic_runs, held_out=True)
           if c.noise == "binomial"]
    parts["synthetic (pass rates)"] = {
        "runs": sum(c.runs for c in syn),
        "rows": cell_rows(syn, [r for r in rules if r[2] == "stated"], progress=True)}
    print(f"{time.perf_counter() - t0:6.0f}s issue 21 short, families, synthetic", flush=True)
    labs = [("lab (world 1)", [lab_cell("bigram")]),
            ("lab (held-out world 2)", [lab_cell("trigram")])]
    labs += [(name, [cell]) for name, cell in dense_lab_cells() + small_gain_cells()]
    for part, cells in labs:
        parts[part] = {"runs": sum(c.runs for c in cells),
                       "rows": cell_rows(cells, [r for r in rules if r[2] != "fleet"],
                                         tenant=True, progress=True)}
    print(f"{time.perf_counter() - t0:6.0f}s issue 21 labs", flush=True)
    result = {"default": DEFAULT_SPEC, "plong": plong, "beside": name2, "seed": seed,
              "runs_per_long_cell": runs, "progress": "each eval's (j + 1) / the run's length",
              "parts": parts}
    result["targets"] = targets21(result)
    result["targets_plong"] = targets21(result, name2)
    return result


def _f(v, nd=3):
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{nd}f}"


def _beside(r: dict, head: bool = True) -> str:
    """The rule judged beside the default: a column head, or (``head=False``) in text."""
    name = r.get("beside", label(r["plong"]))
    if name != label(r["plong"]):
        return name
    return "plong" if head else f"plong={r['plong']}"


def _target_head(r: dict, other: str) -> list[str]:
    """The head of a target table: the default and the rule beside it, noise stated and
    ``other``."""
    cols = [f"{rule}, {mode}" for rule in ("default", _beside(r)) for mode in ("stated", other)]
    return ["| target | " + " | ".join(cols) + " |", "| --- | --- | --- | --- | --- |"]


def fail_markdown(r: dict) -> str:
    lines = [f"Held-out failure shapes (seed {r['seed']}, {r['runs_per_cell']} runs per cell), "
             f"every rule told each eval's progress. Default: `{r['default']}`.", "",
             *_target_head(r, "own")]
    lines += target_rows(r, ("targets", "targets_plong"))
    lines += ["", "| rule | noise | rising: harmful (in 20 evals) | dips: harmful (in 20 evals) "
              "| collapses caught (long/short) | delay, evals (long/short) "
              "| dead stopped (long/short) | saved (collapse/dead, long) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [rule_row(row, dead_reason=False) for row in r["rows"]]
    return "\n".join(lines + [""])


def markdown21(r: dict) -> str:
    lines = [f"Issue 21's held-out table (seed {r['seed']}), every rule told each eval's "
             f"progress; `{_beside(r, head=False)}` beside the default.", "",
             *_target_head(r, "fleet")]
    for k in r["targets"]["stated"]:
        t = r["targets"]["stated"][k]
        cells = [f"{_f(r[key][m][k]['value'])} {'met' if r[key][m][k]['met'] else 'MISSED'}"
                 for key in ("targets", "targets_plong") for m in ("stated", "fleet")]
        lines.append(f"| {k} ({t['op']} {t['target']}) | " + " | ".join(cells) + " |")
    lines += ["", "| part | rule | noise | 1x: false stops / harmful / caught / delay "
              "| 2x false stops | 4x false stops |", "| --- | --- | --- | --- | --- | --- |"]
    for row in r["parts"]["long"]["rows"]:
        b = row["by_freq"]
        lines.append(f"| long | {row['rule']} | {row['noise']} | {_f(b['1']['false_stop'])} / "
                     f"{_f(b['1']['tenant_harmful'])} / {_f(b['1']['caught'])} / "
                     f"{_f(b['1']['delay_share_median'])} | {_f(b['2']['false_stop'])} "
                     f"| {_f(b['4']['false_stop'])} |")
    lines += ["", "| part | rule | noise | precision | recall | harmful | tenant harmful "
              "| recall within 3 | flat stopped |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for part, d in r["parts"].items():
        if part == "long":
            continue
        for row in d["rows"]:
            lines.append(
                f"| {part} | {row['rule']} | {row['noise']} | {_f(row.get('precision'))} "
                f"| {_f(row.get('recall'))} | {_f(row.get('harmful_rate'))} "
                f"| {_f(row.get('tenant_harmful_rate', row.get('tenant_harmful')))} "
                f"| {_f(row.get('recall_within3'))} | {_f(row.get('flat_stopped'))} |")
    return "\n".join(lines + [""])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plong", type=int, default=None,
                    help="the value to judge (default: the tuning's pick)")
    ap.add_argument("--seed", type=int, default=1, help="the failure shapes' held-out seed")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed21", type=int, default=0, help="issue 21's held-out seed")
    ap.add_argument("--out", default="benchmarks/results/issue46")
    ap.add_argument("--part", choices=("both", "failshapes", "issue21"), default="both")
    candidate_args(ap, "plong's values (writes NAME.json/.md and NAME21.json/.md)",
                   "progress_judge", "the output files' name (issue 21's part adds 21)")
    args = ap.parse_args(argv)
    cand = None if args.candidate is None else (args.candidate_label, args.candidate)
    out = Path(args.out)
    plong = args.plong
    if plong is None:
        plong = json.loads((out / "progress_tune.json").read_text())["pick_plong"]
    t0 = time.perf_counter()
    if args.part in ("both", "failshapes"):
        r = fail_part(args.seed, args.runs, plong, cand)
        r["wall_s"] = round(time.perf_counter() - t0, 1)
        (out / f"{args.name}.json").write_text(json.dumps(r, indent=1))
        (out / f"{args.name}.md").write_text(fail_markdown(r))
        print(fail_markdown(r), flush=True)
    if args.part in ("both", "issue21"):
        t1 = time.perf_counter()
        r = part21(args.seed21, plong, candidate=cand)
        r["wall_s"] = round(time.perf_counter() - t1, 1)
        (out / f"{args.name}21.json").write_text(json.dumps(r, indent=1))
        (out / f"{args.name}21.md").write_text(markdown21(r))
        print(markdown21(r), flush=True)


if __name__ == "__main__":
    main()
