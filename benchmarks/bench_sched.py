"""Preemptive schedulers' simulator time against the bare event loop, on k x Philly.

For each size (the Philly trace repeated k times at the same arrival times on k x 512
GPUs, as in bench_sim.py) it prints the CPU time of the whole ``simulate`` call, best of
``--repeat``, relative to bench_sim.py's bare strict-FIFO heap loop timed in the same
process, then the time per job at each size relative to the first. Target for
SRTF-Est+evalstop:k=2: <= 5x bare, time per job at 8x within 1.2x of 1x. ``--check``
also runs SRTF-Est's configurations through the checkpoint loop at the first size
(``planned.ENABLED = False``: an event per eval) and asserts every start, finish, stop,
kept checkpoint, preemption and the GPU timeline are the same.

    python benchmarks/bench_sched.py [--sizes 1,2,4,8] [--repeat 3] [--check]
        [--configs srtf-est+evalstop:k=2,srtf-est,tiresias+evalstop:k=2]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from bench_sim import CLOCK, bare_fifo, best_of, repeated

from evalstop.schedulers import build
from evalstop.sim import planned
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "n_preemptions", "timeline_t", "timeline_used")


def parse_config(text):
    sched, _, det = text.partition("+")
    return sched, (det or None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,2,4,8", help="Philly repeats (default 1,2,4,8)")
    ap.add_argument("--gpus", type=int, default=512, help="GPUs per copy of the trace")
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="srtf-est+evalstop:k=2,srtf-est",
                    help="comma-separated scheduler[+detector] (default: SRTF-Est with "
                         "and without k=2)")
    ap.add_argument("--check", action="store_true",
                    help="compare SRTF-Est with the checkpoint loop at the first size")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
        configs = [parse_config(c) for c in args.configs.split(",")]
        for s, d in configs:
            build(s, d)
    except ValueError as e:
        sys.exit(f"bench_sched: {e}")
    per_job = {}
    for k in sizes:
        w = trace_workload(repeated(load_philly(), k), np.random.default_rng(args.seed))
        n, n_gpus = w.n_jobs, args.gpus * k
        t_bare, _ = best_of(args.repeat, lambda: bare_fifo(w.arrival_s, w.duration_s, w.gpus,
                                                           n_gpus))
        print(f"\n## {k}x Philly: {n:,} jobs on {n_gpus} GPUs (load average "
              f"{os.getloadavg()[0]:.1f}); bare loop {t_bare:.2f} s")
        per_job[k] = {"bare": t_bare / n}
        for sched, det in configs:
            secs, res = best_of(args.repeat, lambda s=sched, d=det: simulate(
                w, n_gpus, build(s, d), record_timeline=False))
            per_job[k][sched, det] = secs / n
            name = sched + ("" if det is None else f"+{det}")
            print(f"{name:<28} {secs:7.2f} s  {secs / t_bare:5.1f}x bare  "
                  f"{int(res.n_preemptions.sum()):,} preemptions, {int(res.stopped.sum()):,} "
                  f"stopped")
            if args.check and k == sizes[0] and sched == "srtf-est":
                planned.ENABLED = False
                t0 = CLOCK()
                slow = simulate(w, n_gpus, build(sched, det))
                t_slow = CLOCK() - t0
                planned.ENABLED = True
                fast = simulate(w, n_gpus, build(sched, det))
                for f in FIELDS:
                    assert np.array_equal(getattr(fast, f), getattr(slow, f),
                                          equal_nan=True), f
                print(f"{'':<28} identical to the checkpoint loop ({t_slow:.2f} s there, "
                      f"{t_slow / t_bare:.1f}x bare)")
    k0 = sizes[0]
    print(f"\n## time per job relative to {k0}x")
    print(f"{'':<28} " + "  ".join(f"{k:>5}x" for k in sizes))
    for c in ["bare", *configs]:
        name = "bare loop" if c == "bare" else c[0] + ("" if c[1] is None else f"+{c[1]}")
        print(f"{name:<28} " + "  ".join(f"{per_job[k][c] / per_job[k0][c]:6.2f}"
                                           for k in sizes))


if __name__ == "__main__":
    main()
