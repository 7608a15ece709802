"""Shadow mode against the real thing, on the Slurm testbed: the GPU-hours a rule's shadow
stops would have freed, against what the same rule freed live, measured by sacct.

One local testbed (``evalstop testbed``), one workload of the ``paper`` preset replayed
twice on it: first with no stop action while ``evalstop watch`` follows the logs with the
rule in shadow (``--shadow RULE``: followed to each job's end, which the worker marks),
then with the rule live (``evalstop testbed replay --detector``: each stop
cancels the job through ``scancel``). Per job stopped both ways, the shadow's freed
GPU-seconds (GPUs x wall seconds from the stop's record to the job's last, from the
records) against the live run's (GPUs x the job's duration less its run time in sacct).
The live stop lands later than the record that decided it, by the controller's poll, the
action and the job's launch, and sacct keeps whole seconds: the tolerance per job is
``GPUs x (poll + 3 s)``. Prints the comparison as JSON (and writes it to OUT/summary.json).

    python benchmarks/bench_slurm_shadow.py --out /tmp/shadow-slurm [--n-jobs 12]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from evalstop.integrations.watch import shadow_store
from evalstop.integrations.watch.store import StateStore
from evalstop.testbed import measure
from evalstop.testbed.cluster import LocalCluster, require_slurm
from evalstop.testbed.replay import replay, stop_process
from evalstop.testbed.specs import to_wall
from evalstop.workload import synthetic_workload

SLACK_S = 3.0  # a second of sacct rounding, one of scheduling, one of the action


def shadow_way(workload, folder: Path, args, env: dict) -> dict[str, dict]:
    """Replay with no action while a controller follows the logs in shadow; per job
    stopped in shadow, its freed wall seconds and GPUs."""
    (folder / "logs").mkdir(parents=True)
    src = str(Path(__file__).resolve().parents[1] / "src")
    watch = subprocess.Popen(
        [sys.executable, "-m", "evalstop", "watch", "--jsonl", str(folder / "logs"),
         "--db", str(folder / "shadow.db"), "--shadow", args.rule,
         "--interval", str(args.poll), "--shadow-end-after", "3600"],
        env={**env, "PYTHONPATH": os.pathsep.join(p for p in (src, env.get("PYTHONPATH"))
                                                  if p)},
        stdout=subprocess.DEVNULL, stderr=open(folder / "watch.log", "wb"))  # noqa: SIM115
    try:
        replay(workload, folder, args.hour_s, env, timeout_s=args.timeout)
        time.sleep(3 * args.poll)  # the last records taken
    finally:
        stop_process(watch)
    store = StateStore(str(folder / "shadow.db"), readonly=True)
    try:
        scores = shadow_store.scores(store)
    finally:
        store.close()
    return {s["job"]: {"stop_step": s["stop_step"], "wall_s": s["wall_s"], "gpus": s["gpus"]}
            for s in scores if s["stopped"]}


def live_way(workload, folder: Path, args, env: dict) -> dict[str, dict]:
    """Replay with the rule live; per job it stopped, the wall seconds it did not run."""
    run = replay(workload, folder, args.hour_s, env, detector=args.rule, poll_s=args.poll,
                 timeout_s=args.timeout)
    recs = measure.records(folder / "sacct.txt", run.ids)
    duration = dict(zip(workload.job_id, to_wall(workload.duration_s, args.hour_s).tolist(),
                        strict=True))
    gpus = dict(zip(workload.job_id, np.asarray(workload.gpus).tolist(), strict=True))
    return {job: {"stop_step": r.stop_step, "freed_s": duration[job] - (r.end - r.start),
                  "gpus": gpus[job]}
            for job, r in recs.items() if r.stopped_by_evalstop}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--n-jobs", type=int, default=12)
    ap.add_argument("--gpus", type=int, default=16)
    ap.add_argument("--hour-s", type=float, default=2.0)
    ap.add_argument("--poll", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rule", default="evalstop:k=2")
    ap.add_argument("--timeout", type=float, default=480.0)
    args = ap.parse_args()
    require_slurm()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=False)
    workload = synthetic_workload(np.random.default_rng(args.seed), n_jobs=args.n_jobs,
                                  n_gpus=args.gpus, preset="paper")
    tenants = sorted({str(t) for t in workload.tenant})
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="tb-") as tb, \
            LocalCluster(tb, gpus=args.gpus, tenants=tenants) as cluster:
        shadow = shadow_way(workload, out / "shadow", args, cluster.env)
        live = live_way(workload, out / "live", args, cluster.env)
    both = sorted(set(shadow) & set(live))
    rows = []
    for job in both:
        s, lv = shadow[job], live[job]
        shadow_gs, live_gs = s["gpus"] * s["wall_s"], lv["gpus"] * lv["freed_s"]
        tol = lv["gpus"] * (args.poll + SLACK_S)
        rows.append({"job": job, "gpus": lv["gpus"], "stop_step": lv["stop_step"],
                     "same_step": s["stop_step"] == lv["stop_step"],
                     "shadow_gpu_s": round(shadow_gs, 1), "live_gpu_s": round(live_gs, 1),
                     "diff_gpu_s": round(shadow_gs - live_gs, 1), "tol_gpu_s": tol,
                     "within": abs(shadow_gs - live_gs) <= tol})
    sim_h = 3600.0 / args.hour_s / 3600.0  # wall GPU-seconds -> simulated GPU-hours
    summary = {
        "rule": args.rule, "n_jobs": args.n_jobs, "gpus": args.gpus, "hour_s": args.hour_s,
        "poll_s": args.poll, "seed": args.seed, "wall_s": round(time.time() - t0),
        "load_avg_1m": os.getloadavg()[0],
        "stopped_shadow": len(shadow), "stopped_live": len(live), "stopped_both": len(both),
        "only_shadow": sorted(set(shadow) - set(live)),
        "only_live": sorted(set(live) - set(shadow)),
        "shadow_gpu_h_freed": round(sum(r["shadow_gpu_s"] for r in rows) * sim_h, 2),
        "live_gpu_h_freed": round(sum(r["live_gpu_s"] for r in rows) * sim_h, 2),
        "tolerance_gpu_h": round(sum(r["tol_gpu_s"] for r in rows) * sim_h, 2),
        "within": sum(r["within"] for r in rows), "jobs": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps({k: v for k, v in summary.items() if k != "jobs"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
