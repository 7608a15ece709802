"""One job list, three ways on Slurm (the base alone, with ``evalstop watch`` on a rule, on
another rule), each measured from sacct and set beside the simulator's run of it.

``run_ways`` writes, under its folder, one replay folder per way (``evalstop.testbed.replay``)
and ``summary.json``: per way the real and simulated aggregates (``compare.AGG``, times in
simulated seconds) and the per-job rows (``compare.per_job``, wall seconds).
"""

from __future__ import annotations

import json
from pathlib import Path

from evalstop.detectors.registry import canonical
from evalstop.fileio import atomic_write
from evalstop.testbed import compare, measure
from evalstop.testbed.replay import replay
from evalstop.testbed.submit import SubmitOptions
from evalstop.workload.model import Workload

WAYS = (("base", None), ("default", "default"), ("k2", "evalstop:k=2"))


def way_result(workload: Workload, run, n_gpus: int, detector: str | None,
               poll_s: float) -> dict:
    recs = measure.records(run.folder / "sacct.txt", run.ids)
    real = measure.real_result(workload, recs, run.t0, run.hour_s, n_gpus)
    sim = compare.simulated(workload, n_gpus, detector)
    rows = compare.per_job(workload, sim, real, recs, run.submitted, run.t0, run.hour_s,
                           poll_s)
    # The rule spelled out: an alias ("default") names another rule once the default moves.
    spec = None if detector is None else canonical(detector)
    return {"detector": detector, "spec": spec, "hour_s": run.hour_s, "poll_s": poll_s,
            "real": compare.aggregate(workload, real), "sim": compare.aggregate(workload, sim),
            "overheads_s": compare.slurm_overheads(workload, real, recs, run.hour_s),
            "within": sum(r["within"] for r in rows), "n_jobs": len(rows),
            "max_abs_d_jct_s": max(abs(r["d_jct_s"]) for r in rows),
            "unexplained_stops": [r["job"] for r in rows if r["why"] == "unexplained"],
            "jobs": rows}


def run_ways(workload: Workload, folder: Path, n_gpus: int, hour_s: float, env: dict, *,
             poll_s: float = 1.0, ways=WAYS, opts: SubmitOptions | None = None,
             timeout_s: float = 3600.0, ticker=None) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    out = {"n_jobs": workload.n_jobs, "n_gpus": n_gpus, "hour_s": hour_s, "poll_s": poll_s,
           "ways": {}}
    for name, detector in ways:
        run = replay(workload, folder / name, hour_s, env, detector=detector, poll_s=poll_s,
                     opts=opts, timeout_s=timeout_s, ticker=ticker)
        out["ways"][name] = way_result(workload, run, n_gpus, detector, poll_s)
    base = out["ways"].get("base")
    if base is not None:
        for w in out["ways"].values():
            for side in ("real", "sim"):
                w[side]["gpu_h_saved"] = base[side]["gpu_h"] - w[side]["gpu_h"]
    with atomic_write(folder / "summary.json") as fh:
        json.dump(out, fh, indent=1, allow_nan=True)
    return out
