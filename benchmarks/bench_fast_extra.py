"""Is any command slower with the ``fast`` extra (numba) installed? Whole processes, alternated.

Each command runs as a fresh ``python -m evalstop ...`` process in three installs, taking
turns inside every round (the order rotates from round to round, so none always runs
first on a shared machine):

* ``fast``: numba importable, ``EVALSTOP_JIT`` unset: what ``pip install evalstop[fast]``
  runs, the switch in ``evalstop.jit`` deciding where a compiled twin pays;
* ``jit0``: the same install with ``EVALSTOP_JIT=0``;
* ``nonumba``: numba made unimportable (a ``sitecustomize`` on ``PYTHONPATH`` hides it from
  the import system, as if the extra were not installed), ``EVALSTOP_JIT`` unset.

It reports each child's CPU time (user + system, ``resource.getrusage(RUSAGE_CHILDREN)``
deltas) and wall time: per command and install the median and the least of the rounds,
and the ratio of ``fast`` to each other install, as the ratio of the medians and as the
least, median and largest ratio of the paired runs of one round. The verdict is a sign
test over the rounds: ``slower`` where the ``fast`` run was the slower one in so many
rounds that chance (a fair coin each round) would give that at most 5% of the time,
``faster`` the other way, ``even`` otherwise (no difference beyond the noise of the
machine; with fewer than 6 rounds no test can say more).

A command whose warm-up took more than ``--heavy-s`` CPU-seconds runs ``--repeat-heavy``
rounds, the others ``--repeat``.

A first, untimed round (``--no-warmup`` skips it) runs ``fast`` and ``jit0`` under
``python -X importtime`` and records whether numba was imported; it also warms the disk
cache and numba's cache of compiled code (a cold cache compiles for 10-20 s). Every
round checks that all installs wrote the same per-job CSV (simulate) or printed the same
decisions (replay).

    python benchmarks/bench_fast_extra.py [--trace builtin:philly | PHILLY.csv | JOBS.csv]
        [--repeat 7] [--repeat-heavy 3] [--commands NAME,...] [--variants fast,jit0,nonumba]
        [--out OUT.json]

``--trace``: the full trace that the ``simulate-*`` commands replay on ``--gpus`` GPUs:
``builtin:philly`` (the shipped Philly trace, default), a CSV in Philly's own columns
(timestamp, duration, num_gpus, gpu_time, cluster; converted to a job CSV once), or
anything ``simulate --jobs`` reads. ``--list`` prints the commands.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

BASES = ("fifo", "sjf-est", "srtf-est", "loss-aware", "tiresias")
RULES = {"default": "default", "k2": "evalstop:k=2"}
VARIANTS = ("fast", "jit0", "nonumba")
# Hides numba from every finder on sys.path (the package, its submodules): find_spec gives
# None and ``import numba`` raises ModuleNotFoundError, as without the extra.
HIDE_NUMBA = '''\
import importlib.machinery, sys


class _NoNumba(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "numba" or name.startswith("numba."):
            return None
        return super().find_spec(name, path, target)


sys.meta_path = [_NoNumba if f is importlib.machinery.PathFinder else f
                 for f in sys.meta_path]
'''


def commands(tmp: str, trace: str, gpus: int) -> dict[str, list[str]]:
    """Name -> evalstop's arguments (``OUT`` stands for a per-run output path)."""
    cmds = {}
    for base in BASES:
        for key, spec in RULES.items():
            cmds[f"simulate-{base}-{key}"] = ["simulate", "--jobs", trace, "--gpus", str(gpus),
                                              "--scheduler", base, "--detector", spec,
                                              "--out", "OUT"]
    cmds["simulate-synthetic"] = ["simulate", "--jobs", os.path.join(tmp, "synthetic.csv"),
                                  "--gpus", "64", "--scheduler", "srtf-est", "--detector",
                                  "default", "--out", "OUT"]
    # 100 evals a job: the default rule's second phase (past its first merge of blocks)
    cmds["simulate-long-evals"] = ["simulate", "--jobs", os.path.join(tmp, "head.csv"),
                                   "--gpus", str(gpus), "--scheduler", "fifo", "--detector",
                                   "default", "--eval-interval", "0.01", "--out", "OUT"]
    cmds["replay"] = ["replay", os.path.join(tmp, "evals.jsonl")]
    cmds["reproduce-quick"] = ["reproduce", "--quick", "--only", "main", "--no-detectors",
                               "--workers", "1", "--no-progress", "--out", "OUTDIR"]
    cmds["help"] = ["--help"]
    return cmds


