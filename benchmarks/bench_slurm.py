"""The paper's setting replayed on a real (local) Slurm cluster, against the simulator.

200 jobs of the ``paper`` preset on 64 fake GPUs, time-scaled so that the base run takes
about ``--minutes`` of wall time, three ways with one seed: the base alone (Slurm's FIFO),
with ``evalstop watch`` on the ``default`` rule, and on ``evalstop:k=2``. Each way runs on
its own local testbed (``evalstop.testbed``), all three at once, and is measured from
``sacct`` only; the simulator runs the same job list under ``fifo`` (with the same rule).

    python benchmarks/bench_slurm.py [--n-jobs 200] [--gpus 64] [--minutes 10] [--seed 0]
        [--poll 1] [--out benchmarks/results/slurm]

Writes ``summary.json`` (per way: real and simulated JCT mean/p50/p95, waste, GPU-hours,
stops, precision/recall/FPR/harm; agreement per job), ``per_job_WAY.csv``,
``sacct_WAY.txt`` (Slurm's own export of each run) and ``sim_vs_real.png`` (copied to
``docs/results/testbed/`` for the docs page). ``--report-only`` reprints the table and
redraws the plot of a finished run.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from evalstop.testbed import compare
from evalstop.testbed.cluster import LocalCluster
from evalstop.testbed.study import WAYS, run_ways
from evalstop.workload import synthetic_workload

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "slurm"
DOCS_PLOT = ROOT / "docs" / "results" / "testbed" / "sim_vs_real.png"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-jobs", type=int, default=200)
    ap.add_argument("--gpus", type=int, default=64)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--poll", type=float, default=1.0)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: print the table and redraw the plot of --out")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.report_only:
        return _report(out)
    out.mkdir(parents=True, exist_ok=True)
    workload = synthetic_workload(np.random.default_rng(args.seed), n_jobs=args.n_jobs,
                                  n_gpus=args.gpus, preset="paper")
    base = compare.simulated(workload, args.gpus, None)
    makespan_h = float(np.nanmax(base.finish_s)) / 3600.0
    hour_s = args.minutes * 60.0 / makespan_h
    tenants = sorted(set(workload.tenant.tolist()))
    print(f"{args.n_jobs} jobs, {args.gpus} GPUs, simulated makespan {makespan_h:.1f} h; "
          f"1 simulated hour = {hour_s:.3f} s; poll {args.poll:g} s; load "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    results, errors = {}, []

    def one(name, detector):
        try:
            with LocalCluster(tmp / f"tb-{name}", gpus=args.gpus, tenants=tenants,
                              cpus=4 * args.gpus) as cluster:
                got = run_ways(workload, tmp / f"run-{name}", args.gpus, hour_s, cluster.env,
                               poll_s=args.poll, ways=[(name, detector)],
                               timeout_s=args.minutes * 60 * 4)
                results[name] = got["ways"][name]
                shutil.copy(tmp / f"run-{name}" / name / "sacct.txt", out / f"sacct_{name}.txt")
        except Exception as e:  # noqa: BLE001 (reported below; the other ways go on)
            errors.append(f"{name}: {type(e).__name__}: {e}")

    t = time.monotonic()
    threads = [threading.Thread(target=one, args=w) for w in WAYS]
    for th in threads:
        th.start()
    load = []
    while any(th.is_alive() for th in threads):
        load.append(os.getloadavg()[0])
        time.sleep(5)
    wall = time.monotonic() - t
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    # Slurm's own cost per job, measured on the base run only (launch and teardown, the
    # scheduling cycle), added to every job's duration in a second simulation of each way:
    # calibrated on the base, judged on the default and k=2 runs.
    over = results["base"]["overheads_s"]
    extra = (over["run_s"] + over["gap_s"]) * 3600.0 / hour_s
    for name, detector in WAYS:
        results[name]["sim_slurm"] = compare.aggregate(
            workload, compare.simulated(workload, args.gpus, detector, extra))
    for w in results.values():
        for side in ("real", "sim", "sim_slurm"):
            w[side]["gpu_h_saved"] = results["base"][side]["gpu_h"] - w[side]["gpu_h"]
    summary = {"n_jobs": args.n_jobs, "n_gpus": args.gpus, "seed": args.seed,
               "preset": "paper", "hour_s": hour_s, "poll_s": args.poll,
               "sim_makespan_h": makespan_h, "wall_s": wall,
               "overheads_from_base_s": over,
               "load_mean": float(np.mean(load)) if load else None,
               "ways": {k: {kk: vv for kk, vv in results[k].items() if kk != "jobs"}
                        for k, _ in WAYS}}
    results = {k: results[k] for k, _ in WAYS}
    for name, w in results.items():
        d = np.array([r["d_jct_s"] for r in w["jobs"]])
        summary["ways"][name]["d_jct_wall_s"] = {
            "mean": float(d.mean()), "p50": float(np.median(d)),
            "p95_abs": float(np.quantile(np.abs(d), 0.95))}
        summary["ways"][name]["d_jct_per_link_s"] = float(np.mean(
            [r["d_jct_s"] / (1 + r["depth"]) for r in w["jobs"]]))
        with open(out / f"per_job_{name}.csv", "w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=list(w["jobs"][0]))
            wr.writeheader()
            wr.writerows(w["jobs"])
    with open(out / "summary.json", "w") as fh:
        json.dump(summary, fh, indent=1, allow_nan=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return _report(out)


def _report(out: Path) -> int:
    """Add hours to the summary's JCTs (the docs quote hours), print it, draw the plot."""
    summary = json.loads((out / "summary.json").read_text())
    for w in summary["ways"].values():
        for side in ("real", "sim", "sim_slurm"):
            if side in w:
                for q in ("mean", "p50", "p95"):
                    w[side][f"jct_{q}_h"] = w[side][f"jct_{q}_s"] / 3600.0
    with open(out / "summary.json", "w") as fh:
        json.dump(summary, fh, indent=1, allow_nan=True)
    rows = {}
    for name in summary["ways"]:
        with open(out / f"per_job_{name}.csv", newline="") as fh:
            rows[name] = list(csv.DictReader(fh))
    # How much longer than its duration each job of the base run held its GPUs on Slurm
    # (launch, the worker's start, teardown, sacct's rounding): real run - simulated run.
    excess = np.array([(float(r["real_jct_s"]) - float(r["real_start_s"]))
                       - (float(r["sim_jct_s"]) - float(r["sim_start_s"]))
                       for r in rows["base"]])
    summary["base_run_excess_s"] = {"median": float(np.median(excess)),
                                    "p95": float(np.quantile(excess, 0.95)),
                                    "max": float(excess.max())}
    with open(out / "summary.json", "w") as fh:
        json.dump(summary, fh, indent=1, allow_nan=True)
    _print(summary)
    _plot(summary, rows, out / "sim_vs_real.png", summary["hour_s"])
    if out.resolve() == RESULTS.resolve():  # the committed run: the docs page shows its plot
        DOCS_PLOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out / "sim_vs_real.png", DOCS_PLOT)
    return 0


