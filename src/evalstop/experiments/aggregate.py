"""Per-seed metric rows -> one summary row per (point, method, metric).

Each summary row has the mean and 95% t interval across seeds and, for a method with a
baseline, the change against that baseline on the same seeds: ``delta_pct`` is the
relative change of the means (the paper's "JCT -9.4% vs SRTF-Est"), ``delta_lo/hi`` its 95%
paired bootstrap interval, and ``p_value`` the paired Wilcoxon signed-rank test (not for
``LEVEL_ONLY`` metrics, which get the baseline's mean only). Undefined values are NaN.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from evalstop.experiments.runner import ID_COLUMNS
from evalstop.experiments.spec import Experiment
from evalstop.metrics.stats import change_ci, mean_ci, paired_wilcoxon
from evalstop.metrics.stop_cost import KEYS as STOP_COST_KEYS

# Metrics shown as levels only: a stop's harm and the compute it saved are measured against
# running to the end, so they are already a comparison; against a baseline that never stops
# (0) a relative change is undefined, and its bootstrap would cost a tenth of the summary.
LEVEL_ONLY = frozenset(STOP_COST_KEYS)

SUMMARY_COLUMNS = ("experiment", "point", "method", "x", "metric", "n", "mean", "lo", "hi",
                   "baseline", "baseline_mean", "delta_pct", "delta_lo", "delta_hi", "p_value")


def metric_names(rows: list[dict]) -> list[str]:
    """Numeric columns of the rows, in first-appearance order (identifiers excluded)."""
    seen: dict[str, None] = {}
    for r in rows:
        for k, v in r.items():
            if k not in ID_COLUMNS and isinstance(v, (int, float, np.number)) \
                    and not isinstance(v, bool):
                seen.setdefault(k, None)
    return list(seen)


def _by_seed(rows: list[dict], metric: str) -> dict[int, float]:
    return {r["seed"]: float(r.get(metric, math.nan)) for r in rows}


class _Memo:
    """The statistics of one summary, computed once per distinct input: many cells repeat
    (a baseline's metrics in every point, metrics that are 0 on every seed), and on the
    frontier study a third of the pairs and a fifth of the samples are distinct. Keyed by
    the values' bytes, so -0.0, 0.0 and every NaN stay apart."""

    def __init__(self):
        self._level: dict[bytes, object] = {}
        self._pair: dict[bytes, tuple] = {}

    def level(self, values: list[float]):
        key = np.asarray(values, dtype=float).tobytes()
        hit = self._level.get(key)
        if hit is None:
            hit = self._level[key] = mean_ci(values)
        return hit

    def change(self, a: list[float], b: list[float]) -> tuple:
        key = np.asarray(a + b, dtype=float).tobytes()
        hit = self._pair.get(key)
        if hit is None:
            hit = self._pair[key] = (change_ci(a, b), paired_wilcoxon(a, b))
        return hit


def summarize(experiment: Experiment, rows: list[dict]) -> list[dict]:
    metrics = metric_names(rows)
    memo = _Memo()
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["point"], r["method"]), []).append(r)
    out = []
    for point in experiment.points:
        for m in point.methods:
            mine = groups.get((point.label, m.label), [])
            if not mine:
                continue
            base_rows = groups.get((point.label, m.baseline), []) if m.baseline else []
            x = mine[0]["x"]
            for metric in metrics:
                ours = _by_seed(mine, metric)
                ci = memo.level(list(ours.values()))
                row = {"experiment": experiment.name, "point": point.label, "method": m.label,
                       "x": x, "metric": metric, "n": ci.n, "mean": ci.mean, "lo": ci.lo,
                       "hi": ci.hi, "baseline": m.baseline, "baseline_mean": math.nan,
                       "delta_pct": math.nan, "delta_lo": math.nan, "delta_hi": math.nan,
                       "p_value": math.nan}
                if base_rows:
                    base = _by_seed(base_rows, metric)
                    seeds = sorted(set(ours) & set(base))
                    a, b = [ours[s] for s in seeds], [base[s] for s in seeds]
                    row.update(baseline_mean=memo.level(b).mean)
                    if metric not in LEVEL_ONLY:
                        change, p = memo.change(a, b)
                        row.update(delta_pct=change.mean, delta_lo=change.lo,
                                   delta_hi=change.hi, p_value=p)
                out.append(row)
    return out


class Summary:
    """Look-up over summary rows: ``summary.get(point, method, metric)``."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self._index = {(r["point"], r["method"], r["metric"]): r for r in rows}

    def get(self, point: str, method: str, metric: str) -> dict | None:
        return self._index.get((point, method, metric))

    def getter(self, point: str, method: str):
        """``metric -> summary row`` for one (point, method)."""
        return functools.partial(self.get, point, method)

    def value(self, point: str, method: str, metric: str, field: str = "mean") -> float:
        r = self.get(point, method, metric)
        return math.nan if r is None else float(r[field])
