"""Benchmark ``evalstop watch --mlflow`` under a flooding tenant: a quiet tenant's
detection lag and the controller's peak memory, against an idle baseline in the same run.

Each scenario runs in its own process (so its peak RSS is its own), against a fresh real
``mlflow server`` on 127.0.0.1 (SQLite store, ``--workers`` worker processes;
``tests/mlflow_server.py``), with a policy giving tenant ``quiet`` its experiment and
tenant ``flood`` its own, by id. The flood is written into the store directly, not over
HTTP, so the server serves only the controller's reads and the quiet tenant's writes: the
experiments, runs and the history are seeded by a separate process before the server
starts (MLflow's own store; the history's points in bulk), and the live flood is written
by a process of its own into the SQLite file, one transaction a second:

* ``idle``: the quiet tenant alone (the baseline);
* ``runs``: the flood tenant has RUNS runs, each logging one point a second;
* ``history``: one flood run holds POINTS history points (logged before the start);
* ``experiments``: the flood tenant owns EXPERIMENTS empty experiments (all listed in the
  policy, so every one is searched);
* ``dead``: beside the MLflow source, a second one whose server accepts connections and
  never answers; the quiet tenant here writes a JSONL log (``--jsonl``).

The quiet tenant's writer (a separate process) logs one point for each of 5 runs every
0.5 s, at known times; the controller polls every INTERVAL s (at once while a tenant has
a backlog left, as ``Controller.run_forever`` does) for SECONDS s. A quiet point's lag is
the commit time of the poll that fed it minus the time it was logged: p50, p95 and max
per scenario, and the p95 from when the server answered the write (the controller's own
part: a loaded server is slow to accept a write too), with the longest poll, the flood
points fed, the quiet points lost (logged and never fed) and the peak RSS (``ru_maxrss``)
of the controller's process. ``--profile DIR`` writes a cProfile of each scenario's
measured polls: the controller's and the MLflow source's (in its own thread).

Target: p95 lag <= 2 poll intervals, peak RSS <= 300 MB, no quiet point lost.

    python benchmarks/bench_watch_mlflow.py [--scale 1] [--seconds 30] [--interval 1.0]
                                            [--only idle,runs] [--workers 2] [--profile DIR]

``--scale`` multiplies the flood sizes of the issue (500 runs, 1,000,000 points, 3,000
experiments); 1 (the issue's) takes a scenario 1-3 minutes on a shared 2-core machine, the
1 M-point history's seeding included. Not a test: timings depend on the machine; quote
them with its load.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from flood_args import add_flood_args, in_own_process  # noqa: E402
from mlflow_server import ENV, HOST, MlflowServer  # noqa: E402 - the tests' own server

os.environ.update(ENV)
SCENARIOS = ("idle", "runs", "history", "experiments", "dead")
QUIET_RUNS, QUIET_EVERY = 5, 0.5
FULL = {"runs": 500, "history": 1_000_000, "experiments": 3_000}
STUCK_AFTER = 5.0  # as `evalstop watch` at a 1 s interval: max(3 intervals, 5 s)


def quiet_mlflow(uri: str, run_ids: list[str], t0: float, seconds: float,
                 done_path: str) -> None:
    """Also writes, for each point, when the server answered its write (``done_path``:
    ``RUN STEP TIME`` lines): from then on it can be read."""
    import mlflow

    client = mlflow.MlflowClient(uri)
    step = 0
    with open(done_path, "w") as done:
        while time.time() < t0 + seconds:
            step += 1
            time.sleep(max(0.0, t0 + step * QUIET_EVERY - time.time()))
            for run in run_ids:  # the timestamp is the time of the write (the lag's start)
                client.log_metric(run, "eval", float(step), step=step,
                                  timestamp=int(time.time() * 1000))
                done.write(f"{run} {step} {time.time():.6f}\n")
            done.flush()


def quiet_jsonl(path: str, t0: float, seconds: float) -> None:
    step = 0
    with open(path, "a") as fh:
        while time.time() < t0 + seconds:
            step += 1
            time.sleep(max(0.0, t0 + step * QUIET_EVERY - time.time()))
            fh.writelines(f'{{"job": "q{j}", "step": {step}, "eval": {float(step)}, '
                          f'"time": {time.time():.6f}}}\n' for j in range(QUIET_RUNS))
            fh.flush()


def flood_runs(db: str, run_ids: list[str], t0: float, seconds: float) -> None:
    """Each run logs one point a second, written straight into the SQLite store (one
    transaction a second, as MLflow itself writes a point: ``metrics`` and the run's
    ``latest_metrics``), so the server serves only the controller and the quiet tenant."""
    import sqlite3

    con = sqlite3.connect(db, timeout=60)
    step = 0
    while time.time() < t0 + seconds:
        step += 1
        time.sleep(max(0.0, t0 + step - time.time()))
        ts = int(time.time() * 1000)
        rows = [("eval", float(step % 7), ts, run, step, 0) for run in run_ids]
        with con:
            con.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, "
                            "is_nan) VALUES (?, ?, ?, ?, ?, ?)", rows)
            con.executemany("INSERT INTO latest_metrics (key, value, timestamp, run_uuid, "
                            "step, is_nan) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key, "
                            "run_uuid) DO UPDATE SET value = excluded.value, timestamp = "
                            "excluded.timestamp, step = excluded.step, is_nan = "
                            "excluded.is_nan", rows)
    con.close()


def seed(db: str, name: str, scale: float) -> dict:
    """The experiments and runs of a scenario, and its static flood (the history's points,
    the experiments), written into the SQLite store before the server starts, by MLflow's
    own store; the history's points but the last in bulk (``INSERT`` of the rows MLflow
    writes), its last point by ``log_batch`` (which sets the run's latest value)."""
    import sqlite3

    import mlflow
    from mlflow.entities import Metric

    sizes = {k: max(1, round(v * scale)) for k, v in FULL.items()}
    client = mlflow.MlflowClient(f"sqlite:///{db}")
    quiet_exp = client.create_experiment("quiet")
    quiet = [client.create_run(quiet_exp).info.run_id for _ in range(QUIET_RUNS)]
    flood_exps = [client.create_experiment("flood")]
    flood, flood_size = [], 0
    if name == "runs":
        flood = [client.create_run(flood_exps[0]).info.run_id for _ in range(sizes["runs"])]
        flood_size = len(flood)
    elif name == "history":
        run = client.create_run(flood_exps[0]).info.run_id
        n, ts = sizes["history"], int(time.time() * 1000) - sizes["history"]
        with sqlite3.connect(db, timeout=60) as con:
            for lo in range(0, n - 1, 100_000):
                con.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, "
                                "is_nan) VALUES ('eval', ?, ?, ?, ?, 0)",
                                ((float(s % 7), ts + s, run, s)
                                 for s in range(lo, min(lo + 100_000, n - 1))))
        con.close()
        client.log_batch(run, [Metric("eval", float((n - 1) % 7), ts + n - 1, n - 1)])
        flood_size = n
    elif name == "experiments":
        flood_exps += [client.create_experiment(f"e{i}") for i in range(sizes["experiments"] - 1)]
        flood_size = len(flood_exps)
    return {"quiet_exp": quiet_exp, "quiet": quiet, "flood_exps": flood_exps,
            "flood": flood, "flood_size": flood_size}


