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
from collections.abc import Sequence
from dataclasses import dataclass

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
