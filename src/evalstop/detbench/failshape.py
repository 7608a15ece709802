"""Failure shapes the default must get right (issue 46): long runs that keep rising under a
wandering level, recovering dips, collapses, and dead runs.

Pass-rate runs (an eval is binomial over N graded items around the true rate), evaluated
once per progress step (no frequency copies: ``longshape`` covers eval frequency). The true
rate is start + gain * (g + w), clipped to [0, 1]:

* g, the noiseless **gain curve** of the family (peak 1), drawn on the run's eval grid so
  that a collapse lasts exactly one or two evals;
* w, a **wander** of the level: an AR(1) path per eval with phi in ``WANDER_PHI`` and a
  stationary sd of ``WANDER_SD`` of the gain (the issue's ranges: a fixed eval set graded
  at every checkpoint, and a drifting policy).

Families (``FAMILIES``):

* ``rising`` (not hacking): still rising at the end: a quick rise then a slow climb that
  carries 10-50% of the gain, a rise that slows all along (p ** 0.3-0.8), or a late
  logistic rise (mid-point at 40-75% of the run);
* ``dip`` (not hacking): a rising or plateauing run with a dip of ``DIP_DEPTH`` of the gain
  over ``DIP_SPAN`` of the run that recovers fully (a smooth cosine trough);
* ``collapse`` (hacking): a rise to a peak at 30-85% of the run, then a fall of 50-100%
  of the gain, and of at least ``COLLAPSE_SIGMAS`` noise sigmas of one eval, within one or
  two evals, and no recovery;
* ``dead`` (hacking): a rise to a peak at 20-55% of the run, a fall over 1 eval to 10% of
  the run to the start floor (the start rate) or the metric's floor (a pass rate of 0),
  and no recovery for at least the last ``DEAD_SHARE`` of the run (here 25-80%).

Long cells have 100-1,000 evals (``FAIL_EVALS``); short cells (``SHORT_EVALS``) hold
collapses and dead runs only. Labels: collapse and dead runs are to be stopped; rising and
dip runs are not. Tuning and held-out parts draw from their own random streams (keyed by
part, seed, family, eval count and N); the scripts use different seeds for the two
(``benchmarks/tune_failshapes.py``, ``benchmarks/judge_failshapes.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.detbench import shapes
from evalstop.detbench.realshape import Cell

FAIL_EVALS = (100, 200, 400, 1000)
SHORT_EVALS = (20, 40, 60)
FAIL_ITEMS = (300, 700, 2000)
WANDER_PHI = (0.9, 0.98)
WANDER_SD = (0.01, 0.15)  # share of the gain
START = (0.05, 0.5)
GAIN = (0.05, 0.4)
DIP_DEPTH = (0.10, 0.25)  # share of the gain
DIP_SPAN = (0.05, 0.15)  # share of the run
COLLAPSE_SIGMAS = 4.0
DEAD_SHARE = 0.2
FAMILIES = ("rising", "dip", "collapse", "dead")
HACKING = {"rising": False, "dip": False, "collapse": True, "dead": True}


@dataclass(frozen=True)
class FailCell(Cell):
    """A ``realshape.Cell`` of pass rates with, per run, ``fall_idx``: the last eval before
    the fall (collapse, dead; the dip's start for dips; -1 for rising runs); for dead
    runs, ``floor_idx``: the first eval at the floor; for dips, ``dip_depth`` (share of the
    gain) and ``dip_span`` (share of the run) as drawn."""

    fall_idx: np.ndarray | None = None
    floor_idx: np.ndarray | None = None
    dip_depth: np.ndarray | None = None
    dip_span: np.ndarray | None = None


def _u(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=(n, 1))


def _rising(rng, n, p):
    """Still rising at the end: one of three forms per run."""
    kind = rng.integers(0, 3, size=(n, 1))
    tau, late = _u(rng, n, 0.02, 0.2), _u(rng, n, 0.1, 0.5)
    quick = (1.0 - late) * (1.0 - np.exp(-p / tau)) + late * p
    slowing = p ** _u(rng, n, 0.3, 0.8)
    lift = shapes.logistic(p, _u(rng, n, 0.4, 0.75)[:, 0], _u(rng, n, 0.05, 0.15)[:, 0])
    return np.where(kind == 0, quick, np.where(kind == 1, slowing, lift))


def _rise_to(rng, n, p, peak):
    tau = _u(rng, n, 0.05, 0.3) * peak
    return np.minimum((1.0 - np.exp(-p / tau)) / (1.0 - np.exp(-peak / tau)), 1.0)


def _dip(rng, n, p, evals):
    """A rising (half the runs) or plateauing base with one recovering cosine trough."""
    base = np.where(rng.random((n, 1)) < 0.5, _rising(rng, n, p),
                    np.minimum(p / _u(rng, n, 0.1, 0.3), 1.0))
    span, depth = _u(rng, n, *DIP_SPAN), _u(rng, n, *DIP_DEPTH)
    begin = rng.uniform(0.2, 0.85 - span, size=(n, 1))
    x = np.clip((p - begin) / span, 0.0, 1.0)
    g = base / base.max(axis=1, keepdims=True) - depth * 0.5 * (1.0 - np.cos(2 * np.pi * x))
    start = np.floor(begin[:, 0] * evals).astype(np.int64) - 1
    return g, start, depth[:, 0], span[:, 0]


def _collapse(rng, n, p, evals, sd_at):
    """A rise to a peak, then a fall of 50-100% of the gain (and >= COLLAPSE_SIGMAS) over
    1-2 evals; ``sd_at(rate_share)`` the eval noise in units of the gain at a gain share."""
    peak = _u(rng, n, 0.3, 0.85)
    g = _rise_to(rng, n, p, peak)
    top = np.floor(peak[:, 0] * evals).astype(np.int64) - 1  # last eval at the peak
    share = np.maximum(_u(rng, n, 0.5, 1.0)[:, 0], 1.05 * COLLAPSE_SIGMAS * sd_at(1.0))
    share = np.minimum(share, 1.0)
    steps = rng.integers(1, 3, size=n)
    idx = np.arange(evals)[None, :]
    done = np.clip((idx - top[:, None]) / steps[:, None], 0.0, 1.0)
    return g * (1.0 - share[:, None] * done), top


def _dead(rng, n, p, evals):
    peak = _u(rng, n, 0.2, 0.55)
    g = _rise_to(rng, n, p, peak)
    span = rng.uniform(0.0, 0.1, size=(n, 1))
    top = np.floor(peak[:, 0] * evals).astype(np.int64) - 1
    steps = np.maximum(1, np.round(span[:, 0] * evals)).astype(np.int64)
    idx = np.arange(evals)[None, :]
    done = np.clip((idx - top[:, None]) / steps[:, None], 0.0, 1.0)
    return g * (1.0 - done), top, top + steps


def _wander(rng, n: int, evals: int) -> np.ndarray:
    """(runs, evals) AR(1) paths in units of the gain."""
    phi, sd = _u(rng, n, *WANDER_PHI), _u(rng, n, *WANDER_SD)
    eps = rng.standard_normal((n, evals)) * sd * np.sqrt(1.0 - phi ** 2)
    out = np.empty((n, evals))
    out[:, 0] = rng.standard_normal(n) * sd[:, 0]
    for j in range(1, evals):
        out[:, j] = phi[:, 0] * out[:, j - 1] + eps[:, j]
    return out


def fail_cells(seed: int, runs: int, *, held_out: bool, families=FAMILIES,
               eval_counts=FAIL_EVALS, items=FAIL_ITEMS, short: bool = False) -> list[FailCell]:
    """One cell per (family, eval count, N). ``short``: collapse and dead runs at
    ``SHORT_EVALS`` instead (part ``fail-short-...``)."""
    part = ("fail-short-" if short else "fail-") + ("held-out" if held_out else "tuning")
    counts = SHORT_EVALS if short and eval_counts is FAIL_EVALS else eval_counts
    fams = [f for f in families if not short or HACKING[f]]
    out = []
    for fi, fam in enumerate(fams):
        for ei, evals in enumerate(counts):
            for vi, n_items in enumerate(items):
                rng = np.random.default_rng([int(seed), 46, int(held_out), int(short),
                                             FAMILIES.index(fam), ei, vi])
                out.append(_cell(rng, part, fam, runs, int(evals), int(n_items)))
    return out


def _cell(rng, part, fam, runs, evals, n_items) -> FailCell:
    p = (np.arange(1, evals + 1) / evals)[None, :]
    start = _u(rng, runs, *START)
    gain = np.minimum(_u(rng, runs, *GAIN), 0.95 - start)
    floor_idx = dip = None
    fall = np.full(runs, -1, dtype=np.int64)
    if fam == "rising":
        g = _rising(rng, runs, p)
    elif fam == "dip":
        g, fall, *dip = _dip(rng, runs, p, evals)
    elif fam == "collapse":
        def sd_at(share):
            rate = np.clip(start[:, 0] + gain[:, 0] * share, 0.0, 1.0)
            return np.sqrt(rate * (1.0 - rate) / n_items) / gain[:, 0]
        g, fall = _collapse(rng, runs, p, evals, sd_at)
    else:
        g, fall, floor_idx = _dead(rng, runs, p, evals)
    g = g / g.max(axis=1, keepdims=True)
    w = _wander(rng, runs, evals)
    rate = start + gain * (g + w)
    if fam == "dead":
        # half the dead runs sit at the metric's floor (a pass rate of 0), half at the start
        zero = rng.random(runs) < 0.5
        at_floor = np.arange(evals)[None, :] >= floor_idx[:, None]
        rate = np.where(zero[:, None] & at_floor, 0.0, rate)
    rate = np.clip(rate, 0.0, 1.0)
    obs = rng.binomial(n_items, rate) / n_items
    hacking = np.full(runs, HACKING[fam])
    return FailCell(part, fam, "binomial", None, n_items, rate, obs, hacking, None,
                    fall, floor_idx, *(dip or (None, None)))
