"""``evalstop noise LOG.jsonl``: measure the eval's noise sigma from finished jobs' logs."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys

import numpy as np

from evalstop.detectors.measured_noise import MIN_POOLED_DIFFS, measure_noise
from evalstop.errors import InputError
from evalstop.evallog import read_log

N_BOOT = 1000
ZERO = 1e-9  # a sigma below this share of the evals' size is rounding, not noise


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "noise",
        help="measure the eval's noise sigma from several jobs' eval logs, for a stop rule",
        description=(
            "Pool the second differences of every job's evals (in step order, NaN skipped) "
            "and print the eval's noise sigma: the standard deviation of one eval around the "
            "checkpoint's true quality, with a bootstrap interval over jobs and the spec to "
            "stop later jobs with (default:sigma=S, the recommended rule told the noise). Pool only jobs scored by the same "
            "eval (same prompts, same sampling): noise belongs to the eval, not to the job. "
            f"Needs at least {MIN_POOLED_DIFFS} second differences (a job with n finite evals "
            "gives n - 2). Finished jobs of any shape work; sharp turns of the curve read as "
            "a little extra noise, so the estimate tends to run high, which costs recall, "
            "not precision."),
    )
    p.add_argument("log", help="eval log, JSON Lines ({\"job\", \"step\", \"eval\"}, ...)")
    p.add_argument("--jobs", metavar="REGEX", default=None,
                   help="only jobs whose name matches this regular expression (re.search)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the bootstrap over jobs (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    return p


def run(args) -> int:
    if args.seed < 0:  # numpy's own message ("expected non-negative integer") names no option
        raise InputError(f"--seed must be >= 0, got {args.seed}")
    try:
        pattern = re.compile(args.jobs) if args.jobs is not None else None
    except re.error as exc:
        raise InputError(f"--jobs {args.jobs!r} is not a regular expression ({exc})") from None
    jobs = read_log(args.log)
    if pattern is not None:
        jobs = {name: recs for name, recs in jobs.items() if pattern.search(name)}
        if not jobs:
            raise InputError(f"no job in {args.log} matches --jobs {args.jobs!r}")
    series = [[r.eval for r in recs] for recs in jobs.values()]
    m = measure_noise(series, rng=np.random.default_rng(args.seed), n_boot=N_BOOT)
    scale = float(np.median(np.abs([v for s in series for v in s if math.isfinite(v)])))
    if not m.sigma > ZERO * max(scale, 1.0):
        # A rule told sigma 0 counts any eval below the best level as a full drop, so two
        # dips would stop a job: no spec is better than that one.
        raise InputError(f"the evals show no noise (sigma {m.sigma:.3g}: constant or on a "
                         "straight line); a stated sigma must be positive, so give one "
                         "from the eval's size (default:eval_n=N), or use the default rule")
    spec = f"default:sigma={m.sigma:.4g}"  # the rule README and stop-rules.md recommend
    per = np.asarray(m.per_job, float)
    spread = ([float(q) for q in np.quantile(per, [0.1, 0.5, 0.9])] if per.size else [])
    if args.json:
        out = {"sigma": m.sigma, "lo": _finite(m.lo), "hi": _finite(m.hi), "level": 0.9,
               "jobs": m.n_jobs, "second_differences": m.n_diffs, "spec": spec,
               "per_job_p10_p50_p90": spread}
        sys.stdout.write(json.dumps(out) + "\n")
        return 0
    interval = (f" (90% interval {m.lo:.4g} to {m.hi:.4g}, resampling jobs)"
                if math.isfinite(m.lo) else
                " (one job: no interval)" if m.n_jobs == 1 else " (no interval)")
    lines = [f"eval noise sigma: {m.sigma:.4g}{interval}",
             f"from {m.n_diffs} second differences of {m.n_jobs} job(s)"]
    if spread:
        lines.append(f"each job alone: median {spread[1]:.4g}, 10-90% {spread[0]:.4g} to "
                     f"{spread[2]:.4g} ({per.size} jobs with 5+ finite evals)")
    lines.append(f"stop rule: --detector {spec}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