def _policy(root: str, ids: dict[str, list[str]]) -> str:
    path = os.path.join(root, "policy.toml")
    with open(path, "w") as fh:
        fh.write('[defaults]\ndetector = "evalstop:k=1000"\n')
        for tenant, exps in ids.items():
            fh.write(f"[tenants.{tenant}]\nmlflow_experiments = {json.dumps(exps)}\n")
    return path


def _background(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, __file__, *args])


def _profiled(call, prof, on: list[bool]):
    """``call`` run under ``prof`` while ``on[0]`` (cProfile sees only the thread that
    enables it)."""
    def run():
        if not on[0]:
            return call()
        prof.enable()
        try:
            return call()
        finally:
            prof.disable()
    return run


def run_scenario(name: str, scale: float, seconds: float, interval: float,
                 workers: int, profile: str = "") -> dict:
    import cProfile
    import pstats

    import mlflow

    from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
    from evalstop.integrations.watch.mlflow_source import MlflowSource
    from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

    with tempfile.TemporaryDirectory() as root:
        srv = MlflowServer(Path(root) / "mlflow", workers=workers)
        srv.root.mkdir(parents=True)
        dead = socket.socket()
        procs: list[subprocess.Popen] = []
        try:
            t_setup = time.perf_counter()
            seeded = subprocess.run([sys.executable, __file__, "--_seed", str(srv.db), name,
                                     str(scale)], capture_output=True, text=True, check=True)
            made = json.loads(seeded.stdout.strip().splitlines()[-1])
            setup_s = time.perf_counter() - t_setup
            srv.start()
            client = mlflow.MlflowClient(srv.uri)
            quiet, flood, flood_size = made["quiet"], made["flood"], made["flood_size"]
            ids = {"quiet": [made["quiet_exp"]], "flood": made["flood_exps"]}
            policy = load_policy(_policy(root, ids))
            tenancy = PolicyTenancy(policy)
            sources = [MlflowSource(srv.uri, tenancy=tenancy, stuck_after=STUCK_AFTER)]
            logdir = os.path.join(root, "logs")
            os.makedirs(os.path.join(logdir, "quiet"))
            if name == "dead":
                dead.bind((HOST, 0))
                dead.listen(1024)  # accepted by the kernel, never answered
                sources = [MlflowSource(f"http://{HOST}:{dead.getsockname()[1]}",
                                        tenancy=tenancy, stuck_after=STUCK_AFTER),
                           JsonlDirSource(logdir, tenancy=tenancy)]
            ctl = Controller(StateStore(os.path.join(root, "state.db")), sources,
                             policy=policy, err=(err := io.StringIO()), out=io.StringIO())
            profs, on = {}, [True]
            if profile:  # the source's polls (their threads) and the controller's
                profs = {"source": cProfile.Profile(), "controller": cProfile.Profile()}
                worker = sources[0]._worker
                worker.call = _profiled(worker.call, profs["source"], on)
                ctl.poll_once = _profiled(ctl.poll_once, profs["controller"], on)
            ctl.poll_once()  # the first poll reads what is there before the clock starts
            t0 = time.time() + 1.0
            done_path = os.path.join(root, "quiet-done.txt")
            if name == "dead":
                procs.append(_background("--_quiet_jsonl", os.path.join(logdir, "quiet",
                                                                       "q.jsonl"),
                                         str(t0), str(seconds)))
            else:
                procs.append(_background("--_quiet", srv.uri, ",".join(quiet), str(t0),
                                         str(seconds), done_path))
            if flood:
                procs.append(_background("--_flood", str(srv.db), ",".join(flood), str(t0),
                                         str(seconds)))
            lags, polls, flood_fed, seen, fed_at = [], [], 0, {}, {}
            t_end = t0 + seconds + 3 * interval
            while time.time() < t_end:
                started = time.monotonic()
                res = ctl.poll_once()
                polls.append(time.monotonic() - started)
                for r in res.fed:
                    if r.job in quiet or r.job.startswith("q"):
                        lags.append(res.committed_at - r.time)  # its write (MLflow: log) time
                        fed_at[(r.job, r.step)] = res.committed_at
                        seen.setdefault(r.job, []).append(r.step)
                    else:
                        flood_fed += 1
                if not res.backlog:
                    time.sleep(max(0.0, interval - (time.monotonic() - started)))
            on[0] = False  # the profile is of the measured polls, not the drain
            for p in procs:
                p.wait(timeout=300)
            # From the write's answer to the commit: the controller's own part of the lag
            # (the rest is the server's, accepting the write).
            after_write = []
            if name != "dead":
                with open(done_path) as fh:
                    for line in fh:
                        run, st, at = line.split()
                        if (run, int(st)) in fed_at:
                            after_write.append(fed_at[run, int(st)] - float(at))
            if name == "dead":
                with open(os.path.join(logdir, "quiet", "q.jsonl")) as fh:
                    written = sum(1 for _ in fh)
            else:
                history = {r: {m.step for m in client.get_metric_history(r, "eval")}
                           for r in quiet}
                written = sum(len(h) for h in history.values())
            drain_until = time.time() + 600
            # The rest of the quiet points, for the count of those lost (the flood's own
            # backlog, say the rest of a 1 M-point history, is not waited for).
            while (time.time() < drain_until
                   and sum(len(set(v)) for v in seen.values()) < written):
                time.sleep(0.1)  # a poll that finds the source's own poll running is quick
                res = ctl.poll_once()
                for r in res.fed:
                    if r.job in quiet or r.job.startswith("q"):
                        seen.setdefault(r.job, []).append(r.step)
                if not res.progressed and not res.backlog:
                    break
            missing = [] if name == "dead" else sorted(
                (quiet.index(r), st) for r, h in history.items()
                for st in h - set(seen.get(r, [])))[:20]
            fed = sum(len(set(v)) for v in seen.values())
            lost = written - fed
            dups = sum(len(v) - len(set(v)) for v in seen.values())
            ctl.close()
            for part, prof in profs.items():
                with open(os.path.join(profile, f"{name}-{part}.txt"), "w") as fh:
                    pstats.Stats(prof, stream=fh).sort_stats("cumulative").print_stats(40)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
            dead.close()
            srv.stop()
    arr = np.array(lags) if lags else np.array([np.nan])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p95 = float(np.percentile(arr, 95))
    return {"scenario": name, "flood_size": flood_size, "setup_s": setup_s,
            "quiet_points": len(lags), "quiet_written": written, "quiet_lost": lost,
            "quiet_missing": missing, "quiet_duplicates": dups,
            "after_write_p95_s": (float(np.percentile(after_write, 95)) if after_write
                                  else None),  # none for the JSONL tenant
            "lag_p50_s": float(np.percentile(arr, 50)), "lag_p95_s": p95,
            "lag_max_s": float(np.max(arr)), "polls": len(polls),
            "poll_max_s": max(polls), "flood_fed": flood_fed, "peak_rss_mb": rss_mb,
            "log_lines": len(err.getvalue().splitlines()), "log": err.getvalue()[-1500:],
            "lag_ok": bool(p95 <= 2 * interval), "rss_ok": bool(rss_mb <= 300)}


