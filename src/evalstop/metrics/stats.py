"""Across seeds: mean with a 95% t interval, a paired test, and the relative change with a
paired bootstrap interval.

Seeds are the unit of replication: each seed is one workload, and the methods compared on
it share that workload, so a method and its baseline form pairs. Values that are not finite
(e.g. precision on a seed where nothing was stopped, NaN by convention) are left out, and
``n`` says how many seeds remained.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np


class Interval(NamedTuple):
    mean: float
    lo: float
    hi: float
    n: int


def _finite(values) -> np.ndarray:
    v = np.asarray(values, dtype=float).ravel()
    return v[np.isfinite(v)]


def mean_ci(values, level: float = 0.95) -> Interval:
    """Mean and two-sided Student-t confidence interval of the finite ``values``.

    One value gives NaN bounds (no spread to estimate); identical values a zero-width
    interval.
    """
    if not (0.0 < level < 1.0):
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    v = _finite(values)
    n = int(v.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    mean = float(v.mean())
    if n == 1:
        return Interval(mean, math.nan, math.nan, 1)
    sem = float(v.std(ddof=1)) / math.sqrt(n)
    half = _t_quantile(0.5 + level / 2.0, n - 1) * sem
    return Interval(mean, mean - half, mean + half, n)


@lru_cache(maxsize=1024)
def _t_quantile(q: float, df: int) -> float:
    # A study summarises thousands of cells with a handful of seed counts; scipy's ppf
    # costs about a millisecond a call.
    from scipy import stats  # here: importing scipy.stats costs each process ~1 s

    return float(stats.t.ppf(q, df=df))


@lru_cache(maxsize=64)
def _boot_index(seed: int, n_boot: int, n: int) -> np.ndarray:
    """The bootstrap's resampling indices: the same for every cell with as many pairs, so
    drawn once (read-only; the same draws as a fresh generator per cell)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    idx.flags.writeable = False
    return idx


def paired_wilcoxon(method, baseline) -> float:
    """Two-sided p-value of the Wilcoxon signed-rank test on ``method - baseline`` per seed.

    Pairs with a non-finite side are dropped. All differences zero: p = 1.0 (no evidence of a
    difference; scipy would warn and return NaN). No pairs left: NaN. Zero differences are
    dropped (``zero_method="wilcox"``), the textbook convention.

    The p-value is scipy's ``wilcoxon(d, zero_method="wilcox")`` (method "auto"), computed
    without its permutation test: where scipy enumerates all 2**n sign flips (n <= 13 with
    ties or zeros) or reads its exact table (n <= 50, no ties or zeros), the exact null
    distribution of the signed-rank sum is built here by counting (``_exact_p``), which
    gives the same p-value (to float rounding) in microseconds instead of milliseconds; in
    every other case (n > 50, or ties with n > 13) scipy's normal approximation with tie
    and continuity corrections is used, as scipy itself would.
    """
    a = np.asarray(method, dtype=float).ravel()
    b = np.asarray(baseline, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
    ok = np.isfinite(a) & np.isfinite(b)
    d = a[ok] - b[ok]
    if d.size == 0:
        return math.nan
    if np.all(d == 0):
        return 1.0
    nz = d[d != 0]
    ranks, tied = _average_ranks(np.abs(nz))
    if d.size <= 13 or (d.size <= 50 and not tied and nz.size == d.size):
        return _exact_p(ranks, nz > 0)
    from scipy import stats

    return float(stats.wilcoxon(d, zero_method="wilcox", alternative="two-sided",
                                method="asymptotic").pvalue)


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """``scipy.stats.rankdata(x)`` (ties get the mean of their ranks) and whether any tie:
    the same arithmetic, without the per-call overhead that made it a third of a summary."""
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    first = np.empty(x.size, dtype=bool)
    first[0] = True
    np.not_equal(xs[1:], xs[:-1], out=first[1:])
    dense = np.cumsum(first)
    bounds = np.append(np.flatnonzero(first), x.size)
    ranks = np.empty(x.size, dtype=float)
    ranks[order] = 0.5 * (bounds[dense] + bounds[dense - 1] + 1)
    return ranks, bool(dense[-1] != x.size)


def _exact_p(ranks: np.ndarray, positive: np.ndarray) -> float:
    """Two-sided exact p of the signed-rank sum: every sign of every difference equally
    likely under the null, so the sum of the positive ranks is a subset sum of the ranks.
    Average ranks are multiples of 1/2, so twice the ranks are integers and the 2**n subset
    sums are counted by dynamic programming (at most n * (n + 1) + 1 cells)."""
    w = np.rint(2.0 * ranks).astype(np.int64)
    counts = np.zeros(int(w.sum()) + 1, dtype=np.int64)
    counts[0] = 1
    for x in w.tolist():
        counts[x:] = counts[x:] + counts[: counts.size - x]
    t = int(w[positive].sum())
    total = float(2**w.size)
    p_low = float(counts[: t + 1].sum()) / total
    p_high = float(counts[t:].sum()) / total
    return min(1.0, 2.0 * min(p_low, p_high))


def relative_change(method: float, baseline: float) -> float:
    """``100 * (method - baseline) / |baseline|`` in percent; NaN if either is not finite or
    the baseline is 0 (a change from nothing has no percentage)."""
    m, b = float(method), float(baseline)
    if not (math.isfinite(m) and math.isfinite(b)) or b == 0:
        return math.nan
    return 100.0 * (m - b) / abs(b)


def change_ci(method, baseline, level: float = 0.95, n_boot: int = 2000,
              seed: int = 0) -> Interval:
    """Relative change of the means, ``relative_change(mean(method), mean(baseline))`` in %,
    with a paired percentile-bootstrap interval (seeds resampled with replacement).

    The change of the means is what a reader compares ("JCT -9.4% vs SRTF-Est"); a t
    interval of the per-seed changes would be centred on the mean of the ratios instead,
    which can fall outside it when the baseline varies a lot between seeds. The bootstrap
    uses its own fixed generator (``seed``), so the interval is reproducible. Pairs with a
    non-finite side are dropped; fewer than two pairs give NaN bounds.
    """
    if not (0.0 < level < 1.0):
        raise ValueError(f"confidence level must be in (0, 1), got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be an integer >= 1, got {n_boot!r}")
    a = np.asarray(method, dtype=float).ravel()
    b = np.asarray(baseline, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    n = int(a.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0)
    point = relative_change(a.mean(), b.mean())
    if n == 1 or not math.isfinite(point):
        return Interval(point, math.nan, math.nan, n)
    idx = _boot_index(int(seed), n_boot, n)
    am, bm = a[idx].mean(axis=1), b[idx].mean(axis=1)
    nz = bm != 0
    ch = 100.0 * (am[nz] - bm[nz]) / np.abs(bm[nz])
    if ch.size == 0:
        return Interval(point, math.nan, math.nan, n)
    tail = 50.0 * (1.0 - level)
    lo, hi = np.percentile(ch, [tail, 100.0 - tail])
    return Interval(point, float(lo), float(hi), n)
