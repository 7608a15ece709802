"""``evalstop simulate``: one simulation of a job trace (CSV) on a cluster of N GPUs."""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys

import numpy as np

from evalstop.detectors import DEFAULT_SPEC
from evalstop.fileio import atomic_write, check_out_file
from evalstop.schedulers import SCHEDULERS, build
from evalstop.sim.engine import check_fits, simulate
from evalstop.suggest import unknown
from evalstop.workload import JOB_TYPES, PRESETS, load_philly, read_jobs, trace_workload

BUILTIN = {"builtin:philly": load_philly}

COLUMNS = ("job_id", "type", "gpus", "arrival_s", "start_s", "finish_s", "jct_s", "stopped",
           "stop_step", "kept_step", "end_progress", "gpu_hours", "n_preemptions", "hacking")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "simulate",
        help="simulate a job trace on a GPU cluster under a scheduler (optionally with EvalStop)",
        description=(
            "Replay a job trace (CSV with job_id, arrival_s, duration_s, gpus; optional type, "
            "tenant, est_duration_s) on a pool of GPUs under a base scheduler, optionally "
            "wrapped in the EvalStop overlay, and write one row per job. Jobs get eval "
            "curves (and hidden hacking labels) drawn from --preset with --seed; types come "
            "from the trace's type column when it has one."
        ),
    )
    p.add_argument("--jobs", required=True, metavar="JOBS.csv",
                   help="job trace CSV, a Slurm accounting export (sacct --parsable2 with "
                        "JobIDRaw, Account, Submit, Start, End, AllocTRES; GPUs from "
                        "gres/gpu), or 'builtin:philly' for the shipped Philly trace")
    p.add_argument("--gpus", required=True, type=int, metavar="N", help="GPUs in the cluster")
    p.add_argument("--scheduler", required=True, choices=SCHEDULERS, metavar="NAME",
                   help=f"base scheduler: {', '.join(SCHEDULERS)}")
    p.add_argument("--detector", default=None, metavar="SPEC",
                   help="wrap the scheduler in EvalStop with this detector spec, e.g. "
                        f"evalstop:k=2 ('default' = {DEFAULT_SPEC}); omit for the base alone")
    p.add_argument("--only-types", default=None, metavar="T[,T]",
                   help="apply the detector only to these job types (e.g. rlhf)")
    p.add_argument("--out", required=True, metavar="PER_JOB.csv", help="per-job results CSV")
    p.add_argument("--seed", type=int, default=0, help="seed for curves and labels (default 0)")
    p.add_argument("--preset", default="paper", choices=sorted(PRESETS),
                   help="job mix and curve preset (default: paper)")
    p.add_argument("--sigma", type=float, default=None,
                   help="eval noise std (default 0.02; preset fitted's RLHF jobs keep the "
                        "noise fitted to real runs)")
    p.add_argument("--eval-interval", type=float, default=0.05, metavar="FRACTION",
                   help="evaluate each job every FRACTION of its training (default 0.05: "
                        "20 evals per job)")
    p.add_argument("--restart-overhead", type=float, default=120.0, metavar="SECONDS",
                   help="cost of resuming a preempted job (default 120, the paper's)")
    return p