def _scenarios(text: str) -> tuple[str, ...]:
    names = tuple(n for n in text.split(",") if n)
    if not names or any(n not in SCENARIOS for n in names):
        raise argparse.ArgumentTypeError(f"takes some of {', '.join(SCENARIOS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_seed":
        print(json.dumps(seed(argv[1], argv[2], float(argv[3]))))
        return 0
    if argv and argv[0] == "--_quiet":
        quiet_mlflow(argv[1], argv[2].split(","), float(argv[3]), float(argv[4]), argv[5])
        return 0
    if argv and argv[0] == "--_flood":
        flood_runs(argv[1], argv[2].split(","), float(argv[3]), float(argv[4]))
        return 0
    if argv and argv[0] == "--_quiet_jsonl":
        quiet_jsonl(argv[1], float(argv[2]), float(argv[3]))
        return 0
    if argv and argv[0] == "--_scenario":
        name, scale, seconds, interval = argv[1], *map(float, argv[2:5])
        print(json.dumps(run_scenario(name, scale, seconds, interval, int(argv[5]),
                                      argv[6] if len(argv) > 6 else "")))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_flood_args(p, scale=1.0)
    p.add_argument("--only", type=_scenarios, default=SCENARIOS,
                   help=f"scenarios, comma-separated (of {', '.join(SCENARIOS)})")
    p.add_argument("--workers", type=int, default=2,
                   help="the mlflow server's worker processes (its --workers)")
    p.add_argument("--profile", metavar="DIR",
                   help="write a cProfile of each scenario's controller (its polls, and "
                        "the MLflow source's polls in their thread) to DIR/NAME-*.txt")
    args = p.parse_args(argv)
    names = args.only
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    if not (0 < args.scale <= 1 and args.seconds > 0 and args.interval > 0
            and args.workers >= 1):
        p.error("--scale must be in (0, 1], --seconds and --interval > 0, --workers >= 1")
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); "
          f"scale {args.scale:g}, poll every {args.interval:g} s, {args.seconds:g} s each",
          flush=True)
    results = []
    for name in names:
        r = in_own_process(__file__, name, args.scale, args.seconds, args.interval,
                           args.workers, os.path.abspath(args.profile) if args.profile else "")
        results.append(r)
        print(f"{name:>11}: quiet lag p50 {r['lag_p50_s']:.2f} s, p95 {r['lag_p95_s']:.2f} s "
              f"({'within' if r['lag_ok'] else 'OVER'} 2 intervals), max "
              f"{r['lag_max_s']:.2f} s"
              + ("" if r["after_write_p95_s"] is None else
                 f" (p95 {r['after_write_p95_s']:.2f} s from the write's answer)")
              + f"; {r['quiet_points']} quiet points, {r['quiet_lost']} "
              f"lost, {r['quiet_duplicates']} twice; longest poll {r['poll_max_s']:.2f} s; "
              f"flood {r['flood_size']:,}, {r['flood_fed']:,} points fed in {r['polls']} "
              f"polls; peak RSS {r['peak_rss_mb']:.0f} MB "
              f"({'met' if r['rss_ok'] else 'MISSED'}); {r['log_lines']} log lines",
              flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"scale": args.scale, "interval_s": args.interval,
                      "seconds": args.seconds, "scenarios": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
