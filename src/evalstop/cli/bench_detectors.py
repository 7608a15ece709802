"""``evalstop bench-detectors --out DIR``: compare stop rules on labelled eval curves."""

from __future__ import annotations

import argparse
import sys

from evalstop.fileio import prepare_out_dir
from evalstop.ray_engine import add_ray_option, check_ray_option, engine_for

MAX_RUNS = 10_000


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "bench-detectors",
        help="benchmark stop rules on labelled synthetic eval curves (precision, recall, ...)",
        description=(
            "Run every stop rule over labelled eval curves from several families (a tuning "
            "part, two held-out parts and the simulator's own curves), at noise levels "
            "0.01-0.12, and write detectors.json, detectors.csv, detectors.md (pooled, per "
            "family, per sigma, recall by decline SNR) and one precision-recall plot per "
            "family into --out."
        ),
    )
    p.add_argument("--out", required=True, help="output folder (created if missing)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--quick", action="store_true",
                   help="a few runs per cell and thinned sweeps (seconds; for smoke tests)")
    p.add_argument("--runs", type=int, default=None,
                   help="runs per cell (family x sigma x noise kind); default 50, quick 4")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (elsewhere)")
    add_ray_option(p)  # one Ray task per cell
    return p


def run(args) -> int:
    from evalstop.detbench import run_detector_benchmark

    if args.runs is not None and args.runs < 1:
        raise ValueError(f"--runs must be >= 1, got {args.runs}")
    # Per-cell arrays are sized by --runs: 999999999999 failed with a MemoryError traceback.
    if args.runs is not None and args.runs > MAX_RUNS:
        raise ValueError(f"--runs must be <= {MAX_RUNS}, got {args.runs}")
    if args.seed < 0:  # numpy's own message ("expected non-negative integer") names no option
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    check_ray_option(args)
    # Made now: '' would write into the current folder, a file in its place would fail late.
    prepare_out_dir(args.out)
    with engine_for(args) as ray_engine:
        summary = run_detector_benchmark(args.out, seed=args.seed, quick=args.quick,
                                         runs=args.runs, progress=not args.no_progress)
    t = summary["target"]
    h = t["held_out"]

    def f(x):
        return "-" if x is None else f"{x:.3f}"

    out = sys.stdout
    out.write(f"default {t['spec']} on the held-out part: precision {f(h['precision'])}, "
              f"recall {f(h['recall'])}, FPR {f(h['fpr'])}, quality kept {f(h['quality'])}, "
              f"harmful stops {f(h.get('harmful_rate'))}, compute saved {f(h.get('saved'))} "
              f"(target {'met' if t['met'] else 'missed'})\n")
    for part in summary["parts"]:
        out.write(f"{part}:\n")
        for d in summary["detectors"]:
            m = summary["parts"][part]["pooled"][d["main_spec"]]
            out.write(f"  {d['main_spec']:36s} P {f(m['precision'])}  R {f(m['recall'])}  "
                      f"FPR {f(m['fpr'])}  harm {f(m.get('harmful_rate'))}  "
                      f"saved {f(m.get('saved'))}  Q {f(m['quality'])}\n")
    if ray_engine is not None:
        out.write(ray_engine.summary() + "\n")
    out.write(f"wrote {args.out}/detectors.md, .json, .csv, pr_*.png and harm_*.png\n")
    return 0
