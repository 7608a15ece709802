"""Which eval checkpoints of the priority schedulers can change anything, on Philly.

The checkpoint loop makes every eval of every running job an event. An engine that skips
evals needs to know which of them matter; this counts them, per base scheduler and rule,
in one run of the Python checkpoint loop (``EVALSTOP_JIT=0``), by watching the scheduler's
calls (the run itself is unchanged):

* checkpoints: evals of running jobs that reached the scheduler (``on_eval``);
* key changed: the job's key differs from its key at its previous checkpoint (or start);
* above head: at the call that follows, the job's key is above the waiting head's key plus
  the margin (the only case in which it may yield at a checkpoint);
* could yield: above head, and the head would fit in the free GPUs plus the job's own;
* yielded: jobs that did yield at a checkpoint;
* at an arrival or end: checkpoints at the very instant of an arrival or of another job's
  end, where a call tests every job checkpointed at that instant (what an engine that
  skips evals must still find, in the checkpoint loop's order).

    python benchmarks/checkpoint_census.py [--configs tiresias+evalstop:k=2,...] [--limit N]
        [--gpus 512] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from evalstop.schedulers import build
from evalstop.schedulers.priority import PriorityScheduler
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sim import add_scale_arg, check_scale, repeated  # noqa: E402  (a sibling script)

CONFIGS = ("tiresias+evalstop:k=2", "tiresias+default", "loss-aware+evalstop:k=2",
           "loss-aware+default")
FIELDS = ("checkpoints", "key changed", "above head", "could yield", "yielded",
          "at an arrival or end")


def _base(scheduler) -> PriorityScheduler:
    base = getattr(scheduler, "base", scheduler)
    if not isinstance(base, PriorityScheduler) or not base.preempt_at_checkpoint:
        raise SystemExit(f"{base.name}: not a base that yields at checkpoints "
                         "(tiresias, loss-aware)")
    return base


def census(workload, n_gpus: int, sched: str, rule: str | None,
           restart_overhead_s: float = 120.0):
    """The counts above for one run, and its result (the scheduler's methods wrapped on
    the instance, which changes no decision)."""
    try:
        scheduler = build(sched, rule)
    except ValueError as e:
        raise SystemExit(f"checkpoint_census: {e}") from None
    base = _base(scheduler)
    count: Counter = Counter()
    last_key: dict[int, float] = {}
    instants: list[tuple[float, int]] = []  # (time, job) of each checkpoint
    on_eval, schedule, started = base.on_eval, base.schedule, base._started
    yield_at = base._yield_at_checkpoints

    def on_eval_(job, now):
        count["checkpoints"] += 1
        instants.append((now, job.index))
        key = base.key(job, now)
        if last_key.get(job.index, key) != key:
            count["key changed"] += 1
        last_key[job.index] = key
        return on_eval(job, now)

    def started_(job, key, start):
        last_key[job.index] = base.key(job, None)
        return started(job, key, start)

    def schedule_(now, free):
        if base._front or base._wait:
            head_key, _, head = base._head()
            for job in base._checkpointed:
                # As the scheduler tests it: a job that ended at its checkpoint is not.
                if not (job.running and job.index in base._running):
                    continue
                if base.key(job, now) > head_key + base.margin:
                    count["above head"] += 1
                    if head.gpus <= free + job.gpus:
                        count["could yield"] += 1
        return schedule(now, free)

    def yield_at_(now, free, start, preempt):
        before = len(preempt)
        out = yield_at(now, free, start, preempt)
        count["yielded"] += len(preempt) - before
        return out

    base.on_eval, base.schedule, base._started = on_eval_, schedule_, started_
    base._yield_at_checkpoints = yield_at_
    res = simulate(workload, n_gpus, scheduler, restart_overhead_s=restart_overhead_s)
    arrivals = set(workload.arrival_s.tolist())
    finish = res.finish_s.tolist()
    ends = Counter(finish)
    count["at an arrival or end"] = sum(
        t in arrivals or ends[t] > (finish[i] == t) for t, i in instants)
    return count, res


def add_census_args(ap: argparse.ArgumentParser, configs) -> None:
    """The options of this census and of ``index_census``."""
    ap.add_argument("--configs", default=",".join(configs),
                    help="SCHEDULER+RULE, comma-separated (default: Tiresias and LossAware "
                         "with evalstop:k=2 and the default)")
    ap.add_argument("--limit", type=int, default=0, help="the first N jobs only (0: all)")
    ap.add_argument("--gpus", type=int, default=512,
                    help="GPUs in the cluster at 1x (default 512)")
    add_scale_arg(ap)
    ap.add_argument("--seed", type=int, default=0,
                    help="seed of the workload's curves (default 0)")
    ap.add_argument("--json", metavar="PATH", help="also write the counts here")


def census_workload(ap: argparse.ArgumentParser, args):
    """Philly (its first ``--limit`` jobs, ``--scale`` times over), the curves drawn from
    ``--seed``; ``args.gpus`` becomes the whole cluster's."""
    if args.limit < 0:
        ap.error(f"--limit must be >= 0, got {args.limit}")
    check_scale(ap, args)
    table = load_philly()
    if args.limit:
        table = table.take(np.arange(min(args.limit, len(table))))
    args.gpus *= args.scale
    return trace_workload(repeated(table, args.scale), np.random.default_rng(args.seed))


def write_rows(args, workload, rows) -> None:
    """The counts, to ``--json`` if given."""
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"n_jobs": workload.n_jobs, "gpus": args.gpus, "scale": args.scale,
                       "seed": args.seed,
                       "rows": rows}, fh, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_census_args(ap, CONFIGS)
    args = ap.parse_args()
    os.environ["EVALSTOP_JIT"] = "0"  # the Python scheduler's own calls are watched
    workload = census_workload(ap, args)
    print(f"# Philly, {workload.n_jobs:,} jobs on {args.gpus} GPUs, seed {args.seed}; "
          "the Python checkpoint loop")
    print(f"{'configuration':28s}" + "".join(f"{f:>22s}" for f in FIELDS))
    rows = []
    for config in args.configs.split(","):
        sched, _, rule = config.partition("+")
        t0 = time.process_time()
        c, _ = census(workload, args.gpus, sched, rule or None)
        n = c["checkpoints"] or 1
        print(f"{config:28s}" + "".join(
            f"{c[f]:>13,} ({c[f] / n:5.1%})" for f in FIELDS)
            + f"   ({time.process_time() - t0:.1f} CPU-s)")
        rows.append({"config": config, **{f.replace(" ", "_"): c[f] for f in FIELDS}})
    write_rows(args, workload, rows)


if __name__ == "__main__":
    main()
