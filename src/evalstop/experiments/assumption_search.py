"""The stated search behind the ``paper-assumptions`` preset: the least-changed workload
knobs under which ``evalstop:k=2``'s main-table precision, recall and FPR hold.

What is searched: the four workload knobs only (never a detector setting), on a grid

* curve stretches ``c_late`` and ``c_decline`` in half-doublings, 1 (today's curves) to
  ``2 ** (MAX_HALF_STEPS / 2)``; lowering either can only lower precision or recall, so
  the search does not go below today's;
* ``n_evals`` in ``N_EVALS``;
* LoRA/DPO watched or not.

How "least changed" is measured: ``cost = |log2 c_late| + |log2 c_decline| +
|log2(n_evals / 20)| + (1 if LoRA/DPO are not watched)``: each doubling or halving of a
knob counts 1, and narrowing the rule to RLHF jobs counts as much as one doubling. Among
the settings of least cost that pass, the one with the largest worst margin wins.

What "hold" means: over ``n_seeds`` main-table workloads (preset ``paper``, 200 jobs, the
default noise), the 95% t-interval of the mean per-seed precision lies at or above 97%,
recall's at or above 98%, and FPR's at or below 2% (the paper reports 98.3%, 99.3% and
1.5%; its tables give no intervals, so the region is what "holds within the reported
precision" means here). Requiring the whole interval, not the mean, in the region leaves
a margin for other seeds. The search seeds (base ``SEARCH_SEED``) are not the reproduce
seeds (base 2606), on which the preset is then checked.

The rule is applied to the workloads' observed evals directly (a vectorised copy of
``evalstop:k=2``: stop at the second strict decline in a row). A k-decline rule's stops
depend on the evals alone, not on scheduling, so this equals what the simulator does;
the study check (tests) confirms it by simulation.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from evalstop.metrics.stats import mean_ci
from evalstop.workload import synthetic_workload
from evalstop.workload.curves import eval_grid
from evalstop.workload.knobs import snr_for_scale

SEARCH_SEED = 1306  # not the reproduce base seed (2606): the preset is checked on those
MAX_HALF_STEPS = 10  # stretches up to 2 ** 5 = 32
N_EVALS = (40, 20, 10, 5)
MIN_PRECISION, MIN_RECALL, MAX_FPR = 0.97, 0.98, 0.02
N_JOBS = 200
SIGMA = 0.02


@dataclass(frozen=True)
class Candidate:
    c_late: float
    c_decline: float
    n_evals: int
    watch_lora_dpo: bool

    @property
    def cost(self) -> float:
        return (abs(math.log2(self.c_late)) + abs(math.log2(self.c_decline))
                + abs(math.log2(self.n_evals / 20)) + (0.0 if self.watch_lora_dpo else 1.0))


def k2_stops(eval_obs: np.ndarray) -> np.ndarray:
    """(jobs,) whether ``evalstop:k=2`` stops each row: two strict declines in a row."""
    down = np.diff(eval_obs, axis=1) < 0
    return np.any(down[:, 1:] & down[:, :-1], axis=1)


def seed_metrics(w, watch_lora_dpo: bool) -> tuple[float, float, float]:
    """(precision, recall, FPR) of k=2 on one workload, NaN for an empty denominator."""
    stopped = k2_stops(w.eval_obs)
    if not watch_lora_dpo:
        stopped &= np.asarray(w.type) == "rlhf"
    hack = np.asarray(w.hacking, bool)
    tp, fp = int(np.sum(stopped & hack)), int(np.sum(stopped & ~hack))
    prec = tp / (tp + fp) if tp + fp else math.nan
    rec = tp / int(hack.sum()) if hack.any() else math.nan
    fpr = fp / int((~hack).sum()) if (~hack).any() else math.nan
    return prec, rec, fpr


def evaluate(c: Candidate, n_seeds: int, base_seed: int = SEARCH_SEED) -> dict:
    interval = 1.0 / c.n_evals
    late, decline = snr_for_scale(eval_grid(interval), SIGMA, c.c_late, c.c_decline)
    kw = {"eval_interval": interval, "sigma": SIGMA}
    if c.c_late != 1.0:
        kw["late_snr"] = late
    if c.c_decline != 1.0:
        kw["decline_snr"] = decline
    rows = [seed_metrics(synthetic_workload(np.random.default_rng([base_seed, s]),
                                            n_jobs=N_JOBS, preset="paper", **kw),
                         c.watch_lora_dpo) for s in range(n_seeds)]
    prec, rec, fpr = (mean_ci([r[i] for r in rows]) for i in range(3))
    margins = (prec.lo - MIN_PRECISION, rec.lo - MIN_RECALL, MAX_FPR - fpr.hi)
    return {"candidate": c, "cost": c.cost, "late_snr": late, "decline_snr": decline,
            "precision": prec, "recall": rec, "fpr": fpr, "margin": min(margins),
            "passes": all(m >= 0 for m in margins)}


def candidates() -> list[Candidate]:
    steps = [2 ** (i / 2) for i in range(MAX_HALF_STEPS + 1)]
    out = [Candidate(a, b, n, w) for a, b, n, w in
           itertools.product(steps, steps, N_EVALS, (True, False))]
    return sorted(out, key=lambda c: c.cost)


def search(n_seeds: int = 20, *, log=None) -> tuple[dict | None, list[dict]]:
    """(the chosen setting or None, every evaluated setting) in order of cost; evaluation
    stops once a cost level above the cheapest passing one is reached."""
    best, seen = None, []
    for c in candidates():
        if best is not None and c.cost > best["cost"] + 1e-9:
            break
        r = evaluate(c, n_seeds)
        seen.append(r)
        if log is not None:
            log(r)
        if r["passes"] and (best is None or r["margin"] > best["margin"]):
            best = r
    return best, seen
