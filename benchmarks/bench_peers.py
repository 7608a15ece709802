"""The same jobs under FIFO in evalstop, Helios and Gavel: CPU time and schedule agreement.

    python benchmarks/bench_peers.py [--helios DIR] [--gavel DIR] [--trace builtin:philly|PATH]
        [--jobs 10000] [--gpus 1024] [--repeat 3] [--timeout 600] [--peer-python PY]
        [--out peers.json]

The peers are local checkouts (either may be left out; that peer is then skipped):

    git clone https://github.com/S-Lab-System-Group/HeliosArtifact helios
    git clone https://github.com/stanford-futuredata/gavel gavel
    python -m venv peers-venv
    peers-venv/bin/pip install pandas numpy cvxpy scikit-learn matrix_completion psutil \\
        grpcio grpcio-tools protobuf
    (cd gavel/scheduler && PATH=$PWD/../../peers-venv/bin:$PATH make rpc_stubs)

and ``--peer-python peers-venv/bin/python`` runs them in that venv (Helios needs pandas and
numpy; Gavel the rest; neither needs evalstop), leaving the project's environment alone.

The jobs are the first ``--jobs`` of the trace in submit order (``--trace``: the shipped
Philly trace, a CSV in its columns, or a job CSV as ``evalstop simulate --jobs`` reads),
seconds from the first submit. Each system gets them in its own input format:

- evalstop: a job CSV (job_id, arrival_s, duration_s, gpus) for ``evalstop simulate
  --scheduler fifo`` (the whole process: import, curves, the simulation, the CSV);
- Helios (``framework/QSSF Service``): its ``cluster_log.csv`` columns and a
  ``vc_dict_homo.pkl`` of one virtual cluster of G/8 nodes of 8 GPUs, run by
  ``peer_helios_run.py`` (Helios's own trace parser, cluster and ``simulate_vc`` with the
  ``fifo`` policy) once with its default placer, ``consolidate`` (a job of up to 8 GPUs on
  one node, larger ones on whole nodes), and once with ``random`` (free GPUs from any
  nodes: a flat pool, as evalstop's);
- Gavel (``scheduler/``): its tab-separated trace, every job a ResNet-50 (batch size 64)
  whose step count is its duration times the V100 throughput of Gavel's shipped
  ``simulation_throughputs.json`` (scale factors above 8, absent there, get the 1-GPU
  throughput in a copy of that file), run by ``peer_gavel_run.py`` (the ``main`` of
  Gavel's ``simulate_scheduler_with_trace.py``, policy ``fifo``, rounds of 360 s, its
  default ``--time_per_iteration``) on G V100s of one GPU per server.

Every system runs as its own process, in turns (the order rotates each repeat), ``--repeat``
times; a run's CPU time is the user + system time of that child and everything it waited
for (``os.wait4``); the figures are medians and each peer's ratio to evalstop. A run past
``--timeout`` seconds is killed (its process group) and reported as such.

Agreement: each job's start time in the peer against evalstop's; a job agrees when the two
differ by at most 1 s. Reported: how many agree, the median and 95th percentile of the
absolute difference, how many start later in the peer, and the GPU demands of those that
differ. Exit status 0 when every requested peer ran, 1 when one was skipped or failed
(the others still run and are written), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pickle
import platform
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HELIOS_SUBDIR = "framework/QSSF Service"
HELIOS_MARKERS = ("simulator.py", "policies/fifo.py", "policies/placer/random.py",
                  "policies/placer/consolidate.py", "utils.py", "cluster.py")
GAVEL_MARKERS = ("scheduler.py", "policies/fifo.py", "simulation_throughputs.json",
                 "scripts/drivers/simulate_scheduler_with_trace.py")
HELIOS_VC = "pool"
HELIOS_GPUS_PER_NODE = 8
HELIOS_PLACERS = ("consolidate", "random")
GAVEL_JOB = ("ResNet-50 (batch size 64)", "python3 main.py -j 2 -a resnet50 -b 64 %s/imagenet/",
             "image_classification/imagenet", "--num_minibatches")
GAVEL_ROUND_S = 360
GAVEL_RESET_S = 1920  # Gavel's default; the driver leaves it
AGREE_S = 1.0
TAIL_BYTES = 4096
HOW = {
    "helios-consolidate": "Helios's default placer puts a job of up to 8 GPUs on one node and "
                          "a larger one on whole free nodes, so a job can wait while enough GPUs "
                          "are free in total but not on one node; evalstop's pool is flat",
    "helios-random": "Helios's 'random' placer takes free GPUs from any nodes: a flat pool, "
                     "as evalstop's",
    "gavel": f"Gavel places jobs in rounds of {GAVEL_ROUND_S} s and admits a newly arrived "
             f"job only when it recomputes its allocation, at most every {GAVEL_RESET_S:,} s "
             "(its Scheduler's default minimum_time_between_allocation_resets), so a job "
             "waits for the next recomputation and the round after it",
}


class Skip(Exception):
    """A peer that cannot run: one line saying why; the others go on."""


# ---- the jobs ------------------------------------------------------------------------------

def load_jobs(trace: str, n: int):
    """The first ``n`` jobs of ``trace`` in submit order, as a JobTable."""
    from evalstop.fileio import read_regular
    from evalstop.workload import load_philly, read_job_csv
    from evalstop.workload.philly import PHILLY_COLUMNS, parse_philly

    if trace == "builtin:philly":
        return load_philly(n)
    raw = read_regular(trace, "--trace", 1 << 30)
    head = raw.split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    if tuple(head.split(",")) == PHILLY_COLUMNS:
        return parse_philly(raw.decode("utf-8"), n, name=trace)
    table = read_job_csv(trace)
    return table.take(table.arrival_order()[:n])


def rows_of(table) -> list[tuple[str, float, float, int]]:
    """(job_id, arrival_s, duration_s, gpus) per job, in the table's order, arrivals from
    the first (every system starts its clock there)."""
    first = float(min(table.arrival_s))
    return [(str(table.job_id[i]), float(table.arrival_s[i]) - first,
             float(table.duration_s[i]), int(table.gpus[i])) for i in range(len(table))]


def write_project(jobs, path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "arrival_s", "duration_s", "gpus"))
        for job_id, arrival, duration, gpus in jobs:
            w.writerow((job_id, repr(arrival), repr(duration), gpus))


def write_helios(jobs, gpus: int, folder: Path) -> None:
    """Helios's cluster_log.csv columns (submit_time in seconds, job_id the job's index)
    and a vc_dict_homo.pkl: one VC of gpus/8 nodes."""
    if gpus % HELIOS_GPUS_PER_NODE:
        raise Skip(f"--gpus {gpus} is not a multiple of {HELIOS_GPUS_PER_NODE} "
                   "(Helios's nodes hold 8 GPUs)")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "cluster_log.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "user", "vc", "jobname", "gpu_num", "state", "submit_time",
                    "duration"))
        for i, (job_id, arrival, duration, g) in enumerate(jobs):
            w.writerow((i, "u", HELIOS_VC, job_id, g, "COMPLETED", _whole(arrival, job_id),
                        _whole(duration, job_id)))
    with open(folder / "vc_dict_homo.pkl", "wb") as fh:
        pickle.dump({HELIOS_VC: gpus // HELIOS_GPUS_PER_NODE}, fh)


def _whole(seconds: float, job_id: str) -> int:
    """Helios steps its clock by 1 s and compares times for equality: whole seconds only."""
    if seconds != int(seconds):
        raise Skip(f"job {job_id}: {seconds} s is not a whole second (Helios's clock steps "
                   "by 1 s)")
    return int(seconds)


def gavel_throughputs(shipped: dict, scale_factors) -> tuple[dict, dict]:
    """(the throughputs file Gavel gets, V100 steps/s per scale factor). Scale factors the
    shipped file lacks get the 1-GPU entry: a job's steps are set from whatever rate it has,
    so the rate only scales the step count."""
    out = json.loads(json.dumps(shipped))
    v100 = out["v100"]
    rate = {}
    for sf in sorted(set(scale_factors)):
        key = str((GAVEL_JOB[0], sf))
        if key not in v100:
            v100[key] = {"null": v100[str((GAVEL_JOB[0], 1))]["null"]}
        rate[sf] = float(v100[key]["null"])
    return out, rate


def gavel_lines(jobs, rate: dict) -> list[str]:
    """Gavel's trace lines (job_type, command, working_directory, num_steps_arg,
    needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time)."""
    model, command, workdir, steps_arg = GAVEL_JOB
    return [f"{model}\t{command}\t{workdir}\t{steps_arg}\t1\t{round(d * rate[g])}\t{g}\t1\t"
            f"-1.000000\t{a:f}" for _, a, d, g in jobs]


def write_gavel(jobs, sched_dir: Path, folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    shipped = json.loads((sched_dir / "simulation_throughputs.json").read_text())
    thr, rate = gavel_throughputs(shipped, [g for *_, g in jobs])
    (folder / "throughputs.json").write_text(json.dumps(thr))
    (folder / "jobs.trace").write_text("\n".join(gavel_lines(jobs, rate)) + "\n")
    return folder / "jobs.trace", folder / "throughputs.json"


# ---- the schedules -------------------------------------------------------------------------

def project_starts(path: Path, jobs) -> list[float | None]:
    with open(path, newline="") as fh:
        got = {r["job_id"]: float(r["start_s"]) for r in csv.DictReader(fh) if r["start_s"]}
    return [got.get(job_id) for job_id, *_ in jobs]


def helios_starts(path: Path, n: int) -> list[float | None]:
    out: list[float | None] = [None] * n
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            start = float(r["start_time"])
            if start < sys.maxsize:  # never started keeps Helios's sys.maxsize
                out[int(r["job_id"])] = start
    return out


def gavel_starts(path: Path, n: int) -> list[float | None]:
    start = json.loads(path.read_text())["start"]
    return [float(start[str(i)]) if str(i) in start else None for i in range(n)]


def _percentile(sorted_xs: list[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def agreement(ours, theirs, gpus) -> dict:
    """How the peer's start times (``theirs``) compare with evalstop's (``ours``), per job."""
    both = [(o, t, g) for o, t, g in zip(ours, theirs, gpus) if o is not None and t is not None]
    diff = [t - o for o, t, _ in both]
    absd = sorted(abs(d) for d in diff)
    differ = [g for (_, _, g), d in zip(both, diff) if abs(d) > AGREE_S]
    by_gpus: dict[str, int] = {}
    for g in sorted(differ):
        by_gpus[str(g)] = by_gpus.get(str(g), 0) + 1
    later = [d for d in diff if d > AGREE_S]
    return {
        "n_jobs": len(ours), "n_compared": len(both),
        "n_unstarted_peer": sum(t is None for t in theirs),
        "n_identical": len(both) - len(differ),
        "frac_identical": round((len(both) - len(differ)) / len(both), 6) if both else None,
        "median_abs_diff_s": round(statistics.median(absd), 3) if absd else None,
        "p95_abs_diff_s": round(_percentile(absd, 0.95), 3) if absd else None,
        "max_abs_diff_s": round(absd[-1], 3) if absd else None,
        "n_later_in_peer": len(later),
        "n_earlier_in_peer": sum(d < -AGREE_S for d in diff),
        "median_delay_of_later_s": round(statistics.median(later), 3) if later else None,
        "differing_by_gpus": by_gpus,
    }


def describe(name: str, agree: dict) -> str:
    """One sentence: how the peer's schedule differs, from the figures and the mechanism."""
    n, same = agree["n_compared"], agree["n_identical"]
    if same == n:
        return f"all {n} jobs start within {AGREE_S:g} s of evalstop's. {HOW[name]}."
    return (f"{same} of {n} jobs start within {AGREE_S:g} s of evalstop's; "
            f"{agree['n_later_in_peer']} later (median {agree['median_delay_of_later_s']} s), "
            f"{agree['n_earlier_in_peer']} earlier; GPUs of those that differ: "
            f"{agree['differing_by_gpus']}. {HOW[name]}.")


