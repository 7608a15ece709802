"""Score detector specs on the detector benchmark's *tuning part only*.

    python benchmarks/tune_detectors.py SPEC [SPEC ...] [--seeds 0,1,2] [--runs 50]

Prints pooled precision, recall, FPR, delay and quality kept per spec. The held-out
families are never built here: choose designs and parameters with this script, then run
``evalstop bench-detectors`` once for the held-out numbers.
"""

from __future__ import annotations

import argparse
import time

from evalstop.detbench import runs as runs_mod
from evalstop.detbench.scoring import Tally, run_detector, tally


def tuning_sets(seeds, runs):
    return [rs for seed in seeds for rs in runs_mod.build(seed, runs, held_out=False)]


def score(spec: str, sets) -> dict:
    total = Tally()
    for rs in sets:
        assert not rs.family.held_out
        total += tally(rs, run_detector(spec, rs))
    return total.metrics()


def _fmt(v, nd=3):
    return "  -  " if v is None else f"{v:.{nd}f}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+")
    ap.add_argument("--seeds", default="0", help="comma-separated benchmark seeds")
    ap.add_argument("--runs", type=int, default=50, help="runs per cell (the benchmark: 50)")
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    sets = tuning_sets(seeds, args.runs)
    print(f"tuning part, seeds {seeds}, {sum(rs.runs for rs in sets)} runs")
    print(f"{'spec':48s} prec   recall FPR    delay quality")
    for spec in args.specs:
        t0 = time.perf_counter()
        m = score(spec, sets)
        print(f"{spec:48s} {_fmt(m['precision'])}  {_fmt(m['recall'])}  {_fmt(m['fpr'])}  "
              f"{_fmt(m['delay'], 1):>5s} {_fmt(m['quality'])}  ({time.perf_counter() - t0:.1f}s)",
              flush=True)


if __name__ == "__main__":
    main()