def _print(s: dict) -> None:
    o, e = s["overheads_from_base_s"], s["base_run_excess_s"]
    print(f"\nwall {s['wall_s']:.0f} s, mean load {s['load_mean']:.1f}; Slurm's cost per job "
          f"(base run): run +{o['run_s']:.2f} s, scheduling gap {o['gap_s']:.2f} s "
          "(sim_slurm: the simulator with both added to every job); run time over "
          f"duration in the base run: median {e['median']:.2f} s, p95 {e['p95']:.2f} s, "
          f"max {e['max']:.2f} s")
    head = f"{'way':8} {'':9} {'JCT mean h':>10} {'p50 h':>7} {'p95 h':>7} {'waste GPU-h':>11} " \
           f"{'GPU-h saved':>11} {'stops':>5} {'prec':>5} {'recall':>6} {'harm':>5}"
    print(head)
    for name, w in s["ways"].items():
        for side in ("sim", "sim_slurm", "real"):
            m = w[side]
            print(f"{name:8} {side:9} {m['jct_mean_s'] / 3600:10.2f} {m['jct_p50_s'] / 3600:7.2f} "
                  f"{m['jct_p95_s'] / 3600:7.2f} {m['waste_gpu_h']:11.1f} "
                  f"{m['gpu_h_saved']:11.1f} {m['n_stopped']:5d} {m['precision']:5.2f} "
                  f"{m['recall']:6.2f} {m['harmful_rate']:5.2f}")
        print(f"{'':8} rule {w.get('spec') or 'none (the base alone)'}")
        print(f"{'':8} jobs within tolerance {w['within']}/{w['n_jobs']}; "
              f"max |dJCT| {w['max_abs_d_jct_s']:.1f} s wall; "
              f"unexplained stop differences: {len(w['unexplained_stops'])}")


def _plot(summary: dict, rows: dict, path: Path, hour_s: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * len(rows), 4), sharey=True)
    to_h = 1.0 / hour_s
    for ax, (name, jobs) in zip(np.atleast_1d(axes), rows.items()):
        w = summary["ways"][name]
        sim = np.array([float(r["sim_jct_s"]) for r in jobs]) * to_h
        real = np.array([float(r["real_jct_s"]) for r in jobs]) * to_h
        stopped = np.array([r["real_stop_step"] not in ("", None) for r in jobs])
        ax.scatter(sim[~stopped], real[~stopped], s=10, label="ran to the end")
        ax.scatter(sim[stopped], real[stopped], s=10, marker="x", label="stopped by EvalStop")
        top = max(sim.max(), real.max()) * 1.05
        ax.plot([0, top], [0, top], color="grey", lw=0.8)
        ax.set_title(f"{name}: {w['detector'] or 'base alone'}")
        ax.set_xlabel("simulated JCT (h)")
        ax.legend(fontsize=7, loc="upper left")
    np.atleast_1d(axes)[0].set_ylabel("JCT on Slurm, from sacct (h)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