# ---- running -------------------------------------------------------------------------------

def run_timed(cmd: list[str], cwd: Path, timeout: float, env=None) -> dict:
    """One child in its own process group: CPU-s (user + system, it and what it waited
    for), wall-s, exit code and the tail of its output; killed with its group past
    ``timeout``. Output goes through a pipe of which only the tail is kept: Gavel logs
    every job in every round (over 100 MB for 300 Philly jobs)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    tail, timed_out = b"", False
    fd = proc.stdout.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        chunk = os.read(fd, 1 << 16) if ready else b""
        if chunk:
            tail = (tail + chunk)[-TAIL_BYTES:]
        elif ready:  # end of output: the child has exited or closed it
            break
        if time.monotonic() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            timed_out = True
            break
    proc.stdout.close()
    while True:  # a child that closed its output may still run: the timeout holds
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if not timed_out and time.monotonic() - t0 > timeout:
            os.killpg(proc.pid, signal.SIGKILL)
            timed_out = True
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"cpu_s": ru.ru_utime + ru.ru_stime, "wall_s": time.monotonic() - t0,
            "rc": proc.returncode, "timed_out": timed_out,
            "tail": tail.decode("utf-8", "replace")}


def last_line(text: str) -> str:
    lines = [x for x in text.splitlines() if x.strip()]
    return lines[-1].strip()[:300] if lines else "(no output)"


def git_info(folder: Path) -> dict:
    def git(*a):
        r = subprocess.run(["git", "-C", str(folder), *a], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    return {"commit": git("rev-parse", "HEAD"), "date": git("log", "-1", "--format=%cI"),
            "remote": git("config", "--get", "remote.origin.url"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def peer_versions(python: str, packages) -> dict:
    code = ("import importlib.metadata as m, json, sys\n"
            "def v(p):\n try: return m.version(p)\n except Exception: return None\n"
            f"print(json.dumps({{'python': sys.version.split()[0], "
            f"**{{p: v(p) for p in {list(packages)!r}}}}}))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else {"error": r.stderr.strip()[-300:]}


def checkout(option: str, given: str | None, sub: str, markers) -> Path | None:
    """The peer's simulator folder, or None (and a line) when it was not given."""
    if given is None:
        print(f"{option.lstrip('-')}: skipped (no {option} DIR given)")
        return None
    root = Path(given).resolve()  # the peers run in their own folders
    if not root.is_dir():
        raise Skip(f"{option} {given}: no such directory")
    folder = root / sub
    missing = [m for m in markers if not (folder / m).is_file()]
    if missing:
        raise Skip(f"{option} {given}: not the expected checkout ({sub}/{missing[0]} missing)")
    return folder


