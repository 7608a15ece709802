"""How much work the planned loop's eval index does on Philly (Tiresias, LossAware).

The planned loop (``evalstop.sim.planned``) finds the checkpoints at a scheduling call's
instant in one heap per GPU class of each running job's next eval
(``evalstop.sim.yields.eval_index``): a query passes every entry due by its time, moving it
past that job's evals up to then. This counts, in one run of the Python planned loop
(``EVALSTOP_JIT=0``; the run itself is unchanged):

* yield tests: scheduling calls that test the checkpoints at their instant for a yield;
* queries: reads of one class's index (by a yield test, or for the next call's time);
* passed: entries due at a query, each one heap operation (moved on in place, or popped);
* stale: of those, entries of runs that had ended or been preempted (popped);
* hits: the checkpoints the queries returned (evals at the call's own instant and batch);
* most hits: the most one query returned (the twin ranks a query's hits by insertion);
* mean size, mean live: the index's mean size at a query, and how many of its entries
  were of runs still going (the rest wait to be popped or compacted away).

The compiled twin does the same queries and passes the same entries (in a timing wheel,
``evalstop.sim.numba_wheel``, where a due entry's slot-mates are read too), so these counts
are most of its work: where the time per call goes is ``benchmarks/profile_twin.py``'s job.

    python benchmarks/index_census.py [--configs tiresias+default,...] [--limit N]
        [--gpus 512] [--scale K] [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

from evalstop.schedulers import build
from evalstop.sim import planned, yields
from evalstop.sim.engine import simulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_census import add_census_args, census_workload, write_rows  # noqa: E402

CONFIGS = ("tiresias+evalstop:k=2", "tiresias+default", "loss-aware+evalstop:k=2",
           "loss-aware+default")
FIELDS = ("yield tests", "queries", "passed", "stale", "hits", "most hits", "mean size",
          "mean live")


def _counted_index(count: Counter):
    """``yields.eval_index``, its queries counted."""
    eval_index = yields.eval_index

    def counted(jobs, round_of):
        track, at = eval_index(jobs, round_of)
        heap, segs, end_t = at.heap, jobs.segs, jobs.end_t

        def live(e):  # as ``at`` tells a stale entry
            return segs[e[1]] is e[3] and end_t[e[1]] == end_t[e[1]]

        def at_(t, call):
            count["queries"] += 1
            count["size"] += len(heap)
            count["live"] += sum(map(live, heap))
            due = [e for e in heap if e[0] <= t]
            count["passed"] += len(due)
            count["stale"] += len(due) - sum(map(live, due))
            found = at(t, call)
            count["hits"] += len(found[0])
            count["most hits"] = max(count["most hits"], len(found[0]))
            return found

        at_.heap = heap
        return track, at_

    return counted


def _counted_yielder(count: Counter):
    """``yields.yielder``, its tests counted."""
    yielder = yields.yielder

    def counted(*args):
        yields_ = yielder(*args)

        def yields_counted(*a):
            count["yield tests"] += 1
            return yields_(*a)

        return yields_counted

    return counted


def census(workload, n_gpus: int, sched: str, rule: str | None,
           restart_overhead_s: float = 120.0):
    """The counts above for one run of the Python planned loop, and its result."""
    try:
        scheduler = build(sched, rule)
    except ValueError as e:
        raise SystemExit(f"index_census: {e}") from None
    if planned.rule(scheduler, workload) not in ("levels", "loss"):
        raise SystemExit(f"index_census: {sched}+{rule}: not a run of the planned loop "
                         "with an eval index (tiresias or loss-aware)")
    count: Counter = Counter()
    saved = yields.eval_index, yields.yielder, os.environ.get("EVALSTOP_JIT")
    yields.eval_index, yields.yielder = _counted_index(count), _counted_yielder(count)
    os.environ["EVALSTOP_JIT"] = "0"  # the Python loop's own queries are watched
    try:
        res = simulate(workload, n_gpus, scheduler, restart_overhead_s=restart_overhead_s)
    finally:
        yields.eval_index, yields.yielder = saved[:2]
        if saved[2] is None:
            del os.environ["EVALSTOP_JIT"]
        else:
            os.environ["EVALSTOP_JIT"] = saved[2]
    for name, total in (("mean size", "size"), ("mean live", "live")):
        count[name] = round(count.pop(total) / max(count["queries"], 1), 1)
    return count, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_census_args(ap, CONFIGS)
    args = ap.parse_args()
    workload = census_workload(ap, args)
    print(f"# Philly, {workload.n_jobs:,} jobs on {args.gpus} GPUs, seed {args.seed}; "
          "the Python planned loop")
    print(f"{'configuration':26s}" + "".join(f"{f:>12s}" for f in FIELDS)
          + f"{'evals':>13s}{'passed/eval':>13s}")
    rows = []
    for config in args.configs.split(","):
        sched, _, rule = config.partition("+")
        t0 = time.process_time()
        c, res = census(workload, args.gpus, sched, rule or None)
        evals = res.n_eval_events
        print(f"{config:26s}" + "".join(f"{c[f]:>12,}" for f in FIELDS)
              + f"{evals:>13,}{c['passed'] / max(evals, 1):>13.2f}"
              + f"   ({time.process_time() - t0:.1f} CPU-s)")
        rows.append({"config": config, **{f.replace(" ", "_"): c[f] for f in FIELDS},
                     "evals": evals})
    write_rows(args, workload, rows)


if __name__ == "__main__":
    main()
