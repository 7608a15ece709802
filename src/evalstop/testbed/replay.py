"""A workload replayed on a Slurm cluster (the testbed's or a real one): each job submitted
at its scaled arrival time, optionally with ``evalstop watch`` following the eval logs and
cancelling stopped jobs through the packaged Slurm action (``evalstop action slurm``, by
the job id each worker writes into its records), so a replay from a ``pip install .``
enforces its stops; :func:`failed_actions` tells those that did not run.

Folder of one replay::

    specs/JOB.json          the worker's spec (evalstop.testbed.specs)
    logs/TENANT/JOB.jsonl   eval logs, as evalstop watch follows them (tenant = first folder)
    ckpt/TENANT/JOB/        the worker's checkpoints (checkpoint-STEP)
    out/                    the jobs' stdout
    plan.json               time zero, scale, and per job its Slurm id, planned and actual
                            submission times
    watch.db, watch.log     the controller's state and output (with a detector)
    sacct.txt               Slurm's accounting of the jobs (sacct --parsable2)
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from evalstop.fileio import atomic_write
from evalstop.testbed import sacct
from evalstop.testbed.specs import to_wall, write_specs
from evalstop.testbed.submit import SubmitOptions, sbatch, sbatch_argv, worker_command
from evalstop.workload.model import Workload


def default_action() -> str:
    """The packaged Slurm action, run by this Python (braces in its path escaped)."""
    python = shlex.join([sys.executable, "-m", "evalstop"]).replace("{", "{{").replace("}", "}}")
    return (f"{python} action slurm --tenant {{tenant}} --job-id {{job_id}} --job {{job}} "
            "--stop-step {stop_step} --best-step {best_step} --best-checkpoint "
            "{best_checkpoint}")


def _actions(folder: Path, statuses: tuple[str, ...]):
    from evalstop.integrations.watch.store import StateStore

    if not (folder / "watch.db").exists():
        return []
    store = StateStore(str(folder / "watch.db"), readonly=True)
    try:
        return [a for a in store.actions() if a.status in statuses]
    finally:
        store.close()


def failed_actions(folder: Path) -> list[tuple[str, int | None, str]]:
    """The replay's stop actions that did not end well, as (job, exit status, last line
    of output): failed, of unknown outcome, or never finished."""
    rows = _actions(folder, ("failed", "unknown", "pending", "running"))
    return [(a.job, a.rc, (a.output.strip().splitlines() or [a.status])[-1]) for a in rows]


def settle_actions(folder: Path, poll_s: float, grace_s: float = 30.0) -> None:
    """Wait (at most ``grace_s``) until the controller has run every action it decided: a
    stop decided on a job's last evals is still to be acted on when the job ends."""
    deadline = time.monotonic() + grace_s
    while _actions(folder, ("pending", "running")) and time.monotonic() < deadline:
        time.sleep(min(poll_s, 0.5))


@dataclass
class ReplayRun:
    folder: Path
    hour_s: float
    t0: float = 0.0  # wall time (epoch s) of simulated time 0
    ids: dict[str, int] = field(default_factory=dict)  # job -> Slurm job id
    submitted: dict[str, float] = field(default_factory=dict)  # job -> wall time of sbatch
    watch_pid: int | None = None

    def plan(self) -> dict:
        return {"t0": self.t0, "hour_s": self.hour_s, "ids": self.ids,
                "submitted": self.submitted}


def start_watch(folder: Path, detector: str, env: dict, poll_s: float,
                action: str | None = None) -> subprocess.Popen:
    """``evalstop watch`` on the replay's logs: one controller, its own state file."""
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "evalstop", "watch", "--jsonl", str(folder / "logs"),
            "--db", str(folder / "watch.db"), "--detector", detector,
            "--interval", str(poll_s),
            "--checkpoint-template", f"{folder}/ckpt/{{tenant}}/{{job}}/checkpoint-{{best_step}}",
            "--action", action or default_action()]
    env = {**env, "EVALSTOP_NOTES": str(folder / "notes.tsv"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2]),
                                                      env.get("PYTHONPATH", "")) if p)}
    log = open(folder / "watch.log", "ab")  # noqa: SIM115 (the child keeps it; closed below)
    try:
        return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        log.close()