def machine() -> dict:
    model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": model, "cpus": os.cpu_count(),
            "python": sys.version.split()[0]}


class System:
    def __init__(self, name, cmd, cwd, starts):
        self.name, self.cmd, self.cwd, self.starts = name, cmd, cwd, starts
        self.runs: list[dict] = []
        self.failed: str | None = None
        self.schedule = None
        self.same_every_run = True


def build_systems(args, jobs, tmp: Path, peers: dict) -> list[System]:
    here_src = HERE.parent / "src"
    env_py = sys.executable
    out_csv = tmp / "evalstop_out.csv"
    systems = [System("evalstop", [env_py, "-m", "evalstop", "simulate", "--jobs",
                                   str(tmp / "jobs.csv"), "--gpus", str(args.gpus),
                                   "--scheduler", "fifo", "--out", str(out_csv)],
                      here_src.parent, lambda: project_starts(out_csv, jobs))]
    write_project(jobs, tmp / "jobs.csv")
    n = len(jobs)
    if peers.get("helios"):
        qssf = peers["helios"]
        write_helios(jobs, args.gpus, tmp / "helios_data")
        for placer in args.helios_placers:
            logs = tmp / f"helios_log_{placer}"
            result = logs / HELIOS_VC / f"fifo_{placer}_{HELIOS_VC}_log.csv"
            systems.append(System(
                f"helios-{placer}",
                [args.peer_python, str(HERE / "peer_helios_run.py"), str(qssf),
                 str(tmp / "helios_data"), placer, str(logs)],
                qssf, lambda r=result: helios_starts(r, n)))
    if peers.get("gavel"):
        sched_dir = peers["gavel"]
        trace, thr = write_gavel(jobs, sched_dir, tmp / "gavel")
        result = tmp / "gavel" / "starts.json"
        systems.append(System(
            "gavel", [args.peer_python, str(HERE / "peer_gavel_run.py"), str(sched_dir),
                      str(trace), str(thr), str(args.gpus), str(GAVEL_ROUND_S), str(result)],
            sched_dir, lambda: gavel_starts(result, n)))
    return systems


