"""Benchmark ``evalstop watch`` under a flooding tenant: a quiet tenant's detection lag
and the controller's peak memory, against an idle baseline in the same run.

Each scenario runs in its own process (so its peak RSS is its own), on a fresh log tree
and state database in a temporary directory:

* ``idle``: the quiet tenant alone (the baseline);
* ``1file``: the flood tenant has 2 M valid records in one file;
* ``200files``: 2 M valid records over 200 files (each under the per-file read cap);
* ``50kfiles``: 50,000 files of 20 records;
* ``invalid``: 2 M invalid lines in one file;
* ``200kjobs``: 200,000 jobs of 2 records (the per-tenant job quota refuses most).

The flood is on disk before the controller starts (a backlog). The quiet tenant's writer
(a separate process) appends one record per job every 0.5 s for 5 jobs, each stamped
with its write time; the controller polls every INTERVAL s for SECONDS s (at once
while a tenant has a backlog left, as ``Controller.run_forever`` does). The lag of a
quiet record is the commit time of the poll that fed it minus its write time: p50, p95
and max are printed per scenario, with the longest poll, the flood records fed, and the
peak RSS (``ru_maxrss``) of the scenario's process.

Target: p95 lag <= 2 poll intervals + the budget's drain time (the longest poll, which
reads at most one budget per tenant), and peak RSS <= 300 MB.

    python benchmarks/bench_watch_flood.py [--scale 1.0] [--seconds 30] [--interval 1.0]
                                           [--only 1file,invalid] [--tenant-bytes N]

``--scale`` multiplies every flood size (0.01 runs in well under a minute). Not a test:
timings depend on the machine; quote them with its load.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flood_args import add_flood_args, in_own_process  # noqa: E402

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.quota import DEFAULT_TENANT_BYTES

SCENARIOS = ("idle", "1file", "200files", "50kfiles", "invalid", "200kjobs")
QUIET_JOBS, QUIET_EVERY = 5, 0.5


def _rec(job: str, step: int) -> str:
    return f'{{"job": "{job}", "step": {step}, "eval": {float(step % 7)}}}\n'


def _write_lines(path: str, lines) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        buf = []
        for ln in lines:
            buf.append(ln)
            if len(buf) >= 10_000:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))


def write_flood(logdir: str, name: str, scale: float) -> int:
    """The flood tenant's backlog; returns how many lines it wrote."""
    flood = os.path.join(logdir, "flood")
    n = max(1, round(2_000_000 * scale))
    if name == "1file":
        _write_lines(os.path.join(flood, "a.jsonl"), (_rec(f"j{i % 100}", i // 100 + 1)
                                                      for i in range(n)))
        return n
    if name == "200files":
        per = max(1, n // 200)
        for f in range(200):
            _write_lines(os.path.join(flood, f"part{f:03d}.jsonl"),
                         (_rec(f"f{f}-{i % 10}", i // 10 + 1) for i in range(per)))
        return per * 200
    if name == "50kfiles":
        files = max(1, round(50_000 * scale))
        for f in range(files):
            _write_lines(os.path.join(flood, f"d{f // 1000:02d}", f"r{f:05d}.jsonl"),
                         (_rec(f"r{f}", s) for s in range(1, 21)))
        return files * 20
    if name == "invalid":
        _write_lines(os.path.join(flood, "bad.jsonl"), ("not json\n" for _ in range(n)))
        return n
    if name == "200kjobs":
        jobs = max(1, round(200_000 * scale))
        _write_lines(os.path.join(flood, "jobs.jsonl"),
                     (_rec(f"job{i % jobs}", i // jobs + 1) for i in range(2 * jobs)))
        return 2 * jobs
    return 0


def quiet_writer(logdir: str, seconds: float) -> None:
    path = os.path.join(logdir, "quiet", "run.jsonl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    t0, step = time.time(), 0
    with open(path, "a") as fh:
        while time.time() < t0 + seconds:
            step += 1
            fh.writelines(f'{{"job": "q{j}", "step": {step}, "eval": {float(step)}, '
                          f'"time": {time.time():.6f}}}\n' for j in range(QUIET_JOBS))
            fh.flush()
            time.sleep(max(0.0, t0 + step * QUIET_EVERY - time.time()))


def run_scenario(name: str, scale: float, seconds: float, interval: float,
                 tenant_bytes: int = DEFAULT_TENANT_BYTES) -> dict:
    with tempfile.TemporaryDirectory() as root:
        logdir = os.path.join(root, "logs")
        os.makedirs(logdir)
        t0 = time.perf_counter()
        flood_lines = write_flood(logdir, name, scale)
        write_s = time.perf_counter() - t0
        store = StateStore(os.path.join(root, "state.db"))
        ctl = Controller(store, [JsonlDirSource(logdir)], detector="evalstop:k=1000",
                         tenant_bytes=tenant_bytes, err=io.StringIO(), out=io.StringIO())
        proc = subprocess.Popen([sys.executable, __file__, "--_quiet", logdir, str(seconds)])
        lags, polls, flood_fed, refused = [], [], 0, 0
        t_end = time.time() + seconds + 2 * interval
        while time.time() < t_end:
            started = time.monotonic()
            res = ctl.poll_once()
            polls.append(time.monotonic() - started)
            for r in res.fed:
                if r.time is not None:
                    lags.append(res.committed_at - r.time)
                else:
                    flood_fed += 1
            refused += sum(res.refused.values())
            # As Controller.run_forever: while a backlog is left, the next poll at once.
            if not res.backlog:
                time.sleep(max(0.0, interval - (time.monotonic() - started)))
        proc.wait(timeout=60)
        ctl.close()
    arr = np.array(lags) if lags else np.array([np.nan])
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    drain = max(polls)  # one poll reading at most one budget per tenant
    target = 2 * interval + drain
    p95 = float(np.percentile(arr, 95))
    return {"scenario": name, "flood_lines": flood_lines, "write_s": write_s,
            "quiet_records": len(lags), "lag_p50_s": float(np.percentile(arr, 50)),
            "lag_p95_s": p95, "lag_max_s": float(np.max(arr)), "polls": len(polls),
            "poll_max_s": drain, "flood_fed": flood_fed, "flood_refused": refused,
            "peak_rss_mb": rss_mb, "target_lag_s": target,
            "within_2_intervals": bool(p95 <= 2 * interval),
            "lag_ok": bool(p95 <= target), "rss_ok": bool(rss_mb <= 300)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_quiet":
        quiet_writer(argv[1], float(argv[2]))
        return 0
    if argv and argv[0] == "--_scenario":
        name, scale, seconds, interval = argv[1], *map(float, argv[2:5])
        print(json.dumps(run_scenario(name, scale, seconds, interval, int(argv[5]))))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_flood_args(p, scale=1.0)
    p.add_argument("--tenant-bytes", type=int, default=DEFAULT_TENANT_BYTES,
                   help="the controller's state-file quota per tenant (as watch's option)")
    p.add_argument("--only", default=",".join(SCENARIOS), help="scenarios, comma-separated")
    args = p.parse_args(argv)
    names = [s for s in args.only.split(",") if s]
    if any(n not in SCENARIOS for n in names) or not names:
        p.error(f"--only takes some of {', '.join(SCENARIOS)}")
    if not (0 < args.scale <= 10 and args.seconds > 0 and args.interval > 0):
        p.error("--scale must be in (0, 10], --seconds and --interval > 0")
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); "
          f"scale {args.scale:g}, poll every {args.interval:g} s, {args.seconds:g} s each")
    results = []
    for name in names:
        r = in_own_process(__file__, name, args.scale, args.seconds, args.interval,
                           args.tenant_bytes)
        results.append(r)
        print(f"{name:>9}: quiet lag p50 {r['lag_p50_s']:.2f} s, p95 {r['lag_p95_s']:.2f} s "
              f"(target {r['target_lag_s']:.2f} s: {'met' if r['lag_ok'] else 'MISSED'}), "
              f"{'within' if r['within_2_intervals'] else 'over'} 2 intervals, "
              f"max {r['lag_max_s']:.2f} s; longest poll {r['poll_max_s']:.2f} s; flood "
              f"{r['flood_lines']:,} lines, {r['flood_fed']:,} fed, {r['flood_refused']:,} "
              f"refused in {r['polls']} polls; peak RSS {r['peak_rss_mb']:.0f} MB "
              f"({'met' if r['rss_ok'] else 'MISSED'})", flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print(json.dumps({"scale": args.scale, "interval_s": args.interval,
                      "tenant_bytes": args.tenant_bytes,
                      "seconds": args.seconds, "scenarios": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