def stop_process(proc: subprocess.Popen, timeout_s: float = 15.0) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def submit_all(workload: Workload, folder: Path, hour_s: float, env: dict,
               opts: SubmitOptions | None = None, lead_s: float = 1.0,
               run: ReplayRun | None = None, checkpoints: bool = True) -> ReplayRun:
    """Submit every job at ``t0 + its scaled arrival`` (in arrival order; a job whose time
    has passed goes at once). ``run`` is filled in as jobs go, so a caller can watch it."""
    opts = opts or SubmitOptions()
    for sub in ("logs", "ckpt", "out"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    specs = write_specs(workload, folder / "specs", hour_s)
    run = run or ReplayRun(folder=folder, hour_s=hour_s)
    arrival = to_wall(workload.arrival_s, hour_s)
    run.t0 = time.time() + lead_s
    for i in range(workload.n_jobs):
        job, tenant = workload.job_id[i], str(workload.tenant[i])
        wait = run.t0 + float(arrival[i]) - time.time()
        if wait > 0:
            time.sleep(wait)
        ckpt = folder / "ckpt" / tenant / job if checkpoints else None
        command = worker_command(specs[i], folder / "logs" / tenant / f"{job}.jsonl", ckpt)
        argv = sbatch_argv(job, tenant, int(workload.gpus[i]), command, folder / "out", opts)
        run.submitted[job] = time.time()
        run.ids[job] = sbatch(argv, env)
    write_plan(run)
    return run


def write_plan(run: ReplayRun) -> None:
    with atomic_write(run.folder / "plan.json") as fh:
        json.dump(run.plan(), fh, indent=1)


def read_plan(folder: Path) -> ReplayRun:
    data = json.loads((folder / "plan.json").read_text())
    return ReplayRun(folder=folder, hour_s=float(data["hour_s"]), t0=float(data["t0"]),
                     ids={k: int(v) for k, v in data["ids"].items()},
                     submitted={k: float(v) for k, v in data["submitted"].items()})


def wait_done(ids, env: dict, timeout_s: float, poll_s: float = 0.5) -> None:
    """Until none of ``ids`` is pending or running (squeue), or raise TimeoutError."""
    want = {str(i) for i in ids}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True,
                           text=True, timeout=30, check=False)
        if r.returncode == 0 and not want & set(r.stdout.split()):
            return
        time.sleep(poll_s)
    raise TimeoutError(f"jobs still queued or running after {timeout_s:.0f} s")


def cancel(ids, env: dict) -> None:
    """``scancel`` the replay's own jobs (those still held; the others are left as they
    ended): a replay that fails or times out leaves nothing running behind it."""
    ids = [str(i) for i in ids]
    if ids:
        subprocess.run(["scancel", *ids], env=env, capture_output=True, text=True,
                       timeout=60, check=False)


def replay(workload: Workload, folder: Path, hour_s: float, env: dict, *,
           detector: str | None = None, poll_s: float = 1.0, action: str | None = None,
           opts: SubmitOptions | None = None, timeout_s: float = 3600.0,
           ticker=None) -> ReplayRun:
    """Submit the workload, wait for every job to end, export Slurm's accounting to
    ``sacct.txt``; with ``detector``, ``evalstop watch`` runs alongside (stopped by pid).
    ``timeout_s`` bounds the whole replay, submissions included: past it the jobs still
    held are cancelled and ``TimeoutError`` raised (as on any failure, the jobs already
    submitted are cancelled). ``ticker`` (``ReplayTicker``) reports progress meanwhile."""
    began = time.monotonic()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "logs").mkdir(exist_ok=True)
    watch = None if detector is None else start_watch(folder, detector, env, poll_s, action)
    run = ReplayRun(folder=folder, hour_s=hour_s, watch_pid=watch and watch.pid)
    if ticker is not None:
        ticker.start(run, env)
    try:
        submit_all(workload, folder, hour_s, env, opts, run=run)
        wait_done(run.ids.values(), env, max(0.0, timeout_s - (time.monotonic() - began)))
        if watch is not None:
            time.sleep(poll_s)  # the controller's last poll reads the last records
            settle_actions(folder, poll_s)
    except BaseException:
        cancel(run.ids.values(), env)
        raise
    finally:
        if ticker is not None:
            ticker.stop()
        if watch is not None:
            stop_process(watch)
    sacct.export(run.ids.values(), env, folder / "sacct.txt")
    return run
