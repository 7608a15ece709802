"""The same job list in the simulator and on Slurm, job by job and in aggregate.

The simulator runs the workload under ``fifo`` (Slurm's ``sched/builtin`` with
``priority/basic``: strict order of submission, no backfill), wrapped in EvalStop with the
same rule when the replay had a controller.

Why a job's JCT differs, in wall seconds, and the tolerance that follows:

* Slurm keeps whole seconds: each of a job's start and end is floored (< 1 s each);
* Slurm starts a job a moment after it is submitted or after the GPUs it waits for are
  freed (its scheduling latency: observed at most about 1 s with the testbed's settings);
* a stop reaches Slurm only at the controller's next poll after the eval record is
  written, plus the action's own time (squeue, scontrol, scancel: well under a second);
* submission lag: sbatch of a burst of arrivals runs one after another.

Each of these delays a job's end, and every job that started on the GPUs it freed inherits
that delay. So a job's tolerance is ``(1 + depth) * (poll_s + 2 s + submit lag)``, where
``depth`` is the number of job ends its start waited on, transitively (0 for a job that
started at its arrival), the larger of the simulation's count and Slurm's: a job that
starts on arrival in the simulation may wait on Slurm, behind jobs that ended later there.
The 2 s is one second of rounding and one of scheduling latency per link.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from evalstop.metrics import run_metrics
from evalstop.schedulers import build
from evalstop.sim.engine import simulate
from evalstop.sim.result import SimResult
from evalstop.testbed.measure import JobRecord
from evalstop.testbed.specs import to_wall
from evalstop.workload.model import Workload

LINK_S = 2.0  # wall seconds per link: 1 s of sacct's rounding + 1 s of Slurm's latency


def simulated(workload: Workload, n_gpus: int, detector: str | None,
              extra_s: float = 0.0) -> SimResult:
    """The simulator's run; ``extra_s`` (simulated seconds) is added to every job's
    duration: Slurm's own cost per job (``slurm_overheads``), when asked."""
    if extra_s:
        workload = replace(workload, duration_s=workload.duration_s + extra_s)
    return simulate(workload, n_gpus, build("fifo", detector), restart_overhead_s=0.0,
                    record_timeline=False)


def slurm_overheads(workload: Workload, real: SimResult, recs: dict[str, JobRecord],
                    hour_s: float) -> dict[str, float]:
    """What Slurm adds per job, in wall seconds, measured on its records: ``run_s``, the
    median of (run time - duration) of the jobs that completed (launch and teardown), and
    ``gap_s``, the median time from the last end before a waiting job's start to that start
    (the scheduling cycle). Both are floored to whole seconds by sacct, so each is a median
    of values spread over about a second."""
    start, finish = np.asarray(real.start_s), np.asarray(real.finish_s)
    per = hour_s / 3600.0
    done = np.array([recs[j].state == "COMPLETED" for j in workload.job_id])
    run = ((finish - start) - np.asarray(workload.duration_s))[done] * per
    gaps = []
    arrival = np.asarray(workload.arrival_s)
    for i in range(workload.n_jobs):
        if start[i] - arrival[i] <= LINK_S / per:
            continue  # started on arrival (within the rounding): it waited on no one
        before = finish[finish <= start[i] + 1e-9]
        if before.size:
            gaps.append((start[i] - before.max()) * per)
    return {"run_s": float(np.median(run)) if run.size else 0.0,
            "gap_s": float(np.median(gaps)) if gaps else 0.0}


def depths(workload: Workload, res: SimResult) -> np.ndarray:
    """Per job: how many job ends its start waited on, transitively (0: started on
    arrival)."""
    start, finish = np.asarray(res.start_s), np.asarray(res.finish_s)
    arrival = np.asarray(workload.arrival_s)
    order = np.argsort(start, kind="stable")
    depth = np.zeros(workload.n_jobs, dtype=np.int64)
    for i in order.tolist():
        if start[i] <= arrival[i] + 1e-9:
            continue
        gate = np.flatnonzero(np.abs(finish - start[i]) <= 1e-6 * max(1.0, start[i]))
        depth[i] = 1 + (int(depth[gate].max()) if gate.size else 0)
    return depth