def run_rounds(systems: list[System], repeat: int, timeout: float) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent / "src"),
                                                      env.get("PYTHONPATH")]))
    for r in range(repeat):
        k = r % len(systems)
        for s in systems[k:] + systems[:k]:
            if s.failed:
                continue
            res = run_timed(s.cmd, s.cwd, timeout, env if s.name == "evalstop" else None)
            if res["timed_out"] or res["rc"] != 0:
                why = (f"timed out after {timeout:g} s" if res["timed_out"]
                       else f"exit {res['rc']}: {last_line(res['tail'])}")
                s.failed = why
                print(f"bench_peers: error: {s.name} {why}; going on without it", flush=True)
                continue
            s.runs.append(res)
            starts = s.starts()
            if s.schedule is None:
                s.schedule = starts
            elif starts != s.schedule:
                s.same_every_run = False
            print(f"  round {r + 1}: {s.name:20s} {res['cpu_s']:8.2f} CPU-s "
                  f"{res['wall_s']:8.2f} wall-s", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--helios", metavar="DIR", help="a HeliosArtifact checkout")
    ap.add_argument("--gavel", metavar="DIR", help="a gavel checkout")
    ap.add_argument("--trace", default="builtin:philly",
                    help="builtin:philly (default), a CSV in Philly's columns, or a job CSV")
    ap.add_argument("--jobs", type=int, default=10_000, help="the first N jobs (default 10000)")
    ap.add_argument("--gpus", type=int, default=1024, help="GPUs in the pool (default 1024)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of runs (default 3)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    ap.add_argument("--peer-python", default=sys.executable,
                    help="the Python that runs the peers (default: this one)")
    ap.add_argument("--helios-placers", default=",".join(HELIOS_PLACERS), metavar="P[,P]",
                    help="Helios's placers to run (default: consolidate,random; 'random' "
                         "alone halves a long run, and is the flat pool evalstop models)")
    ap.add_argument("--out", metavar="JSON", help="also write the figures here")
    args = ap.parse_args(argv)

    def fail(msg):
        print(f"bench_peers: error: {msg}", file=sys.stderr)
        return 2
    for opt in ("jobs", "gpus", "repeat"):
        if getattr(args, opt) < 1:
            return fail(f"--{opt} must be at least 1, got {getattr(args, opt)}")
    if not args.timeout > 0:
        return fail(f"--timeout must be positive, got {args.timeout}")
    args.helios_placers = [p.strip() for p in args.helios_placers.split(",") if p.strip()]
    unknown = sorted(set(args.helios_placers) - set(HELIOS_PLACERS))
    if unknown or not args.helios_placers:
        return fail(f"--helios-placers: {', '.join(unknown) or 'none given'}; "
                    f"choose from {', '.join(HELIOS_PLACERS)}")
    # The peers run in their own folders: a relative path would be read from there.
    peer_python = shutil.which(args.peer_python)
    if peer_python is None:
        return fail(f"--peer-python {args.peer_python}: no such program")
    args.peer_python = os.path.abspath(peer_python)  # (not resolved: a venv's python is a link)
    try:
        from evalstop.fileio import check_out_file
        if args.out:
            check_out_file(args.out)
        jobs = rows_of(load_jobs(args.trace, args.jobs))
    except (ValueError, OSError) as e:
        return fail(str(e))
    if max(g for *_, g in jobs) > args.gpus:
        return fail(f"a job asks for {max(g for *_, g in jobs)} GPUs, more than --gpus "
                    f"{args.gpus}")

    problems = []
    peers, info = {}, {}
    for name, sub, markers, packages in (
            ("helios", HELIOS_SUBDIR, HELIOS_MARKERS, ("pandas", "numpy")),
            ("gavel", "scheduler", GAVEL_MARKERS, ("numpy", "cvxpy", "scikit-learn",
                                                   "matrix-completion", "grpcio", "protobuf"))):
        try:
            folder = checkout(f"--{name}", getattr(args, name), sub, markers)
            if folder is not None and name == "gavel" and not list(
                    (folder / "runtime/rpc_stubs").glob("*_pb2.py")):
                raise Skip(f"--gavel {args.gavel}: no runtime/rpc_stubs/*_pb2.py "
                           "(run `make rpc_stubs` in its scheduler/ first)")
        except Skip as e:
            print(f"bench_peers: error: {e}; going on without {name}")
            problems.append(str(e))
            continue
        if folder is not None:
            peers[name] = folder
            info[name] = {"dir": str(Path(getattr(args, name)).resolve()),
                          **git_info(Path(getattr(args, name))),
                          "versions": peer_versions(args.peer_python, packages)}

    own = git_info(HERE.parent)  # before the runs: the code that ran
    load_before = [round(x, 2) for x in os.getloadavg()]
    print(f"{len(jobs)} jobs of {args.trace} on {args.gpus} GPUs, FIFO; repeat {args.repeat}; "
          f"load average {' '.join(map(str, load_before))}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench_peers_") as tmp_name:
        tmp = Path(tmp_name)
        try:
            systems = build_systems(args, jobs, tmp, peers)
        except Skip as e:  # only Helios's converter refuses jobs
            print(f"bench_peers: error: helios: {e}; going on without it")
            problems.append(f"helios: {e}")
            peers.pop("helios", None)
            systems = build_systems(args, jobs, tmp, peers)
        run_rounds(systems, args.repeat, args.timeout)
    load_after = [round(x, 2) for x in os.getloadavg()]

    base = systems[0]
    if base.failed:
        return fail(f"evalstop simulate {base.failed}")
    ours = base.schedule
    gpus = [g for *_, g in jobs]
    base_cpu = statistics.median(r["cpu_s"] for r in base.runs)
    result = {
        "jobs": len(jobs), "trace": args.trace, "gpus": args.gpus, "repeat": args.repeat,
        "scheduler": "fifo", "timeout_s": args.timeout, "agree_within_s": AGREE_S,
        "machine": machine(), "load_before": load_before, "load_after": load_after,
        "argv": sys.argv[1:] if argv is None else list(argv),
        "evalstop": {"commit": own["commit"], "dirty": own["dirty"],
                     "cpu_s": [round(r["cpu_s"], 3) for r in base.runs],
                     "median_cpu_s": round(base_cpu, 3),
                     "median_wall_s": round(statistics.median(r["wall_s"] for r in base.runs),
                                            3)},
        "checkouts": info, "peers": {}, "problems": problems,
    }
    print(f"\nevalstop simulate: median {base_cpu:.2f} CPU-s")
    for s in systems[1:]:
        row = {"cpu_s": [round(r["cpu_s"], 3) for r in s.runs], "failed": s.failed,
               "how": HOW[s.name]}
        if s.runs:
            cpu = statistics.median(r["cpu_s"] for r in s.runs)
            agree = agreement(ours, s.schedule, gpus)
            row.update(median_cpu_s=round(cpu, 3), ratio=round(cpu / base_cpu, 1),
                       median_wall_s=round(statistics.median(r["wall_s"] for r in s.runs), 3),
                       same_schedule_every_run=s.same_every_run, agreement=agree,
                       summary=describe(s.name, agree))
            print(f"{s.name}: median {cpu:.2f} CPU-s = {cpu / base_cpu:.1f}x evalstop's "
                  f"(runs: {', '.join(format(r['cpu_s'], '.2f') for r in s.runs)})")
            print(f"  start times: {row['summary']}")
            print(f"  |difference|: median {agree['median_abs_diff_s']} s, "
                  f"p95 {agree['p95_abs_diff_s']} s, max {agree['max_abs_diff_s']} s; "
                  f"{agree['n_unstarted_peer']} never started in the peer")
        if s.failed:
            problems.append(f"{s.name}: {s.failed}")
            if not s.runs:
                print(f"{s.name}: no result ({s.failed})")
        result["peers"][s.name] = row
    for name, meta in info.items():
        print(f"{name}: {meta['remote'] or meta['dir']} at {meta['commit']} ({meta['date']}); "
              f"{meta['versions']}")
    print(f"machine: {result['machine']['cpu']}, {result['machine']['cpus']} CPUs, "
          f"{result['machine']['platform']}; load average after "
          f"{' '.join(map(str, load_after))}")
    if args.out:
        from evalstop.fileio import write_text
        write_text(args.out, json.dumps(result, indent=1) + "\n")
        print(f"-> {args.out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
