"""How long the ``scale`` study takes: one seed of each trace at two smaller sizes, timed in
CPU seconds (the task's own process time, so other load on a shared machine does not count),
then a power law ``t = a * n**b`` through the two sizes, extrapolated to the study's sizes
(full Philly, a million synthetic jobs) and its 20 seeds. Extrapolated figures are printed
as such; the study itself runs with ``evalstop reproduce --only scale [--ray ADDRESS]``.

    python benchmarks/bench_scale.py [--philly 5000,20000] [--synthetic 5000,20000]
                                     [--workers 2] [--ray [ADDRESS]]
    python benchmarks/bench_scale.py --full-philly [--out FILE.json]

``--full-philly`` instead times the study's own full-Philly task (one seed, 15 simulations)
in this process, as the study runs it, and prints its CPU seconds (target: 15 CPU-s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from dataclasses import replace

from evalstop.experiments.runner import plan, run_task
from evalstop.experiments.scale import SYNTHETIC_JOBS, make_experiment
from evalstop.experiments.settings import FULL
from evalstop.parallel import parallel_map

PHILLY_JOBS = 82_247
SEEDS = FULL.n_seeds


def timed_task(task):
    """CPU seconds of one task in its own process, and its simulation count."""
    t0 = time.process_time()
    out = run_task(task)
    return time.process_time() - t0, len(out.sim_s)


def sizes(text: str) -> list[int]:
    out = [int(x) for x in text.split(",")]
    if len(out) != 2 or min(out) < 1 or out[0] == out[1]:
        raise SystemExit(f"need two different positive sizes, got {text!r}")
    return out


def full_philly(out: str | None) -> None:
    """The study's full-Philly task (its first), timed in this process."""
    from evalstop import jit

    task = plan([make_experiment(synthetic_jobs=1000)], replace(FULL, n_seeds=1))[0]
    load = os.getloadavg()[0]
    cpu, n_sims = timed_task(task)
    fig = {"jobs": task.point.n_jobs or PHILLY_JOBS, "sims": n_sims, "cpu_s": round(cpu, 2),
           "jit": jit.mode(), "load_before": round(load, 2),
           "load_after": round(os.getloadavg()[0], 2), "machine": platform.machine(),
           "cpus": os.cpu_count(), "python": platform.python_version()}
    print(f"full Philly, one seed: {n_sims} simulations in {cpu:.1f} CPU-s "
          f"(compiled twins: {fig['jit']}; load {load:.1f}); target 15 CPU-s")
    if out:
        with open(out, "w") as fh:
            json.dump(fig, fh, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--philly", default="5000,20000", help="two Philly prefix sizes")
    ap.add_argument("--synthetic", default="5000,20000", help="two synthetic sizes")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS")
    ap.add_argument("--full-philly", action="store_true",
                    help="time one seed of the full Philly trace in this process instead")
    ap.add_argument("--out", help="with --full-philly: write the figures as JSON here")
    args = ap.parse_args()
    if args.full_philly:
        return full_philly(args.out)
    ph, sy = sizes(args.philly), sizes(args.synthetic)
    settings = replace(FULL, n_seeds=1)
    tasks, labels = [], []
    for p, s in zip(ph, sy):
        exp = make_experiment(synthetic_jobs=s, philly_jobs=p)
        for task in plan([exp], settings):
            tasks.append(task)
            labels.append(("philly" if task.point.trace else "synthetic", task.point.n_jobs))
    t0 = time.perf_counter()
    if args.ray is not None:
        from evalstop.ray_engine import ray_session

        with ray_session(args.ray or None):
            results = parallel_map(timed_task, tasks, workers=args.workers, desc="scale")
    else:
        results = parallel_map(timed_task, tasks, workers=args.workers, desc="scale")
    wall = time.perf_counter() - t0
    measured: dict[str, list[tuple[int, float]]] = {"philly": [], "synthetic": []}
    print(f"{'trace':10s} {'jobs':>9s} {'sims':>5s} {'CPU-s/task':>11s} {'ms/job':>8s}")
    for (trace, n), (cpu, n_sims) in zip(labels, results):
        measured[trace].append((n, cpu))
        print(f"{trace:10s} {n:9,d} {n_sims:5d} {cpu:11.1f} {1000 * cpu / n:8.2f}")
    print(f"measured: {len(tasks)} tasks (one seed each) in {wall:.0f} s wall")
    print(f"EXTRAPOLATED (power law through the two sizes; {SEEDS} seeds):")
    total = 0.0
    for trace, full in (("philly", PHILLY_JOBS), ("synthetic", SYNTHETIC_JOBS)):
        (n1, t1), (n2, t2) = sorted(measured[trace])
        b = math.log(t2 / t1) / math.log(n2 / n1)
        per_task = t2 * (full / n2) ** b
        total += per_task * SEEDS
        print(f"  {trace:10s} {full:9,d} jobs: exponent {b:.2f}, {per_task / 60:.0f} CPU-min "
              f"per seed, {per_task * SEEDS / 3600:.1f} CPU-h for {SEEDS} seeds")
    print(f"  whole study: {total / 3600:.1f} CPU-h; on N cores about {total / 3600:.1f}/N h")


if __name__ == "__main__":
    main()