def write_inputs(tmp: str, trace: str, head_jobs: int) -> str:
    """The small inputs (a synthetic trace, the trace's first ``head_jobs`` jobs, an eval
    log), seeded; returns the trace argument for the full-trace commands."""
    import numpy as np

    from evalstop.workload import load_philly, read_jobs
    from evalstop.workload.philly import PHILLY_COLUMNS, parse_philly

    if trace == "builtin:philly":
        table = load_philly()
    else:
        with open(trace, encoding="utf-8") as fh:
            head = fh.readline().strip().split(",")
        if tuple(head) == PHILLY_COLUMNS:  # Philly's own columns: convert once
            with open(trace, encoding="utf-8") as fh:
                table = parse_philly(fh.read(), name=trace)
            trace = os.path.join(tmp, "trace.csv")
            write_jobs(trace, table, np.arange(len(table)))
        else:
            table = read_jobs(trace)
    write_jobs(os.path.join(tmp, "head.csv"), table, table.arrival_order()[:head_jobs])

    rng = np.random.default_rng(2606)
    n = 300
    with open(os.path.join(tmp, "synthetic.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "arrival_s", "duration_s", "gpus"))
        arrivals = np.cumsum(rng.exponential(600.0, n))
        durations = rng.lognormal(8.0, 1.5, n) + 60.0
        gpus = rng.choice([1, 1, 1, 2, 4, 8], n)
        for i in range(n):
            w.writerow((f"job-{i}", repr(float(arrivals[i])), repr(float(durations[i])),
                        int(gpus[i])))

    with open(os.path.join(tmp, "evals.jsonl"), "w") as fh:
        for j in range(100):
            peak = rng.uniform(0.3, 1.0)
            for s in range(1, 41):
                p = s / 40
                score = 0.5 + 0.3 * p - (0.6 * (p - peak) if p > peak else 0.0)
                fh.write(json.dumps({"job": f"job-{j}", "step": s * 100,
                                     "eval": float(score + rng.normal(0.0, 0.02))}) + "\n")
    return trace


def trace_name(trace: str) -> str:
    """The trace as the results record it: its file name and the SHA-256 of its bytes
    (a path names one machine's folders), or the built-in's name."""
    if trace.startswith("builtin:"):
        return trace
    with open(trace, "rb") as fh:
        return f"{os.path.basename(trace)} sha256:{hashlib.sha256(fh.read()).hexdigest()}"


def write_jobs(path: str, table, rows) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "arrival_s", "duration_s", "gpus"))
        for i in rows.tolist():
            w.writerow((table.job_id[i], repr(float(table.arrival_s[i])),
                        repr(float(table.duration_s[i])), int(table.gpus[i])))


def env_for(variant: str, shim_dir: str) -> dict:
    env = dict(os.environ)
    env.pop("EVALSTOP_JIT", None)
    if variant == "jit0":
        env["EVALSTOP_JIT"] = "0"
    elif variant == "nonumba":
        env["PYTHONPATH"] = os.pathsep.join(p for p in (shim_dir, env.get("PYTHONPATH")) if p)
    return env


