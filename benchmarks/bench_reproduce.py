"""Wall time of ``evalstop reproduce --quick`` and of the full run, as a user runs them.

Targets on the project's 2-core machine: ``--quick`` <= 30 s, the full run <= 4 minutes.

    python benchmarks/bench_reproduce.py [--only quick|full] [--workers N]
        [--baseline-quick SECONDS] [--baseline-full SECONDS]

Each run is a fresh ``evalstop`` process writing into a temporary folder (removed after);
the time includes start-up, the detector benchmark, the report and its figures. Given a
baseline measured earlier on the same machine (e.g. before a change), it also prints the
ratio, which survives a busy machine better than the seconds do; the CPU seconds of all
its processes are printed too, as they depend less on what else the machine runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

TARGETS = {"quick": 30.0, "full": 240.0}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(kind: str, workers: int | None, keep: str | None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (all its processes) of one run."""
    out = tempfile.mkdtemp(prefix=f"bench-reproduce-{kind}-", dir=keep)
    cmd = [sys.executable, "-m", "evalstop.cli.main", "reproduce", "--out", out,
           "--no-progress"]
    if kind == "quick":
        cmd.append("--quick")
    if workers is not None:
        cmd += ["--workers", str(workers)]
    try:
        t0, c0 = time.perf_counter(), children_cpu()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0, children_cpu() - c0
    finally:
        if keep is None:
            shutil.rmtree(out, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("quick", "full"), default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep each run's output in a new folder under DIR")
    ap.add_argument("--baseline-quick", type=float, default=None, metavar="SECONDS")
    ap.add_argument("--baseline-full", type=float, default=None, metavar="SECONDS")
    args = ap.parse_args()
    print(f"# {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    for kind in ("quick", "full"):
        if args.only not in (None, kind):
            continue
        secs, cpu = run(kind, args.workers, args.keep)
        line = (f"reproduce {'--quick' if kind == 'quick' else '(full)':<8} {secs:7.1f} s  "
                f"(target <= {TARGETS[kind]:.0f} s; {cpu:.1f} CPU-s)")
        base = args.baseline_quick if kind == "quick" else args.baseline_full
        if base:
            line += f"  {secs / base:.2f}x the baseline {base:.1f} s"
        print(line + f"  load average {os.getloadavg()[0]:.1f} after", flush=True)


if __name__ == "__main__":
    main()
