"""Simulator throughput: jobs/s and eval events/s.

Scenarios: the paper's (RLHF-heavy, 64 GPUs, one seed) and the full Philly trace (82,247
jobs) under FIFO and SRTF-Est, each with the EvalStop overlay on. Targets on the project's
2-core machine: Philly FIFO+EvalStop <= 10 s, SRTF-Est+EvalStop <= 30 s.

    python benchmarks/bench_sim.py [--gpus 512] [--repeat 3] [--detector evalstop:k=2]

Prints the best of ``--repeat`` runs (the least disturbed by other work on the machine).
Workload generation is timed apart from simulation.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from evalstop.schedulers import build
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, synthetic_workload, trace_workload


def best_of(repeat, fn):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def report(label, workload, n_gpus, sched_name, detector, repeat):
    secs, res = best_of(repeat, lambda: simulate(workload, n_gpus, build(sched_name, detector),
                                                 record_timeline=False))
    n = workload.n_jobs
    print(f"{label:<34} {n:>7} jobs  {secs:7.2f} s  {n / secs:>9,.0f} jobs/s  "
          f"{res.n_eval_events / secs:>10,.0f} evals/s  stopped {int(res.stopped.sum()):>6}  "
          f"preemptions {int(res.n_preemptions.sum()):>6}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=512, help="GPUs for the Philly runs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--detector", default="evalstop:k=2")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"numpy {np.__version__}; best of {args.repeat}")

    w = synthetic_workload(np.random.default_rng(args.seed), n_jobs=300, n_gpus=64)
    report("paper scenario, SRTF-Est+EvalStop", w, 64, "srtf-est", args.detector, args.repeat)

    t_load, table = best_of(1, load_philly)
    t_gen, w = best_of(1, lambda: trace_workload(table, np.random.default_rng(args.seed)))
    print(f"# Philly: load {t_load:.2f} s, curves for {w.n_jobs} jobs {t_gen:.2f} s, "
          f"{args.gpus} GPUs")
    for sched in ("fifo", "srtf-est"):
        report(f"Philly, {sched}+EvalStop", w, args.gpus, sched, args.detector, args.repeat)
        report(f"Philly, {sched} alone", w, args.gpus, sched, None, 1)


if __name__ == "__main__":
    main()
