"""``evalstop reproduce``: run the paper's studies and write results and a report.

Runs the named experiments (``evalstop.experiments.registry``) over ``--seeds`` seeds in
parallel processes, runs the detector benchmark (``evalstop.detbench``) into
``--out``/detectors unless ``--no-detectors``, then writes ``results.json``,
per-experiment CSVs, PNG figures, ``report.md`` and a self-contained ``report.html`` into
``--out``. Everything goes into a fresh folder that replaces ``--out`` whole at the end
(``evalstop.staging``), so ``--out`` holds one run's results, never two runs' mixed.

With ``--logs DIR`` it runs no study: it reads a platform's own finished runs
(``evalstop.workload.own_logs``), refits the workload on them (``evalstop.workload.fit``)
and replays the stop rules on them (``evalstop.experiments.own_runs``), writing
``own_runs.json``, ``own_runs.md`` and ``own_fit.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from evalstop.experiments import FULL, QUICK, names, run_experiments, select
from evalstop.experiments.registry import get, with_preset, with_trace
from evalstop.experiments.runner import default_workers, plan
from evalstop.parallel import stop_pool
from evalstop.parent_death import die_with_parent
from evalstop.progress import is_terminal, note
from evalstop.progress import stage as stage_of
from evalstop.ray_engine import add_ray_option, check_ray_option, engine_for
from evalstop.staging import MARKER, check_replaceable, staged_folder

MAX_SEEDS = 10_000
# What reproduce writes: an existing --out holding anything else is refused, not replaced.
OWNED = re.compile(r"report\.(md|html)|results\.json|\w+_(runs|summary|detectors)\.csv"
                   rf"|own_runs\.(json|md)|own_fit\.json|figures|detectors|{MARKER}")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "reproduce",
        help="run the paper's studies in simulation and write a report",
        description=(
            "Run what a platform would save on a workload fitted to measured runs (the "
            "platform study) and the paper's studies (main table, composability, sweeps over "
            "eval noise, hacking base rate and k) on synthetic workloads, each over many "
            "seeds, and "
            "write results (JSON, CSV), figures (PNG), report.md and a self-contained "
            "report.html, with the detector benchmark (bench-detectors) as a section. "
            f"Experiments: {', '.join(names())}."
        ),
    )
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder (default: evalstop-results; evalstop-own-runs with "
                        "--logs), replaced whole once the "
                        "run is complete; a folder holding files reproduce did not write, or "
                        "a symlink, is refused")
    p.add_argument("--quick", action="store_true",
                   help=f"small version for a smoke test: {QUICK.n_seeds} seeds, "
                        f"{QUICK.n_jobs} jobs per workload")
    p.add_argument("--seeds", type=int, default=None, metavar="N",
                   help=f"seeds per experiment (default {FULL.n_seeds}; "
                        f"{QUICK.n_seeds} with --quick)")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="worker processes (default: one per CPU, at most one per task; "
                        "1 runs in this process)")
    p.add_argument("--only", default=None, metavar="NAME[,NAME]",
                   help=f"run only these experiments (known: {', '.join(names())})")
    p.add_argument("--seed", type=int, default=FULL.base_seed, metavar="BASE",
                   help=f"base seed; seed s of a study uses default_rng([BASE, s]) "
                        f"(default {FULL.base_seed})")
    p.add_argument("--no-detectors", action="store_true",
                   help="skip the detector benchmark (by default it runs, also with --only, "
                        "seeded with --seed; --quick runs its quick version)")
    p.add_argument("--preset", default=None, metavar="NAME",
                   help="run every study on a workload knob preset (known: "
                        "paper-assumptions: the knobs under which the paper's main table "
                        "holds; see docs/workloads.md)")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="run the studies that replay a recorded trace (scale; the Philly "
                        "trace) on this job trace instead: a job CSV (the format of "
                        "simulate --jobs) or a Slurm accounting export (sacct --parsable2); "
                        "only their trace points run (with --only: of the named studies)")
    p.add_argument("--trace-gpus", type=int, default=None, metavar="N",
                   help="cluster size for --trace (default: the study's, 512)")
    p.add_argument("--logs", default=None, metavar="DIR",
                   help="instead of the studies: read your own finished runs under DIR "
                        "(JSONL eval logs, TensorBoard event files, MLflow stores: mlflow.db, "
                        "mlruns/), refit the workload on them and write what each stop rule "
                        "would have saved and cost there (own_runs.md, own_runs.json, "
                        "own_fit.json); see docs/reproduce.md")
    p.add_argument("--sacct", default=None, metavar="FILE",
                   help="with --logs: a Slurm accounting export (sacct --parsable2) giving "
                        "each run's GPUs and wall time, matched by JobIDRaw to the job_id its "
                        "log records or by JobIDRaw or JobName to the run's name, so "
                        "GPU-hours freed are real (without it: the logs' gpus and time)")
    p.add_argument("--metric", default="eval", metavar="NAME",
                   help="with --logs: the TensorBoard scalar tag, MLflow metric or JSONL "
                        "field holding the eval score (default: eval)")
    p.add_argument("--eval-set", choices=("fresh", "fixed"), default="fresh", metavar="KIND",
                   help="with --logs: how your evals were drawn: fresh (new samples each "
                        "time; the default) or fixed (one eval set; the fit models its noise "
                        "as correlated)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (on a terminal) or progress lines (elsewhere)")
    add_ray_option(p)
    return p


def _command(args) -> str:
    """The command that reproduces these numbers, every setting spelled out (the worker
    count is left out: it does not change them)."""
    parts = ["evalstop", "reproduce", "--out", args.out]
    if args.quick:
        parts.append("--quick")
    if args.seeds is not None:
        parts += ["--seeds", str(args.seeds)]
    parts += ["--seed", str(args.seed)]
    if args.only is not None:
        parts += ["--only", args.only]
    if args.preset is not None:
        parts += ["--preset", args.preset]
    if args.trace is not None:
        parts += ["--trace", args.trace]
    if args.trace_gpus is not None:
        parts += ["--trace-gpus", str(args.trace_gpus)]
    if args.no_detectors:
        parts.append("--no-detectors")
    if args.logs is not None:
        parts[4:] = ["--logs", args.logs, "--metric", args.metric, "--eval-set", args.eval_set]
        if args.sacct is not None:
            parts += ["--sacct", args.sacct]
    return " ".join(shlex.quote(p) for p in parts)


def _check(args) -> None:
    """Range checks here, not in argparse types, so a bad value is one line (exit 2)."""
    for option, value, low in (("--seeds", args.seeds, 1), ("--workers", args.workers, 1),
                               ("--seed", args.seed, 0), ("--trace-gpus", args.trace_gpus, 1)):
        if value is not None and value < low:
            raise ValueError(f"{option} must be >= {low}, got {value}")
    # The task list is built up front: --seeds 99999999999999 hung building it.
    if args.seeds is not None and args.seeds > MAX_SEEDS:
        raise ValueError(f"--seeds must be <= {MAX_SEEDS}, got {args.seeds}")
    if args.trace_gpus is not None and args.trace is None:
        raise ValueError("--trace-gpus needs --trace")
    if args.logs is None:
        for option, given in (("--sacct", args.sacct is not None),
                              ("--metric", args.metric != "eval"),
                              ("--eval-set", args.eval_set != "fresh")):
            if given:
                raise ValueError(f"{option} needs --logs")
    else:
        for option, given in (("--only", args.only), ("--preset", args.preset),
                              ("--trace", args.trace), ("--ray", args.ray),
                              ("--quick", args.quick or None), ("--seeds", args.seeds)):
            if given is not None:
                raise ValueError(f"--logs runs no study: {option} does not apply")
    check_ray_option(args)


def run(args) -> int:
    _check(args)
    if args.out is None:  # apart by default: own runs' figures never replace the studies'
        args.out = "evalstop-results" if args.logs is None else "evalstop-own-runs"
    if args.logs is not None:
        from evalstop.cli.reproduce_logs import run_logs

        return run_logs(args)
    settings = QUICK if args.quick else FULL
    settings = replace(settings, base_seed=args.seed,
                       n_seeds=args.seeds if args.seeds is not None else settings.n_seeds)
    # ValueError on an unknown study or preset name, before any work
    experiments = _selected(args)
    if not experiments:
        raise ValueError(f"--only {args.only!r} names only studies that --preset skips")
    settings = replace(settings, preset=args.preset)
    # Checked now, so a file or a symlink in its place fails before the studies run.
    out = check_replaceable(args.out, lambda name: OWNED.fullmatch(name) is not None)
    n_tasks = len(plan(experiments, settings))
    workers = args.workers if args.workers is not None else default_workers(n_tasks)
    # On a terminal a bar; elsewhere (a CI log) progress lines (evalstop.progress).
    progress = not args.no_progress
    t0 = time.perf_counter()
    with staged_folder(out, "evalstop reproduce") as stage:
        sim_wall, bench_s, ray_summary = _run_into(stage, args, experiments, settings,
                                                   workers, progress)
    total = time.perf_counter() - t0
    if ray_summary is not None:
        print(ray_summary)
    # One line that says where everything is (the run's times ride along).
    print(f"report: {out / 'report.html'} (self-contained; report.md, results.json, "
          f"per-study CSVs and figures/ beside it); {n_tasks} tasks in {sim_wall:.1f} s on "
          f"{workers} worker(s)"
          + (f", detector benchmark {bench_s:.1f} s" if bench_s is not None else "")
          + f", total {total:.1f} s")
    return 0


def _selected(args) -> list:
    """The studies to run: ``--only``'s (or the default set), cut to their trace points on
    ``--trace``'s jobs when it is given (every trace study, opt-in ones too, without
    ``--only``), then laid under ``--preset``. The trace is read here, once, so bad input
    stops the run before any work."""
    if args.trace is None:
        return with_preset(select(args.only), args.preset)
    from evalstop.workload import read_jobs

    studies = select(args.only) if args.only is not None else [get(n) for n in names()]
    table = read_jobs(args.trace)  # InputError (one line, exit 2) on any bad input
    if len(table) == 0:
        raise ValueError(f"--trace {args.trace}: no job the cluster ran on GPUs in it")
    return with_preset(with_trace(studies, table, n_gpus=args.trace_gpus), args.preset)


def _run_into(stage: Path, args, experiments, settings, workers: int,
              progress: bool) -> tuple[float, float | None, str | None]:
    """Run the studies and the benchmark and write everything into ``stage``; returns the
    studies' and the benchmark's wall times, and what Ray ran (with ``--ray``)."""
    # Imported here: matplotlib is only needed once there is something to draw.
    from evalstop.report import RunInfo, write_report
    from evalstop.report.sections.detbench import DIR

    t0 = time.perf_counter()
    pool = None
    try:
        with engine_for(args) as ray_engine:  # --ray: the same tasks, as Ray tasks
            runs = run_experiments(experiments, settings, workers=workers, progress=progress)
            sim_wall = time.perf_counter() - t0
            bench = None
            if ray_engine is None and workers > 1:
                # Two processes beside this one: the detector benchmark in one, the report's
                # heaviest figures in the other (report.build.HEAVY_SECTIONS), while this one
                # writes the rest; all single-threaded, so the tail of the run uses both cores.
                pool = ProcessPoolExecutor(max_workers=2, initializer=die_with_parent,
                                           initargs=(os.getpid(),))
            if not args.no_detectors:
                note("detector benchmark: started", enabled=progress)
                # One seed fixes the whole report: the benchmark takes the base seed too.
                if pool is not None:
                    # No bar from the other process (as before); progress lines, in a log,
                    # show where the run is while this one writes the report.
                    future = pool.submit(_benchmark, stage / DIR, args.seed, args.quick,
                                         progress and not is_terminal(sys.stderr))
                    bench = future.result
                else:
                    done = _benchmark(stage / DIR, args.seed, args.quick, progress)
                    bench = lambda: done  # the same shape as future.result
            ray_summary = None if ray_engine is None else ray_engine.summary()
        info = RunInfo(wall_s=sim_wall, workers=workers, quick=args.quick,
                       command=_command(args))
        with stage_of("writing the report", enabled=progress) as shown:
            write_report(runs, stage, info, detectors=bench, executor=pool, step=shown.step)
        bench_s = None if bench is None else bench()[1]
        if pool is not None:
            # Its work is done: wait for its threads, as an exit right after shutdown(wait=False)
            # races the pool's wakeup pipe (CPython gh-83279: "Bad file descriptor" at exit).
            pool.shutdown(wait=True)
    except BaseException:
        # Queued work cancelled and running work killed: a Ctrl-C ends the run at once.
        if pool is not None:
            stop_pool(pool)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=False)
    return sim_wall, bench_s, ray_summary


def _benchmark(out_dir: Path, seed: int, quick: bool, progress: bool) -> tuple[dict, float]:
    """The detector benchmark into ``out_dir``: its summary and wall time."""
    from evalstop.detbench import run_detector_benchmark

    t1 = time.perf_counter()
    summary = run_detector_benchmark(out_dir, seed=seed, quick=quick, progress=progress)
    return summary, time.perf_counter() - t1
