"""Does the ``fast`` extra pay? Whole-process ``evalstop simulate`` with and without twins.

Each measurement is a fresh ``python -m evalstop simulate`` process on the shipped Philly
trace (82,247 jobs on 512 GPUs, or ``--copies K``: the trace repeated K times at the same
arrival times on K x 512 GPUs), timed by its CPU time (user + system, from ``os.wait4``),
so numba's import, the load of the cached compiled code and everything else a user pays
are counted. Modes: ``auto`` (``EVALSTOP_JIT`` unset, the switch decides), ``0`` (never
a twin: the same as an install without the extra) and ``1`` (twins at any size). The
modes take turns inside every repeat (the machine may be shared); the table gives medians
and each mode's ratio to ``0``.

``--probe`` first measures what a twin costs before it saves anything: the same
configurations on the first 200 jobs, ``1`` against ``0`` (numba's import plus loading
the twins, which is what the switch in ``evalstop.jit`` must repay).

    python benchmarks/bench_jit_switch.py [--repeat 5] [--modes auto,0] [--probe]
        [--copies 1] [--limit N] [--eval-interval F] [--json OUT.json]
        [--configs fifo:default,fifo:evalstop:k=2,srtf-est:default,...]

``--limit N`` takes the first N jobs of the trace; ``--eval-interval 0.01`` (100 evals a
job) reaches the default rule's second phase (past its first merge of blocks, after 32
evals), which only ``block_cusum_jit`` or the detector objects run.

Needs a warm cache (run once with ``EVALSTOP_JIT=1`` first): a cold cache compiles the
twins in the first ``1`` or ``auto`` process, 12-20 CPU-s each, and that run is then
reported as an outlier, not part of what a second run costs. Every repeat also checks
that all modes wrote byte-identical per-job CSVs (the twins give the same floats).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

CONFIGS = ("fifo:default", "fifo:evalstop:k=2", "srtf-est:default", "srtf-est:evalstop:k=2",
           "tiresias:default", "tiresias:evalstop:k=2", "loss-aware:default",
           "loss-aware:evalstop:k=2")


def cpu_of(cmd: list[str], env: dict) -> float:
    """User + system CPU seconds of one child process (and nothing else)."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return ru.ru_utime + ru.ru_stime


def env_for(mode: str) -> dict:
    env = dict(os.environ)
    env.pop("EVALSTOP_JIT", None)
    if mode != "auto":
        env["EVALSTOP_JIT"] = mode
    return env


def write_trace(path: str, copies: int, limit: int | None) -> None:
    """The Philly trace (or its first ``limit`` jobs), ``copies`` times at the same
    arrivals, as a job CSV."""
    from evalstop.workload import load_philly

    t = load_philly(limit)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "arrival_s", "duration_s", "gpus"))
        for c in range(copies):
            for i in range(len(t)):
                w.writerow((f"{t.job_id[i]}-{c}", repr(float(t.arrival_s[i])),
                            repr(float(t.duration_s[i])), int(t.gpus[i])))


def command(jobs: str, gpus: int, config: str, out: str, eval_interval: float) -> list[str]:
    sched, _, det = config.partition(":")
    cmd = [sys.executable, "-m", "evalstop", "simulate", "--jobs", jobs, "--gpus", str(gpus),
           "--scheduler", sched, "--out", out, "--eval-interval", repr(eval_interval)]
    return cmd + (["--detector", det] if det else [])


def measure(jobs, gpus, configs, modes, repeat, out, eval_interval=0.05) -> dict:
    """CPU-s per (configuration, mode), and a check that every mode wrote the same rows."""
    times: dict = {(c, m): [] for c in configs for m in modes}
    for r in range(repeat):
        for c in configs:
            digests = set()
            # rotate the order of the modes each repeat so none always runs first
            for m in modes[r % len(modes):] + modes[: r % len(modes)]:
                cmd = command(jobs, gpus, c, out, eval_interval)
                times[c, m].append(cpu_of(cmd, env_for(m)))
                with open(out, "rb") as fh:
                    digests.add(hashlib.sha256(fh.read()).hexdigest())
            if len(digests) != 1:
                raise SystemExit(f"{c}: the modes {modes} wrote different per-job results")
    return times


def summary(times, configs, modes) -> list[dict]:
    """One row per configuration: each mode's median CPU-s and its ratio to mode 0."""
    rows = []
    for c in configs:
        med = {m: statistics.median(times[c, m]) for m in modes}
        row = {"config": c, **{f"cpu_s_{m}": round(med[m], 3) for m in modes}}
        if "0" in med:
            row.update({f"ratio_{m}": round(med[m] / med["0"], 3) for m in modes if m != "0"})
        rows.append(row)
    return rows


def report(title, times, configs, modes) -> None:
    print(title)
    print(f"{'configuration':28s}" + "".join(f"{'JIT=' + m:>16s}" for m in modes)
          + "".join(f"{m + '/0':>10s}" for m in modes if m != "0"))
    for c in configs:
        med = {m: statistics.median(times[c, m]) for m in modes}
        row = f"{c:28s}" + "".join(f"{med[m]:13.2f} s " for m in modes)
        if "0" in med:
            row += "".join(f"{med[m] / med['0']:9.2f}x" for m in modes if m != "0")
        print(row)
        spread = "; ".join(f"{m}: " + " ".join(f"{t:.2f}" for t in times[c, m])
                           for m in modes)
        print(f"{'':28s}each run: {spread}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--modes", default="auto,0")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="SCHEDULER[:DETECTOR], comma-separated (DETECTOR may hold '=')")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--limit", type=int, default=None, help="only the first N jobs")
    ap.add_argument("--eval-interval", type=float, default=0.05,
                    help="simulate's --eval-interval (default 0.05: 20 evals a job)")
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="also write the medians and ratios here")
    args = ap.parse_args()
    # a detector spec holds commas too (h=2.5,k=1.5): split only before a scheduler name
    configs, cur = [], None
    for part in args.configs.split(","):
        if part.split(":")[0] in ("fifo", "sjf-est", "srtf-est", "loss-aware", "tiresias"):
            cur = part
            configs.append(cur)
        else:
            configs[-1] = cur = cur + "," + part
    modes = args.modes.split(",")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    result = {"load_before": [round(x, 2) for x in os.getloadavg()], "repeat": args.repeat,
              "copies": args.copies, "limit": args.limit, "eval_interval": args.eval_interval,
              "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.csv")
        if args.probe:
            small = os.path.join(tmp, "small.csv")
            write_trace(small, 1, 200)
            t = measure(small, args.gpus, configs, ["1", "0"], args.repeat, out,
                        args.eval_interval)
            report("probe: first 200 jobs (what loading the twins costs)", t, configs,
                   ["1", "0"])
            result["probe"] = summary(t, configs, ["1", "0"])
            for c in configs:
                d = statistics.median(t[c, "1"]) - statistics.median(t[c, "0"])
                print(f"  {c}: load cost {d:.2f} CPU-s")
        jobs = "builtin:philly"
        if args.copies != 1 or args.limit is not None:
            jobs = os.path.join(tmp, "trace.csv")
            write_trace(jobs, args.copies, args.limit)
        t = measure(jobs, args.gpus * args.copies, configs, modes, args.repeat, out,
                    args.eval_interval)
        what = "Philly" if args.limit is None else f"Philly's first {args.limit} jobs"
        report(f"{what} x{args.copies} on {args.gpus * args.copies} GPUs, "
               f"eval interval {args.eval_interval}, whole process, CPU-s, median of "
               f"{args.repeat}", t, configs, modes)
        result["runs"] = summary(t, configs, modes)
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