def run_once(args: list[str], env: dict, tmp: str, importtime: bool = False):
    """(CPU-s, wall-s, digest of what it wrote or printed, whether numba was imported)."""
    out = os.path.join(tmp, "out.csv")
    outdir = os.path.join(tmp, "outdir")
    argv = [{"OUT": out, "OUTDIR": outdir}.get(a, a) for a in args]
    cmd = [sys.executable] + (["-X", "importtime"] if importtime else []) + \
        ["-m", "evalstop"] + argv
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): "
                         f"{proc.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if "OUT" in args:
        with open(out, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    elif "OUTDIR" in args:  # the report holds timings: compare the per-run results
        with open(os.path.join(outdir, "main_runs.csv"), "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
    else:
        digest = hashlib.sha256(proc.stdout).hexdigest()
    numba = importtime and any(line.rsplit("|", 1)[-1].strip().split(".")[0] == "numba"
                               for line in proc.stderr.decode().splitlines()
                               if line.startswith("import time:"))
    return cpu, wall, digest, numba


def check_shim(shim_dir: str) -> None:
    code = ("import importlib.util, sys\n"
            "assert importlib.util.find_spec('numba') is None\n"
            "try:\n import numba\nexcept ModuleNotFoundError:\n sys.exit(0)\nsys.exit(1)\n")
    if subprocess.run([sys.executable, "-c", code], env=env_for("nonumba", shim_dir)).returncode:
        raise SystemExit("the nonumba shim did not hide numba")


def summary(name, args, times, variants) -> dict:
    """Medians, least values and the fast/other ratios of one command."""
    row = {"command": name, "argv": " ".join(args), "rounds": len(times[variants[0]])}
    for v in variants:
        cpu = [c for c, _ in times[v]]
        wall = [w for _, w in times[v]]
        row.update({f"cpu_s_{v}": round(statistics.median(cpu), 3),
                    f"cpu_min_{v}": round(min(cpu), 3),
                    f"wall_s_{v}": round(statistics.median(wall), 3),
                    f"wall_min_{v}": round(min(wall), 3),
                    f"cpu_runs_{v}": [round(c, 3) for c in cpu]})
    if "fast" in variants:
        for v in variants:
            if v == "fast":
                continue
            paired = [f[0] / o[0] for f, o in zip(times["fast"], times[v])]
            row[f"ratio_{v}"] = round(row["cpu_s_fast"] / row[f"cpu_s_{v}"], 3)
            row[f"wall_ratio_{v}"] = round(row["wall_s_fast"] / row[f"wall_s_{v}"], 3)
            row[f"paired_{v}"] = [round(min(paired), 3), round(statistics.median(paired), 3),
                                  round(max(paired), 3)]
            slower = sum(p > 1.0 for p in paired)
            row[f"slower_rounds_{v}"] = slower
            row[f"verdict_{v}"] = sign_test(slower, sum(p < 1.0 for p in paired))
    return row


def sign_test(more: int, fewer: int, level: float = 0.05) -> str:
    """``slower``, ``faster`` or ``even``: the two-sided sign test of ``more`` rounds
    slower against ``fewer`` faster (ties left out)."""
    n, top = more + fewer, max(more, fewer)
    p = min(1.0, 2 * sum(math.comb(n, i) for i in range(top, n + 1)) / 2 ** n) if n else 1.0
    if p > level:
        return "even"
    return "slower" if more > fewer else "faster"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default="builtin:philly")
    ap.add_argument("--gpus", type=int, default=512, help="GPUs for the trace (default 512)")
    ap.add_argument("--head-jobs", type=int, default=3000,
                    help="jobs of simulate-long-evals: the trace's first N (default 3000)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--repeat-heavy", type=int, default=3)
    ap.add_argument("--heavy-s", type=float, default=4.0)
    ap.add_argument("--commands", default=None, help="comma-separated names (see --list)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", metavar="PATH", help="also write the figures here (JSON)")
    args = ap.parse_args()
    variants = args.variants.split(",")
    if set(variants) - set(VARIANTS):
        ap.error(f"--variants: known are {', '.join(VARIANTS)}")
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(tmp, args.trace, args.gpus)
        if args.list:
            print("\n".join(f"{k:28s} evalstop {' '.join(v)}" for k, v in cmds.items()))
            return
        names = list(cmds) if args.commands is None else args.commands.split(",")
        unknown = [n for n in names if n not in cmds]
        if unknown:
            ap.error(f"--commands: unknown {', '.join(unknown)} (see --list)")
        trace = write_inputs(tmp, args.trace, args.head_jobs)
        cmds = commands(tmp, trace, args.gpus)
        shim = os.path.join(tmp, "shim")
        os.mkdir(shim)
        with open(os.path.join(shim, "sitecustomize.py"), "w") as fh:
            fh.write(HIDE_NUMBA)
        check_shim(shim)
        import numba

        result = {"load_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count(),
                  "python": sys.version.split()[0], "numba": numba.__version__,
                  "trace": trace_name(args.trace), "gpus": args.gpus, "head_jobs": args.head_jobs,
                  "repeat": args.repeat, "repeat_heavy": args.repeat_heavy,
                  "variants": variants, "imports_numba": {},
                  "load_by_round": []}
        print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}, "
              f"{os.cpu_count()} CPUs, Python {result['python']}, numba {numba.__version__}",
              flush=True)
        repeat = dict.fromkeys(names, args.repeat)
        if not args.no_warmup:
            for name in names:
                seen, cpu = {}, 0.0
                for v in variants:
                    if v != "nonumba":
                        c, _, _, seen[v] = run_once(cmds[name], env_for(v, shim), tmp, True)
                        cpu = max(cpu, c)
                result["imports_numba"][name] = seen
                if cpu > args.heavy_s:
                    repeat[name] = args.repeat_heavy
                print(f"warm-up {name}: {cpu:.1f} CPU-s, imports numba {seen}, "
                      f"{repeat[name]} rounds", flush=True)
        times = {(n, v): [] for n in names for v in variants}
        for r in range(max(repeat.values())):
            for i, name in enumerate(names):
                if r >= repeat[name]:
                    continue
                k = (r + i) % len(variants)
                digests = set()
                for v in variants[k:] + variants[:k]:
                    cpu, wall, digest, _ = run_once(cmds[name], env_for(v, shim), tmp)
                    times[name, v].append((cpu, wall))
                    digests.add(digest)
                if len(digests) != 1:
                    raise SystemExit(f"{name}: the installs {variants} gave different results")
            result["load_by_round"].append([round(x, 2) for x in os.getloadavg()])
            print(f"round {r + 1}/{max(repeat.values())} done, load average "
                  f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
        rows = [summary(n, cmds[n], {v: times[n, v] for v in variants}, variants)
                for n in names]
    result["rows"] = rows
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    report(rows, variants)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


def report(rows, variants) -> None:
    others = [v for v in variants if v != "fast"] if "fast" in variants else []
    print("\nwhole process, CPU-s (user + system), median of the alternated rounds")
    print(f"{'command':28s}{'rounds':>7s}" + "".join(f"{v:>10s}" for v in variants)
          + "".join(f"{'fast/' + v:>22s}" for v in others))
    for row in rows:
        line = f"{row['command']:28s}{row['rounds']:7d}" + "".join(f"{row[f'cpu_s_{v}']:10.2f}" for v in variants)
        for v in others:
            lo, _, hi = row[f"paired_{v}"]
            line += f"  {row[f'ratio_{v}']:5.2f}x ({lo:.2f}-{hi:.2f}) {row[f'verdict_{v}']:6s}"
        print(line)
    print("(fast/X: ratio of the medians, in brackets the least and largest paired ratio)")


if __name__ == "__main__":
    main()