def _check(args) -> None:
    """Options checked before any work, each error naming its option (numpy's own
    message for a negative seed, "expected non-negative integer", names none)."""
    if args.gpus < 1:
        raise ValueError(f"--gpus must be >= 1, got {args.gpus}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if not math.isfinite(args.restart_overhead):
        raise ValueError(f"--restart-overhead must be finite, got {args.restart_overhead}")
    if args.only_types is not None:
        # An unknown type would silently match no job (no job stopped, no error).
        unknown = [t for t in args.only_types.split(",") if t.strip().lower() not in JOB_TYPES]
        if unknown:
            raise ValueError(f"--only-types: unknown job type(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(JOB_TYPES)}")
    check_out_file(args.out)


def run(args) -> int:
    _check(args)
    job_types = None if args.only_types is None else \
        [t.strip().lower() for t in args.only_types.split(",")]
    scheduler = build(args.scheduler, args.detector, job_types=job_types)
    if args.jobs.startswith("builtin:") and args.jobs not in BUILTIN:
        raise ValueError(f"--jobs: {unknown('built-in trace', args.jobs, BUILTIN)}")
    table = BUILTIN[args.jobs]() if args.jobs in BUILTIN else read_jobs(args.jobs)
    if len(table) == 0:
        raise ValueError(f"{args.jobs}: no jobs")
    kw = {"eval_interval": args.eval_interval}
    if args.sigma is not None:
        kw["sigma"] = args.sigma
    workload = trace_workload(table, np.random.default_rng(args.seed), preset=args.preset, **kw)
    check_fits(workload, args.gpus)
    res = simulate(workload, args.gpus, scheduler, restart_overhead_s=args.restart_overhead,
                   record_timeline=False)
    # Rows in the trace's own order: the workload is sorted stably by arrival.
    order = table.arrival_order()
    jct = res.jct_s
    with atomic_write(args.out, newline="") as fh:
        _write(fh, _rows(workload, res, _file_rows(order)))
    n = workload.n_jobs
    print(
        f"{n} jobs on {args.gpus} GPUs under {_label(args.scheduler, args.detector)}: mean JCT "
        f"{np.mean(jct) / 3600:.4g} h, {int(res.stopped.sum())} stopped, "
        f"{res.n_eval_events} evals, simulated in {res.wall_s:.2f} s -> {args.out}",
        file=sys.stderr,
    )
    return 0


def _file_rows(order: np.ndarray) -> np.ndarray:
    """Workload rows in file order: file row ``order[r]`` became workload row ``r``."""
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return inverse


def _write(fh, columns: list[list]) -> None:
    """The header and the rows, as ``csv.writer`` writes them. Joined at once when no text
    cell needs quoting (no comma, quote or line break in a job id or type: then csv.writer
    writes the cells as they are, a comma between, "\\r\\n" after), else by csv.writer."""
    out = csv.writer(fh)
    out.writerow(COLUMNS)
    if any(_QUOTED.search(" ".join(col)) for col in columns[:2]):
        out.writerows(zip(*columns))
        return
    cells = [col if not col or isinstance(col[0], str) else list(map(str, col))
             for col in columns]
    if cells and cells[0]:
        fh.write("\r\n".join(map(",".join, zip(*cells))) + "\r\n")


_QUOTED = re.compile('[,"\r\n]')


def _rows(workload, res, rows: np.ndarray) -> list[list]:
    """The output columns, in file order: each put in that order by numpy and turned into
    strings or Python numbers at once (one cell at a time cost more than the writing)."""
    def col(values):
        return np.asarray(values)[rows]

    stopped = col(res.stopped)
    stop_step = col(res.stop_eval) + 1
    ids = [workload.job_id[r] for r in rows.tolist()]
    return [ids, col(workload.type).tolist(), col(workload.gpus).tolist(),
               _nums(col(workload.arrival_s)), _nums(col(res.start_s)),
               _nums(col(res.finish_s)), _nums(col(res.jct_s)), stopped.astype(int).tolist(),
               np.where(stopped, stop_step.astype(str), "").tolist(),
               (col(res.kept_eval) + 1).tolist(), _nums(col(res.end_progress)),
               _nums(col(res.gpu_s) / 3600), col(res.n_preemptions).tolist(),
               col(workload.hacking).astype(int).tolist()]


def _nums(values: np.ndarray) -> list[str]:
    """``_num`` of each value: one ``%`` over the whole column ("%.12g" % x is
    format(x, ".12g")), then "" for the NaNs."""
    values = np.asarray(values, dtype=float)
    if not len(values):
        return []
    out = ("%.12g\n" * len(values) % tuple(values.tolist()))[:-1].split("\n")
    for i in np.flatnonzero(np.isnan(values)).tolist():
        out[i] = ""
    return out


def _num(x: float) -> str:
    return "" if math.isnan(x) else format(float(x), ".12g")


def _label(scheduler: str, detector: str | None) -> str:
    """The run as the user named it ("fifo+default"): the rule's name, not its spec (150
    characters for the default); --help spells the default out."""
    return scheduler if detector is None else f"{scheduler}+{detector}"
