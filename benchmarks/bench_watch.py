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
run in these two phases (a command per stop would time the shell, not the controller).

3. ``--actions`` (instead of 1-2): **detection lag under slow actions**. 200 jobs over 5
   tenants write one eval per job every SECONDS/60 s; 100 of them peak at staggered steps
   and decline, so 100 stops come in over the run, each starting an action of
   ACTION_S seconds (``sleep``) in the controller's pool (ACTION_WORKERS at once). The
   detection lag of a stop is the commit time of the poll that decided it minus the
   write time of the record that triggered it; p50/p95/max are printed with the poll
   interval, and how long the longest poll took. Actions run off the poll loop, so the
   lag stays under two poll intervals however long the actions take.

    python benchmarks/bench_watch.py [--jobs 10000] [--evals 20] [--files 100]
                                     [--rate 5000] [--seconds 10] [--interval 0.2]
    python benchmarks/bench_watch.py --actions [--seconds 20] [--interval 0.5]
                                     [--action-s 5] [--action-workers 32]
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


ACT_JOBS, ACT_DECLINERS, ACT_STEPS, ACT_TENANTS = 200, 100, 60, 5


def _act_score(j: int, step: int) -> float:
    if j < ACT_DECLINERS:  # peaks at steps 2..41, staggered; k=2 stops 2 steps later
        peak = 2 + (j * 40) // ACT_DECLINERS
        return float(step if step <= peak else 2 * peak - step)
    return float(step)


def actions_writer(logdir: str, seconds: float) -> None:
    """One eval per job every seconds/ACT_STEPS s, stamped with its write time."""
    paths = [os.path.join(logdir, f"tenant{t}", "part.jsonl") for t in range(ACT_TENANTS)]
    handles = [open(p, "a") for p in paths]  # noqa: SIM115
    step_s = seconds / ACT_STEPS
    t0 = time.time()
    for step in range(1, ACT_STEPS + 1):
        for j in range(ACT_JOBS):
            h = handles[j % ACT_TENANTS]
            h.write(f'{{"job": "job{j}", "step": {step}, "eval": {_act_score(j, step)}, '
                    f'"time": {time.time():.6f}}}\n')
        for h in handles:
            h.flush()
        time.sleep(max(0.0, t0 + step * step_s - time.time()))
    for h in handles:
        h.close()


def bench_actions(seconds: float, interval: float, action_s: float, workers: int) -> dict:
    from evalstop.integrations.watch import ShellAction

    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logs")
        for t in range(ACT_TENANTS):
            os.makedirs(os.path.join(logdir, f"tenant{t}"))
        store = StateStore(os.path.join(root, "state.db"))
        ctl = Controller(store, [JsonlDirSource(logdir)], detector="evalstop:k=2",
                         action=ShellAction(f"sleep {action_s:g}", timeout=action_s + 60),
                         action_workers=workers, err=io.StringIO(), out=io.StringIO())
        proc = subprocess.Popen([sys.executable, __file__, "--_actions_writer", logdir,
                                 str(seconds)])
        lags, polls, running_at_stop = [], [], []
        t_start = time.time()
        while proc.poll() is None or time.time() < t_start + seconds + 2 * interval:
            started = time.monotonic()
            res = ctl.poll_once()
            polls.append(time.monotonic() - started)
            written = {(r.job, r.step): r.time for r in res.fed}
            for key in res.stops:
                d = ctl.jobs[key].detector
                lags.append(res.committed_at - written[(key.name, d.stop_step)])
                running_at_stop.append(ctl.actions_in_flight)
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
        proc.wait(timeout=30)
        t_drain = time.monotonic()
        ctl.run_until_idle()  # the rest of the actions, to check none was lost
        drain_s = time.monotonic() - t_drain
        statuses = [a.status for a in ctl.store.actions()]
        ctl.close()
    arr = np.array(lags) if lags else np.array([np.nan])
    return {"stops": len(lags), "actions_done": statuses.count("done"),
            "actions": len(statuses), "interval_s": interval, "action_s": action_s,
            "workers": workers, "lag_p50_s": float(np.percentile(arr, 50)),
            "lag_p95_s": float(np.percentile(arr, 95)), "lag_max_s": float(np.max(arr)),
            "poll_max_s": float(max(polls)), "polls": len(polls),
            "max_actions_running_at_a_stop": max(running_at_stop, default=0),
            "drain_after_s": drain_s}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_writer":
        logdir, jobs, files, rate, seconds = argv[1:6]
        writer(logdir, int(jobs), int(files), float(rate), float(seconds))
        return 0
    if argv and argv[0] == "--_actions_writer":
        actions_writer(argv[1], float(argv[2]))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--evals", type=int, default=20, help="evals per job in the backlog")
    p.add_argument("--files", type=int, default=100, help="log files the jobs are spread over")
    p.add_argument("--rate", type=float, default=5000.0, help="live evals per second")
    p.add_argument("--seconds", type=float, default=10.0, help="live phase duration")
    p.add_argument("--interval", type=float, default=None,
                   help="controller poll interval (default 0.2; 0.5 with --actions)")
    p.add_argument("--actions", action="store_true",
                   help="detection lag while 100 slow actions run (phase 3 only)")
    p.add_argument("--action-s", type=float, default=5.0, help="with --actions: seconds each")
    p.add_argument("--action-workers", type=int, default=32,
                   help="with --actions: actions run at once")
    args = p.parse_args(argv)
    if args.interval is None:
        args.interval = 0.5 if args.actions else 0.2
    if args.actions:
        if not (args.seconds > 0 and args.interval > 0 and args.action_s > 0
                and args.action_workers >= 1):
            p.error("--seconds, --interval, --action-s must be > 0, --action-workers >= 1")
        a = bench_actions(args.seconds, args.interval, args.action_s, args.action_workers)
        print(f"actions: {a['stops']} stops, {a['actions_done']}/{a['actions']} actions of "
              f"{a['action_s']:g} s done ({a['workers']} at once; up to "
              f"{a['max_actions_running_at_a_stop']} running when a stop was decided); "
              f"poll every {a['interval_s']:g} s: detection lag p50 {a['lag_p50_s']:.3f} s, "
              f"p95 {a['lag_p95_s']:.3f} s ({a['lag_p95_s'] / a['interval_s']:.2f} intervals), "
              f"max {a['lag_max_s']:.3f} s; longest poll {a['poll_max_s']:.3f} s")
        print(json.dumps({"actions": a}))
        return 0
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
