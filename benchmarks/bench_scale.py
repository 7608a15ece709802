"""How long the ``scale`` study takes: one seed of each trace at two smaller sizes, timed in
CPU seconds (the task's own process time, so other load on a shared machine does not count),
then a power law ``t = a * n**b`` through the two sizes, extrapolated to the study's sizes
(full Philly, a million synthetic jobs) and its 20 seeds. A size that is the study's own
(``--philly 20000,82247 --synthetic 100000,1000000``) is measured, not extrapolated, and
printed as such; the study itself runs with ``evalstop reproduce --only scale [--ray ADDRESS]``.

    python benchmarks/bench_scale.py [--philly 5000,20000] [--synthetic 5000,20000]
                                     [--workers 2] [--ray [ADDRESS]] [--out FILE.json]
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
import resource
import time
from dataclasses import replace

from evalstop.experiments.runner import plan, run_task
from evalstop.experiments.scale import SYNTHETIC_JOBS, make_experiment
from evalstop.experiments.settings import FULL
from evalstop.parallel import parallel_map

PHILLY_JOBS = 82_247
SEEDS = FULL.n_seeds


def timed_task(task):
    """CPU seconds of one task in its own process, its simulation count, and the peak
    resident memory of that process so far in MiB (with ``--workers 1`` every task runs in
    this process, so a task's peak is at least the peaks before it)."""
    t0 = time.process_time()
    out = run_task(task)
    cpu = time.process_time() - t0
    return cpu, len(out.sim_s), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def per_seed(points: list[tuple[int, float]], full: int) -> tuple[float, str]:
    """CPU seconds of one seed at ``full`` jobs from two (jobs, CPU-s) points: the
    point's own where one is at that size, else the power law through both."""
    for n, t in points:
        if n == full:
            return t, "MEASURED at this size"
    (n1, t1), (n2, t2) = sorted(points)
    b = math.log(t2 / t1) / math.log(n2 / n1)
    return t2 * (full / n2) ** b, f"EXTRAPOLATED (t ~ n^{b:.2f} through the two sizes)"


def span(secs: float) -> str:
    return f"{secs:.0f} CPU-s" if secs < 120 else f"{secs / 60:.1f} CPU-min"


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
    ap.add_argument("--out", help="write the figures as JSON here")
    args = ap.parse_args()
    if args.out:  # refused before the runs, not after them
        from evalstop.fileio import check_out_file
        try:
            check_out_file(args.out)
        except (ValueError, OSError) as e:
            raise SystemExit(f"bench_scale: error: {e}") from None
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
    rows = []
    print(f"{'trace':10s} {'jobs':>9s} {'sims':>5s} {'CPU-s/task':>11s} {'ms/job':>8s} "
          f"{'peak MiB so far':>16s}")
    for (trace, n), (cpu, n_sims, rss) in zip(labels, results):
        measured[trace].append((n, cpu))
        rows.append({"trace": trace, "jobs": n, "sims": n_sims, "cpu_s": round(cpu, 2),
                     "peak_mib_so_far": round(rss)})
        print(f"{trace:10s} {n:9,d} {n_sims:5d} {cpu:11.1f} {1000 * cpu / n:8.2f} {rss:16,.0f}")
    print(f"measured: {len(tasks)} tasks (one seed each) in {wall:.0f} s wall"
          + ("" if args.workers == 1 else " (peak memory: each worker process's own)"))
    print(f"The study ({SEEDS} seeds):")
    total, study = 0.0, {}
    for trace, full in (("philly", PHILLY_JOBS), ("synthetic", SYNTHETIC_JOBS)):
        per_task, how = per_seed(measured[trace], full)
        total += per_task * SEEDS
        study[trace] = {"jobs": full, "cpu_s_per_seed": round(per_task, 2), "how": how}
        print(f"  {trace:10s} {full:9,d} jobs: {span(per_task)} per seed, "
              f"{span(per_task * SEEDS)} for {SEEDS} seeds; {how}")
    print(f"  whole study: {span(total)}; on N cores about that / N")
    if args.out:
        fig = {"rows": rows, "study": study, "seeds": SEEDS, "study_cpu_s": round(total, 1),
               "wall_s": round(wall, 1), "workers": args.workers, "machine": platform.machine(),
               "cpus": os.cpu_count(), "python": platform.python_version()}
        with open(args.out, "w") as fh:
            json.dump(fig, fh, indent=1)

if __name__ == "__main__":
    main()
