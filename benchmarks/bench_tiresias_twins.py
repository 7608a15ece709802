"""Tiresias' two compiled loops, side by side: the planned loop's twin (``sim.planned_jit``,
what ``simulate`` runs) against the checkpoint loop's twin (``sim.priority_jit``, what it
ran before, every eval an event).

For each size (the Philly trace repeated k times at the same arrival times on k x 512
GPUs) and rule, the two take turns, ``--repeat`` rounds, each keeping its best CPU time
of the whole ``simulate`` call; the two results must agree field by field. Twins on at
any size (``EVALSTOP_JIT=1``), loaded before the first timed round.

    python benchmarks/bench_tiresias_twins.py [--sizes 1,8] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["EVALSTOP_JIT"] = "1"

from bench_sim import repeated  # noqa: E402

from evalstop.schedulers import build  # noqa: E402
from evalstop.sim import planned  # noqa: E402
from evalstop.sim.engine import simulate  # noqa: E402
from evalstop.workload import load_philly, trace_workload  # noqa: E402

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "gpu_s", "n_preemptions")
LOOPS = {"planned loop's twin": True, "checkpoint loop's twin": False}


def timed(w, n_gpus, rule, planned_loop):
    planned.ENABLED = planned_loop
    try:
        t0 = time.process_time()
        res = simulate(w, n_gpus, build("tiresias", rule), record_timeline=False)
        return time.process_time() - t0, res
    finally:
        planned.ENABLED = True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,8", help="Philly repeats (default 1,8)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, best kept (default 3)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args()
    base, rows = load_philly(), []
    for k in (int(s) for s in args.sizes.split(",")):
        w = trace_workload(repeated(base, k), np.random.default_rng(0))
        print(f"## {k}x Philly: {w.n_jobs:,} jobs on {512 * k} GPUs "
              f"(load average {os.getloadavg()[0]:.1f})", flush=True)
        for rule in ("evalstop:k=2", "default"):
            for on in LOOPS.values():
                timed(w, 512 * k, rule, on)  # loads the twin
            best, out = {}, {}
            for _ in range(args.repeat):
                for name, on in LOOPS.items():
                    secs, out[name] = timed(w, 512 * k, rule, on)
                    best[name] = min(best.get(name, secs), secs)
            a, b = out.values()
            for f in FIELDS:
                if not np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True):
                    raise SystemExit(f"{k}x {rule}: the two twins differ in {f}")
            ratio = best["planned loop's twin"] / best["checkpoint loop's twin"]
            print(f"Tiresias+{rule:13s} " + "  ".join(f"{n} {s:.3f} s" for n, s in best.items())
                  + f"  planned / checkpoint {ratio:.2f}x  (same result)", flush=True)
            rows.append({"size": k, "rule": rule, "planned_s": round(best["planned loop's twin"], 4),
                         "checkpoint_s": round(best["checkpoint loop's twin"], 4),
                         "ratio": round(ratio, 3)})
    if args.json:
        Path(args.json).write_text(json.dumps({"repeat": args.repeat, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