def real_depths(workload: Workload, real: SimResult, hour_s: float,
                slack_s: float = LINK_S) -> np.ndarray:
    """``depths`` on Slurm's records, whose times are whole seconds: a job waited when it
    started more than ``slack_s`` (wall) after its arrival, on the jobs that ended within
    ``slack_s`` before its start."""
    slack = slack_s * 3600.0 / hour_s
    start, finish = np.asarray(real.start_s), np.asarray(real.finish_s)
    arrival = np.asarray(workload.arrival_s)
    depth = np.zeros(workload.n_jobs, dtype=np.int64)
    for i in np.argsort(start, kind="stable").tolist():
        if start[i] <= arrival[i] + slack:
            continue
        gate = np.flatnonzero((finish <= start[i] + 1e-9) & (finish >= start[i] - slack))
        depth[i] = 1 + (int(depth[gate].max()) if gate.size else 0)
    return depth


def per_job(workload: Workload, sim: SimResult, real: SimResult, recs: dict[str, JobRecord],
            submitted: dict[str, float], t0: float, hour_s: float,
            poll_s: float) -> list[dict]:
    """One row per job: start and JCT in both (wall seconds), the stop steps, the
    difference and its tolerance."""
    arrival_wall = to_wall(workload.arrival_s, hour_s)
    d = np.maximum(depths(workload, sim), real_depths(workload, real, hour_s))
    rows = []
    for i, job in enumerate(workload.job_id):
        lag = max(0.0, submitted[job] - (t0 + float(arrival_wall[i])))
        sim_jct = float(to_wall(sim.finish_s[i] - workload.arrival_s[i], hour_s))
        real_jct = float(to_wall(real.finish_s[i] - workload.arrival_s[i], hour_s))
        tol = (1 + int(d[i])) * (poll_s + LINK_S + lag)
        r = recs[job]
        sim_step = int(sim.stop_eval[i]) + 1 if sim.stopped[i] else None
        rows.append({
            "job": job, "tenant": str(workload.tenant[i]), "gpus": int(workload.gpus[i]),
            "hacking": bool(workload.hacking[i]), "state": r.state,
            "sim_start_s": round(float(to_wall(sim.start_s[i], hour_s)), 3),
            "real_start_s": round(float(to_wall(real.start_s[i], hour_s)), 3),
            "sim_jct_s": round(sim_jct, 3), "real_jct_s": round(real_jct, 3),
            "d_jct_s": round(real_jct - sim_jct, 3),
            "sim_stop_step": sim_step, "real_stop_step": r.stop_step,
            "why": _why(workload, i, sim_step, r.stop_step, hour_s, poll_s),
            "submit_lag_s": round(lag, 3),
            "depth": int(d[i]), "tolerance_s": round(tol, 3),
            "within": abs(real_jct - sim_jct) <= tol})
    return rows


ACTION_S = 1.0  # wall seconds for the action (squeue, scontrol, scancel) to cancel a job


def _why(workload: Workload, i: int, sim_step, real_step, hour_s: float, poll_s: float) -> str:
    """Why the two stop steps differ ("" when they agree): a stop too close to the job's
    end for the controller to act before the job ends by itself."""
    if sim_step == real_step:
        return ""
    if sim_step is not None and real_step is None:
        left = float(to_wall(workload.duration_s[i], hour_s)) * (
            1.0 - float(workload.eval_progress[sim_step - 1]))
        if left <= poll_s + ACTION_S:
            return (f"stop {left:.2f} s before the job's end, within one poll "
                    f"({poll_s:g} s) and the action ({ACTION_S:g} s): it ended first")
    return "unexplained"


AGG = ("jct_mean_s", "jct_p50_s", "jct_p95_s", "waste_gpu_h", "gpu_h", "makespan_s",
       "n_stopped", "tp", "fp", "precision", "recall", "fpr", "harmful", "harmful_rate")


def aggregate(workload: Workload, res: SimResult) -> dict[str, float]:
    m = run_metrics(workload, res)
    out = {}
    for key in AGG:
        if key in m:
            out[key] = float(m[key])
    out["n_stopped"] = int(np.count_nonzero(res.stopped))
    return out
