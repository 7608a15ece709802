"""The shadow score: what a stop that a rule would have made costs the tenant and frees
the platform, judged once the job has ended.

For each (job, rule) whose job ran to its end, with the rule's would-be stop at eval
index ``s`` (its stop step) and its kept checkpoint at eval index ``k`` (its best step),
in a run of ``n`` evals:

* **freed**: the ``n - 1 - s`` evals after the stop (``metrics.harm``'s saved intervals),
  the wall time from the stop to the job's end, and GPU-hours where the job's GPU count
  is known (GPUs x that wall time);
* **tenant cost**: ``metrics.tenant_harm``'s loss, computed by that very code: the
  smoothed level of the kept checkpoint against the level the run reached by its end, as a
  share of the run's gain;
* **verdict**, with the tenant-harm threshold ``TENANT_TOL`` (5% of the gain) both ways:
  **harmful** when the cost is above it (tenant-harm's harmful stop), **right** when the
  cost is below minus it (the run fell and stayed down: the kept checkpoint beats its end
  by more than 5% of the gain), **neutral** otherwise (also a run that never gained).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

import numpy as np

from evalstop.metrics.tenant_harm import TENANT_TOL, tenant_harm

VERDICTS = ("right", "harmful", "neutral")


def verdict(loss: float, tol: float = TENANT_TOL) -> str:
    """``right``, ``harmful`` or ``neutral`` for a stopped run's tenant cost (NaN: no
    gain, nothing to lose: neutral)."""
    if not math.isfinite(loss):
        return "neutral"
    if loss > tol:
        return "harmful"
    if loss < -tol:
        return "right"
    return "neutral"


@dataclass(frozen=True, slots=True)
class Stop:
    """A rule's would-be stop on a run: the eval indices of the stop and of the kept
    checkpoint."""

    stop_idx: int
    kept_idx: int


def costs(runs: Sequence[tuple[Sequence[float], Sequence[Stop | None]]]
          ) -> list[list[float]]:
    """The tenant cost (``tenant_harm`` loss) of each stop on each run, for runs given as
    (scores, stops): NaN where a run never gained, 0 for a rule that did not stop it. All
    runs are scored in one call (one row per run and rule, ragged runs NaN-padded)."""
    rows = [(scores, stop) for scores, stops in runs if len(scores) for stop in stops]
    out_flat: list[float] = []
    if rows:
        width = max(len(sc) for sc, _ in rows)
        table = np.full((len(rows), width), np.nan)
        for i, (sc, _) in enumerate(rows):
            table[i, :len(sc)] = sc
        stopped = np.array([s is not None for _, s in rows])
        kept = np.array([0 if s is None else s.kept_idx for _, s in rows], np.int64)
        n = np.array([len(sc) for sc, _ in rows], np.int64)
        th = tenant_harm(table, stopped, kept, np.zeros(len(rows), bool), n_evals=n)
        out_flat = [float(x) for x in th.loss]
    out, i = [], 0
    for scores, stops in runs:
        if not len(scores):  # no eval at all: nothing to judge
            out.append([math.nan] * len(stops))
            continue
        out.append(out_flat[i:i + len(stops)])
        i += len(stops)
    return out


def index_of(steps: Sequence[int], step: int | None) -> int | None:
    """The eval index of ``step`` in a run's sorted ``steps`` (None if absent)."""
    if step is None:
        return None
    i = int(np.searchsorted(np.asarray(steps, np.int64), step))
    return i if i < len(steps) and steps[i] == step else None


def summarise(scores: Iterable[dict[str, Any]],
              pending: Iterable[tuple[str, str, bool]] = ()) -> list[dict[str, Any]]:
    """Per (tenant, rule): the runs followed to their end, the shadow stops among them and
    their verdicts, what they would have freed and the median tenant cost; ``pending``
    are (tenant, rule, live) of stops whose job has not ended yet. Stops on a job that a
    live stop cut short (``censored``) are counted apart: their end is not the run's."""
    out: dict[tuple[str, str], dict[str, Any]] = {}

    def entry(tenant: str, rule: str, live: bool) -> dict[str, Any]:
        e = out.get((tenant, rule))
        if e is None:
            e = out[(tenant, rule)] = {
                "tenant": tenant, "rule": rule, "live": live, "runs": 0, "stops": 0,
                **{v: 0 for v in VERDICTS}, "evals_freed": 0, "wall_s_freed": 0.0,
                "gpu_hours_freed": 0.0, "gpu_hours_unknown": 0, "median_cost": None,
                "pending": 0, "censored": 0, "_costs": []}
        e["live"] = e["live"] or live
        return e

    for r in scores:
        e = entry(r["tenant"], r["rule"], bool(r["live"]))
        if r["censored"]:
            e["censored"] += 1
            continue
        e["runs"] += 1
        if not r["stopped"]:
            continue
        e["stops"] += 1
        e[r["verdict"]] += 1
        e["evals_freed"] += r["evals_after"]
        e["wall_s_freed"] += r["wall_s"] or 0.0
        if r["gpu_hours"] is None:
            e["gpu_hours_unknown"] += 1
        else:
            e["gpu_hours_freed"] += r["gpu_hours"]
        if r["loss"] is not None and math.isfinite(r["loss"]):
            e["_costs"].append(r["loss"])
    for tenant, rule, live in pending:
        entry(tenant, rule, live)["pending"] += 1
    rows = []
    for key in sorted(out):
        e = out[key]
        c = e.pop("_costs")
        e["median_cost"] = float(median(c)) if c else None
        rows.append(e)
    return rows
