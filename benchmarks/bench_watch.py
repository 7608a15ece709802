"""Benchmark ``evalstop watch``: ingest rate and decision lag over 10,000 jobs' JSONL logs.

Two phases, each on a fresh state database in a temporary directory:

1. **Backlog ingest**: JOBS x EVALS records already on disk (jobs interleaved over FILES
   files, as a platform writes them); the controller reads them all (``--once``) and
   commits. Prints evals ingested per second (records fed to a detector, per second of
   wall time, including parsing, the detector, and the SQLite commits).
2. **Live lag**: a writer process appends records for all jobs at RATE evals/s for
   SECONDS, stamping each with its wall-clock write time (the record's ``time`` field);
   the controller polls every INTERVAL seconds. The lag of a record is the commit time of
   the poll that fed it minus its write time: p50 and p95 are printed.

Not a test: timings depend on the machine (a shared 2-core box here). No stop actions are
run (a command per stop would time the shell, not the controller).

    python benchmarks/bench_watch.py [--jobs 10000] [--evals 20] [--files 100]
                                     [--rate 5000] [--seconds 10] [--interval 0.2]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore


def _score(job: int, step: int) -> float:
    # Every 7th job peaks at step 8 and declines (k=2 stops it at 10); the rest rise.
    if job % 7 == 0 and step > 8:
        return 8.0 - (step - 8)
    return float(step)


def _write_backlog(logdir: str, jobs: int, evals: int, files: int) -> int:
    handles = [open(os.path.join(logdir, f"part-{f:05d}.jsonl"), "w") for f in range(files)]  # noqa: SIM115
    n = 0
    for step in range(1, evals + 1):
        for j in range(jobs):
            handles[j % files].write(
                f'{{"job": "job{j}", "step": {step}, "eval": {_score(j, step)}}}\n'
            )
            n += 1
    for h in handles:
        h.close()
    return n


def _controller(root: str, logdir: str) -> Controller:
    store = StateStore(os.path.join(root, "state.db"))
    return Controller(store, [JsonlDirSource(logdir)], detector="evalstop:k=2",
                      err=io.StringIO(), out=io.StringIO())


def bench_ingest(jobs: int, evals: int, files: int) -> dict:
    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logs")
        os.mkdir(logdir)
        n = _write_backlog(logdir, jobs, evals, files)
        ctl = _controller(root, logdir)
        t0 = time.perf_counter()
        results = ctl.run_until_idle()
        wall = time.perf_counter() - t0
        fed = sum(len(r.fed) for r in results)
        stops = sum(len(r.stops) for r in results)
        ctl.close()
    return {"records": n, "fed": fed, "stops": stops, "polls": len(results),
            "wall_s": wall, "evals_per_s": fed / wall}


def writer(logdir: str, jobs: int, files: int, rate: float, seconds: float) -> None:
    """Append records for all jobs in round-robin at ``rate`` per second, stamped."""
    handles = [open(os.path.join(logdir, f"part-{f:05d}.jsonl"), "a")  # noqa: SIM115
               for f in range(files)]
    tick = 0.01
    per_tick = max(1, round(rate * tick))
    step, j = 1, 0
    t_end = time.time() + seconds
    next_tick = time.time()
    while time.time() < t_end:
        touched = set()
        for _ in range(per_tick):
            now = time.time()
            h = j % files
            handles[h].write(f'{{"job": "job{j}", "step": {step}, "eval": {_score(j, step)}, '
                             f'"time": {now:.6f}}}\n')
            touched.add(h)
            j += 1
            if j == jobs:
                j, step = 0, step + 1
        for h in touched:
            handles[h].flush()  # "landing on disk" = visible to readers
        next_tick += tick
        time.sleep(max(0.0, next_tick - time.time()))
    for h in handles:
        h.close()


def bench_lag(jobs: int, files: int, rate: float, seconds: float, interval: float) -> dict:
    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logs")
        os.mkdir(logdir)
        ctl = _controller(root, logdir)
        proc = subprocess.Popen([sys.executable, __file__, "--_writer", logdir, str(jobs),
                                 str(files), str(rate), str(seconds)])
        lags: list[float] = []
        fed = 0
        t_end = time.time() + seconds + 2 * interval + 1.0
        while time.time() < t_end:
            started = time.monotonic()
            res = ctl.poll_once()
            lags.extend(res.committed_at - r.time for r in res.fed if r.time is not None)
            fed += len(res.fed)
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
        proc.wait(timeout=30)
        ctl.run_until_idle()
        ctl.close()
    arr = np.array(lags) if lags else np.array([np.nan])
    return {"fed": fed, "offered_rate": rate, "achieved_rate": fed / seconds,
            "lag_p50_s": float(np.percentile(arr, 50)), "lag_p95_s": float(np.percentile(arr, 95)),
            "lag_max_s": float(np.max(arr))}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_writer":
        logdir, jobs, files, rate, seconds = argv[1:6]
        writer(logdir, int(jobs), int(files), float(rate), float(seconds))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--evals", type=int, default=20, help="evals per job in the backlog")
    p.add_argument("--files", type=int, default=100, help="log files the jobs are spread over")
    p.add_argument("--rate", type=float, default=5000.0, help="live evals per second")
    p.add_argument("--seconds", type=float, default=10.0, help="live phase duration")
    p.add_argument("--interval", type=float, default=0.2, help="controller poll interval")
    args = p.parse_args(argv)
    for name in ("jobs", "evals", "files"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if not (args.rate > 0 and args.seconds > 0 and args.interval > 0):
        p.error("--rate, --seconds and --interval must be > 0")

    ing = bench_ingest(args.jobs, args.evals, args.files)
    print(f"ingest: {ing['fed']:,} evals of {args.jobs:,} jobs ({args.files} files) in "
          f"{ing['wall_s']:.2f} s over {ing['polls']} polls: {ing['evals_per_s']:,.0f} evals/s "
          f"({ing['stops']:,} stops)")
    lag = bench_lag(args.jobs, args.files, args.rate, args.seconds, args.interval)
    print(f"live: {lag['fed']:,} evals at {lag['achieved_rate']:,.0f}/s offered "
          f"{args.rate:,.0f}/s, poll every {args.interval} s: lag p50 {lag['lag_p50_s']:.3f} s, "
          f"p95 {lag['lag_p95_s']:.3f} s, max {lag['lag_max_s']:.3f} s")
    print(json.dumps({"ingest": ing, "live": lag}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
