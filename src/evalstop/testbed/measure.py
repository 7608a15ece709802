"""A replay measured from Slurm's accounting alone: per job its start, end and state (and
the stop the action recorded in the job's comment), in the simulator's terms, so the
simulator's own metrics apply to it.

Times are put back on the simulated clock: ``(t - t0) * 3600 / hour_s``, where ``t0`` is
the replay's time zero. A job is *stopped* when Slurm recorded it CANCELLED with a comment
naming EvalStop; its stop step and best step are read from that comment, its end progress
is its run time over its duration. Slurm counts whole seconds, so every time here is
floored to a second of wall time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from evalstop.errors import InputError
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload
from evalstop.workload.sacct import SacctRow, read_sacct_rows

_NOTE = re.compile(r"stopped by EvalStop at step (\d+|\?); best step (\d*);")


@dataclass(frozen=True)
class JobRecord:
    state: str  # sacct's State, first word (COMPLETED, CANCELLED, FAILED, ...)
    submit: float
    start: float
    end: float
    note: str  # the AdminComment (or Comment) the action wrote; "" if none
    stop_step: int | None
    best_step: int | None

    @property
    def stopped_by_evalstop(self) -> bool:
        return self.state == "CANCELLED" and self.stop_step is not None


def record_of(row: SacctRow) -> JobRecord:
    f = row.fields
    note = next((f.get(k, "") for k in ("AdminComment", "Comment") if "EvalStop" in
                 f.get(k, "")), "")
    m = _NOTE.search(note)
    stop = best = None
    if m:
        stop = None if m.group(1) == "?" else int(m.group(1))
        best = int(m.group(2)) if m.group(2) else None
        stop = -1 if stop is None else stop  # a stop whose step the action was not told
    return JobRecord(state=(f.get("State") or "").split()[0] if f.get("State") else "",
                     submit=row.submit, start=row.start, end=row.end, note=note,
                     stop_step=stop, best_step=best)


def records(path, ids: dict[str, int]) -> dict[str, JobRecord]:
    """The replay's jobs (job -> Slurm id) in the export at ``path``, by job name."""
    rows, _ = read_sacct_rows(str(path))
    by_id = {r.job_id: r for r in rows}
    out = {}
    for job, jid in ids.items():
        row = by_id.get(str(jid))
        if row is None:
            raise InputError(f"{path}: no accounting record of job {job!r} (id {jid})")
        out[job] = record_of(row)
    return out


def real_result(workload: Workload, recs: dict[str, JobRecord], t0: float,
                hour_s: float, n_gpus: int, name: str = "slurm") -> SimResult:
    """A ``SimResult`` built from Slurm's records, for ``evalstop.metrics``."""
    per = 3600.0 / hour_s
    n, last = workload.n_jobs, workload.n_evals - 1
    start, finish = np.full(n, np.nan), np.full(n, np.nan)
    stopped = np.zeros(n, dtype=bool)
    stop_eval = np.full(n, -1, dtype=np.int64)
    kept = np.full(n, last, dtype=np.int64)
    progress = np.zeros(n)
    for i, job in enumerate(workload.job_id):
        r = recs[job]
        start[i], finish[i] = (r.start - t0) * per, (r.end - t0) * per
        ran = max(0.0, r.end - r.start) * per
        if r.stopped_by_evalstop:
            stopped[i] = True
            stop_eval[i] = (r.stop_step - 1) if r.stop_step and r.stop_step > 0 else last
            kept[i] = (r.best_step - 1) if r.best_step else stop_eval[i]
            progress[i] = min(1.0, ran / float(workload.duration_s[i]))
        else:
            progress[i] = 1.0 if r.state == "COMPLETED" else min(
                1.0, ran / float(workload.duration_s[i]))
    gpu_s = np.asarray(workload.gpus, float) * np.maximum(0.0, finish - start)
    t, used = _timeline(start, finish, np.asarray(workload.gpus))
    res = SimResult(start_s=start, finish_s=finish, stopped=stopped, stop_eval=stop_eval,
                    kept_eval=kept, end_progress=progress, gpu_s=gpu_s,
                    n_preemptions=np.zeros(n, dtype=np.int64), timeline_t=t,
                    timeline_used=used, n_gpus=n_gpus, scheduler=name, detector=None)
    res._arrival = workload.arrival_s
    return res


def _timeline(start, finish, gpus):
    ok = np.isfinite(start) & np.isfinite(finish)
    times = np.concatenate([start[ok], finish[ok]])
    deltas = np.concatenate([gpus[ok], -gpus[ok]])
    order = np.lexsort((deltas, times))  # at one instant, ends before starts
    t, used = times[order], np.cumsum(deltas[order])
    return t, used.astype(np.int64)
