"""``evalstop testbed``: a local Slurm cluster (up, down) and a workload replayed on any
Slurm cluster, measured from sacct against the simulator."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from evalstop.errors import InputError


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "testbed",
        help="a local Slurm cluster with fake GPUs, and workload replays on Slurm",
        description=(
            "Start or stop a local Slurm cluster (munge, MariaDB, slurmdbd, slurmctld and "
            "slurmd in one folder, on 127.0.0.1, GPUs as file-backed GRES, tenants as "
            "accounts), or replay a workload on a Slurm cluster (this one or a real "
            "partition): each job submitted with sbatch at its scaled arrival time under "
            "its tenant's account, running a worker that writes its eval log; with "
            "--detector, evalstop watch stops jobs through evalstop action slurm (by the "
            "job id each worker writes); a replay whose actions failed exits 1. "
            "The replay is measured from sacct and compared with the simulator job by job. "
            "Needs Debian's slurm-wlm, slurmdbd, munge and mariadb-server."),
    )
    tb = p.add_subparsers(dest="testbed_command", metavar="{up,down,replay}", required=True,
                          parser_class=type(p))
    up = tb.add_parser("up", help="start a local cluster in a folder")
    up.add_argument("--dir", required=True, metavar="DIR", help="the cluster's folder")
    up.add_argument("--gpus", type=int, default=8, metavar="N", help="fake GPUs (default 8)")
    up.add_argument("--tenants", default="a,b,c", metavar="A,B,...",
                    help="Slurm accounts to create (default a,b,c)")
    up.add_argument("--kill-wait", type=int, default=5, metavar="SECONDS",
                    help="grace between a cancel's SIGTERM and its SIGKILL (KillWait; "
                         "default 5)")
    down = tb.add_parser("down", help="stop the cluster started in a folder (by pid)")
    down.add_argument("--dir", required=True, metavar="DIR")
    rp = tb.add_parser("replay", help="replay a workload on Slurm and measure it from sacct")
    src = rp.add_mutually_exclusive_group(required=True)
    src.add_argument("--jobs", metavar="JOBS.csv", help="job trace CSV (or a sacct export)")
    src.add_argument("--preset", metavar="NAME", help="a synthetic workload of this preset")
    rp.add_argument("--n-jobs", type=int, default=200, metavar="N",
                    help="jobs of a --preset workload (default 200)")
    rp.add_argument("--gpus", type=int, required=True, metavar="N",
                    help="GPUs of the cluster (the simulator's too)")
    rp.add_argument("--hour-s", type=float, required=True, metavar="SECONDS",
                    help="wall seconds per simulated hour (e.g. 1)")
    rp.add_argument("--detector", default=None, metavar="SPEC",
                    help="run evalstop watch with this rule (e.g. default, evalstop:k=2); "
                         "omit for the base alone")
    rp.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                    help="the controller's poll interval (default 1)")
    rp.add_argument("--seed", type=int, default=0, help="seed of curves and labels")
    rp.add_argument("--out", required=True, metavar="DIR", help="the replay's folder")
    rp.add_argument("--dir", default=None, metavar="DIR",
                    help="a testbed folder to use (default: the Slurm of $SLURM_CONF or "
                         "/etc/slurm)")
    rp.add_argument("--partition", default=None, help="sbatch --partition")
    rp.add_argument("--resource", choices=("gpu", "cpu"), default="gpu",
                    help="ask GPUs as --gres=gpu:N (default) or as N CPUs, for a partition "
                         "without GPUs (the workers only sleep)")
    rp.add_argument("--timeout", type=float, default=86400.0, metavar="SECONDS",
                    help="the most the whole replay may take, submissions included; past "
                         "it the replay's jobs still held are cancelled and it fails "
                         "(default 86400)")
    return p


def run(args) -> int:
    from evalstop.testbed.cluster import TestbedError

    try:
        return _run(args)
    except (TestbedError, TimeoutError) as exc:  # the testbed's own failures: one line
        raise InputError(str(exc)) from None
    except RuntimeError as exc:  # sbatch's or sacct's refusal, in Slurm's own words
        raise InputError(str(exc).splitlines()[0]) from None


def _run(args) -> int:
    from evalstop.testbed import procs
    from evalstop.testbed.cluster import LocalCluster, check_tenants, require_slurm

    if args.testbed_command == "up":
        tenants = check_tenants([t.strip() for t in args.tenants.split(",") if t.strip()])
        cluster = LocalCluster(args.dir, gpus=args.gpus, tenants=tenants,
                               kill_wait_s=args.kill_wait)
        cluster.up()
        print(f"Slurm testbed up in {cluster.root}: {args.gpus} GPUs, accounts "
              f"{', '.join(tenants)}. Use it with:\n  export SLURM_CONF={cluster.slurm_conf}")
        return 0
    if args.testbed_command == "down":
        cluster = LocalCluster(args.dir, tenants=["x"])
        if not cluster.slurm_conf.is_file() and not procs.read_pids(cluster.root):
            raise InputError(f"--dir {args.dir}: no testbed there (nothing to stop)")
        stopped = cluster.down()
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    require_slurm()
    return _replay(args)


def _replay(args) -> int:
    import time

    import numpy as np

    from evalstop.detectors import make_detector
    from evalstop.testbed import compare, preflight, study
    from evalstop.testbed.replay import failed_actions
    from evalstop.testbed.specs import to_wall
    from evalstop.testbed.submit import SubmitOptions
    from evalstop.testbed.ticker import ReplayTicker
    from evalstop.workload import read_jobs, synthetic_workload, trace_workload

    if args.hour_s <= 0 or args.poll <= 0 or not args.timeout > 0:
        raise InputError("--hour-s, --poll and --timeout must be > 0")
    if args.gpus < 1 or args.seed < 0:
        raise InputError("--gpus must be >= 1 and --seed >= 0")
    if args.detector is not None:
        make_detector(args.detector)
    env = preflight.slurm_env(dict(os.environ), args.dir)
    out = Path(args.out).resolve()  # the jobs run elsewhere: sbatch --output must be absolute
    rng = np.random.default_rng(args.seed)
    if args.preset:
        workload = synthetic_workload(rng, n_jobs=args.n_jobs, n_gpus=args.gpus,
                                      preset=args.preset)
    else:
        workload = trace_workload(read_jobs(args.jobs), rng)
    preflight.check_cluster(env, set(workload.tenant.tolist()), int(workload.gpus.max()),
                            args.gpus, partition=args.partition, resource=args.resource)
    last_s = float(to_wall(workload.arrival_s, args.hour_s).max())
    if last_s >= args.timeout:
        raise InputError(f"--timeout {args.timeout:g} s ends before the last submission "
                         f"({last_s:.0f} s into the replay at --hour-s {args.hour_s:g})")
    out.mkdir(parents=True, exist_ok=True)  # an --out that cannot be made: before any job
    # The simulator's makespan at this time scale, plus what Slurm adds (about a fifth in
    # a busy FIFO queue, docs/testbed.md) and the controller's polls at the end.
    makespan_s = float(np.nanmax(compare.simulated(workload, args.gpus, args.detector).finish_s))
    estimate = 1.2 * to_wall(makespan_s, args.hour_s) + 5.0 + args.poll
    print(f"replay: {workload.n_jobs} jobs on {args.gpus} GPUs, about {estimate:.0f} s "
          f"(the simulator's makespan {makespan_s / 3600:.3g} h at {args.hour_s:g} s per "
          f"hour, plus Slurm's delays); at most --timeout {args.timeout:g} s",
          file=sys.stderr, flush=True)
    name, began = "replay", time.monotonic()
    try:
        got = study.run_ways(workload, out, args.gpus, args.hour_s, env,
                             poll_s=args.poll, ways=[(name, args.detector)],
                             opts=SubmitOptions(partition=args.partition,
                                                resource=args.resource),
                             timeout_s=args.timeout,
                             ticker=ReplayTicker(workload.n_jobs, estimate))
    except TimeoutError:
        raise InputError(f"--timeout {args.timeout:g} s: the replay did not end in time; "
                         f"its jobs still held were cancelled (its folder: {args.out})") from None
    w = got["ways"][name]
    real, sim = w["real"], w["sim"]
    failed = failed_actions(Path(args.out) / name) if args.detector else []
    print(json.dumps({"real": real, "sim": sim, "within": w["within"],
                      "n_jobs": w["n_jobs"]}, allow_nan=True))
    print(f"{w['n_jobs']} jobs: mean JCT {real['jct_mean_s'] / 3600:.3g} h on Slurm, "
          f"{sim['jct_mean_s'] / 3600:.3g} h simulated; {real['n_stopped']} stopped "
          f"({sim['n_stopped']} simulated); {w['within']} jobs within tolerance; took "
          f"{time.monotonic() - began:.0f} s of about {estimate:.0f} -> "
          f"{args.out}/summary.json", file=sys.stderr)
    if failed:
        job, rc, why = failed[0]
        print(f"evalstop: error: {len(failed)} stop action(s) did not stop their job (first: "
              f"{job}, exit {rc}: {why}); see {args.out}/{name}/watch.log", file=sys.stderr)
        return 1
    broken = [r for r in w["jobs"] if r["state"] not in ("COMPLETED", "CANCELLED")]
    if broken:  # a worker that could not run measures nothing: loud, not a quiet summary
        raise InputError(f"{len(broken)} of {w['n_jobs']} jobs ended {broken[0]['state']} on "
                         f"Slurm, not as the workload says (their output: "
                         f"{out / name / 'out'}/)")
    return 0
