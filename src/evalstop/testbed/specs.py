"""A workload's jobs as worker specs: each job's eval times scaled to wall seconds, with the
very scores, losses and proxies the simulator draws for it.

A job is evaluated at each point of the workload's eval grid (progress fractions), so its
``j``-th eval falls ``eval_progress[j] * duration`` after its start, step ``j + 1``, as the
simulator feeds its detectors (``evalstop.sim.stops``). The last eval is the job's end.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from evalstop.errors import InputError
from evalstop.fileio import atomic_write
from evalstop.workload.model import Workload

HOUR_S = 3600.0
# Job and tenant names become file names, Slurm job names and action operands.
SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$")


def check_names(workload: Workload) -> None:
    for kind, names in (("job", workload.job_id), ("tenant", workload.tenant.tolist())):
        for name in names:
            if not SAFE_NAME.match(str(name)):
                raise InputError(f"{kind} name {str(name)[:60]!r} cannot be replayed on Slurm "
                                 "(letters, digits, '_', '.', '-'; at most 100; not starting "
                                 "with '.' or '-')")


def to_wall(sim_s, hour_s: float):
    """Simulated seconds as wall seconds at ``hour_s`` wall seconds per simulated hour."""
    return np.asarray(sim_s, dtype=float) * (hour_s / HOUR_S)


def job_spec(workload: Workload, i: int, hour_s: float) -> dict:
    dur = float(to_wall(workload.duration_s[i], hour_s))
    grid = np.asarray(workload.eval_progress, dtype=float)

    def row(table):
        return [None if not np.isfinite(x) else float(x) for x in np.asarray(table[i], float)]

    return {"job": workload.job_id[i], "tenant": str(workload.tenant[i]),
            "gpus": int(workload.gpus[i]), "duration": dur,
            "t": (grid * dur).tolist(), "step": list(range(1, len(grid) + 1)),
            "eval": [float(x) for x in workload.eval_obs[i]], "loss": row(workload.loss),
            "proxy": row(workload.proxy), "progress": grid.tolist()}


def write_specs(workload: Workload, folder: Path, hour_s: float) -> list[Path]:
    check_names(workload)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(workload.n_jobs):
        path = folder / f"{workload.job_id[i]}.json"
        with atomic_write(path) as fh:
            json.dump(job_spec(workload, i, hour_s), fh)
        paths.append(path)
    return paths
