"""Fit the ``fitted`` workload to measured runs, and show the fit on runs it never saw.

    python benchmarks/fit_workload.py [--logs DIR [--eval-set fresh|fixed] [--metric NAME]
        [--sacct FILE]]
        [--out src/evalstop/data/fitted_workload.json] [--table benchmarks/results/fit/table.json]
        [--runs 2000] [--seed 44]

Without ``--logs``: the real corpora the package ships (``evalstop.workload.fit``). With it:
every run under DIR (JSONL eval logs, TensorBoard event files, MLflow stores:
``evalstop.workload.own_logs``), labelled by the lab's rule, so a platform can refit on its
own runs (``--out`` then names where its fit goes; the preset reads the shipped file), and
``default`` and ``evalstop:k=2`` are replayed on the runs to print what each would have
stopped, saved and cost there (``evalstop.experiments.own_runs``; GPU-hours with
``--sacct``, a Slurm accounting export). ``evalstop reproduce --logs DIR`` prints the same
and writes it as a report. The runs are split by the stated hash rule; the fit reads one
part; the table prints, per statistic, the fit part's and the held-out part's real
medians, the fitted generator's (``--runs`` runs, seed ``--seed``) with the held-out band
it must lie in, and the paper preset's. Writes the fit's JSON and the table's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from evalstop.experiments import own_runs
from evalstop.fileio import check_out_file, write_text
from evalstop.workload import fit as fitmod
from evalstop.workload.fit_check import fitted_table, paper_table, rows

DEFAULT_OUT = Path("src/evalstop/data/fitted_workload.json")


def _fmt(v) -> str:
    return "-" if v is None else f"{v:.3g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=Path, default=None)
    ap.add_argument("--eval-set", choices=("fresh", "fixed"), default="fresh",
                    help="how the logs' evals were drawn: fresh samples or one fixed set")
    ap.add_argument("--metric", default="eval",
                    help="the TensorBoard tag, MLflow metric or JSONL field of the eval score")
    ap.add_argument("--sacct", type=Path, default=None,
                    help="a Slurm accounting export (sacct --parsable2) for job sizes")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--table", type=Path, default=Path("benchmarks/results/fit/table.json"))
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=44)
    args = ap.parse_args(argv)
    try:
        if args.runs < 10:
            raise ValueError(f"--runs must be >= 10, got {args.runs}")
        check_out_file(args.out)
        args.table.parent.mkdir(parents=True, exist_ok=True)
        check_out_file(args.table, "--table")
        skipped = []
        if args.sacct is not None and args.logs is None:
            raise ValueError("--sacct needs --logs")
        if args.logs is None:
            runs, sources = fitmod.shipped_runs(), "the shipped lab corpora"
        else:
            own = fitmod.log_corpus(args.logs, metric=args.metric, progress=True)
            runs, skipped = fitmod.log_runs(args.logs, eval_set=args.eval_set, own=own)
            sources = f"eval logs under {args.logs.name} ({args.eval_set} evals)"
            sizes = own_runs.sizes(own, args.sacct)[0]
            saved = own_runs.lines(own_runs.replay_rules(own, sizes, progress=True))
        command = "python benchmarks/fit_workload.py" + (
            f" --logs {args.logs.name} --eval-set {args.eval_set} --metric {args.metric}"
            if args.logs else "")
        fit = fitmod.fit(runs, command=command, sources=sources)
    except (ValueError, OSError) as exc:
        print(f"fit_workload: {exc}", file=sys.stderr)
        return 2
    for s in skipped:
        print(f"skipped {s}", file=sys.stderr)
    rng = np.random.default_rng(args.seed)
    generated = fitted_table(rng, args.runs, fit)
    paper = paper_table(rng, args.runs)
    held = fit["table"]["held_out"]
    out_rows = rows(held, generated)
    for r in out_rows:
        r["fit_median"] = fit["table"]["fit"][r["statistic"]]["median"]
        r["paper_median"] = paper[r["statistic"]]["median"]
    write_text(args.out, json.dumps(fit, indent=1) + "\n")
    write_text(args.table, json.dumps({"seed": args.seed, "runs": args.runs,
                                       "rows": out_rows}, indent=1) + "\n")
    n_fit = sum(len(v) for v in fit["runs"].values())
    print(f"{len(runs)} runs from {sources}: {n_fit} fitted, {len(runs) - n_fit} held out "
          f"({fit['split_rule']})")
    print(f"{'statistic':<28} {'fit':>8} {'held-out':>9} {'band':>17} {'fitted':>8} "
          f"{'paper':>8}  in band")
    for r in out_rows:
        lo, hi = r["band"]
        print(f"{r['statistic']:<28} {_fmt(r['fit_median']):>8} {_fmt(r['real_median']):>9} "
              f"{'[' + _fmt(lo) + ', ' + _fmt(hi) + ']':>17} {_fmt(r['generated_median']):>8} "
              f"{_fmt(r['paper_median']):>8}  {r['in_band']}")
    if args.logs is not None:
        print(f"\nwhat each rule would have done on these runs. {own_runs.LABEL_NOTE}")
        for row in saved:
            print("  " + row)
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
