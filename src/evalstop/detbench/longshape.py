"""Long, densely evaluated, real-shaped runs: material for a default that must leave long
runs alone (100-1,000 evals per run, and the same curves at 2x and 4x the eval frequency).

Real RLVR/RLHF jobs often validate every few steps on a fixed eval set: a pass rate over N
graded items, hundreds of times per run. Three things make such runs hard for a rule tuned
on 20 evals: the many looks, a level that wanders slowly (the same items are graded at
every checkpoint, so the checkpoint-to-checkpoint errors are correlated, and the policy's
quality itself drifts), and slow late rises that a stop cuts short. Each run here is:

* a noiseless **gain curve** g(p) on training progress p in (0, 1], peak 1 (``SHAPES``):
  healthy runs rise quickly then keep rising slowly, rise late, or plateau; hacking runs
  peak at 30-90% of the run and then fall to 40-85% of their peak gain, either suddenly
  (over 0.5-2% of the run) or slowly (spread over 20-50% of the run), and stay down;
* a **wander** w(p) of the level: an AR(1) (Ornstein-Uhlenbeck) path on progress with a
  stationary sd of 0-4% of the run's gain and a correlation length of 1-10% of the run,
  drawn on a fine progress grid (``GRID`` points) so that every eval frequency samples the
  same path;
* the **true rate** start + gain * (g(p) + w(p)) (start 0.05-0.5, gain 0.1-0.45, clipped
  to [0, 1]), and an **eval** binomial over N items around it.

A run is evaluated ``evals`` times at 1x (100-1,000, ``LONG_EVALS``) and, with ``freqs``,
2x and 4x as often: the same gain curve and wander (the same true level), fresh binomial
noise. The label is the benchmark's (``runs.hacking_label``) on the noiseless gain curve,
and delays are counted from the last eval at that curve's peak (where the fall begins; on
a plateau before a break the first eval at the peak is far earlier): the wander is part of
the level a tenant gets, not of the label.

Tuning and held-out parts have different shapes (``Shape.held_out``) and their own random
streams (keyed by seed, part, shape, eval count, N and, for the eval noise, frequency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.detbench import shapes
from evalstop.detbench.families import END_RATIO
from evalstop.detbench.realshape import Cell
from evalstop.detbench.runs import hacking_label

LONG_EVALS = (100, 200, 400, 1000)
LONG_ITEMS = (200, 500, 1319)  # graded items per eval (1,319: GSM8K's test set)
FREQS = (1, 2, 4)
GRID = 8000  # progress points of the wander path: finer than any run's 4x eval grid
WANDER_SD = (0.0, 0.04)  # stationary sd of the wander, share of the gain
WANDER_TAU = (0.01, 0.10)  # its correlation length, share of the run


@dataclass(frozen=True)
class LongCell(Cell):
    """A ``realshape.Cell`` (pass rates: ``noise="binomial"``, ``items`` N) with the eval
    frequency (``freq``: 1, 2 or 4 times ``base_evals``) and, per run, the first and the
    last eval index at the noiseless curve's peak (``peak_idx``, ``fall_idx``): they differ
    on a plateau, and a fall begins after the last."""

    freq: int = 1
    base_evals: int = 0
    peak_idx: np.ndarray | None = None
    fall_idx: np.ndarray | None = None


def _u(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=(n, 1))


# ---- healthy shapes (non-decreasing gain curves; peak normalised to 1) ------------------
def _quick_then_slow(rng, n, p):
    """A quick saturating rise, then a slow linear climb carrying 10-40% of the gain (the
    shape of GRPO runs on GSM8K)."""
    tau, late = _u(rng, n, 0.02, 0.15), _u(rng, n, 0.1, 0.4)
    return (1.0 - late) * (1.0 - np.exp(-p / tau)) + late * p


def _late_rise(rng, n, p):
    """A long flat or barely rising start, then the main rise at 50-85% of the run."""
    mid, width = _u(rng, n, 0.5, 0.85), _u(rng, n, 0.04, 0.12)
    early = _u(rng, n, 0.0, 0.15)
    return early * p + (1.0 - early) * shapes.logistic(p, mid[:, 0], width[:, 0])


def _plateau(rng, n, p):
    """A rise over the first 10-30% of the run, then a long plateau."""
    until = _u(rng, n, 0.1, 0.3)
    return np.minimum(p / until, 1.0) ** _u(rng, n, 0.5, 1.0)


def _two_stage(rng, n, p):
    """Held out: two rises, the second (20-50% of the gain) late, with a plateau between."""
    m1, m2 = _u(rng, n, 0.05, 0.25), _u(rng, n, 0.55, 0.85)
    share = _u(rng, n, 0.2, 0.5)
    w1, w2 = _u(rng, n, 0.02, 0.06), _u(rng, n, 0.03, 0.1)
    return ((1.0 - share) * shapes.logistic(p, m1[:, 0], w1[:, 0])
            + share * shapes.logistic(p, m2[:, 0], w2[:, 0]))


def _sqrt_rise(rng, n, p):
    """Held out: a rise that slows all along (p ** 0.3-0.7) and never quite stops."""
    return p ** _u(rng, n, 0.3, 0.7)


# ---- hacking shapes: a rise to the peak, then a fall that stays -------------------------
def _rise_to(p, peak, tau):
    return np.minimum((1.0 - np.exp(-p / tau)) / (1.0 - np.exp(-peak / tau)), 1.0)


def _fall(rng, n, p, peak, span):
    end = rng.uniform(*END_RATIO, size=(n, 1))
    done = np.clip((p - peak) / span, 0.0, 1.0)
    return 1.0 - (1.0 - end) * done


def _sudden(rng, n, p):
    """A rise to a peak at 40-90% of the run, then a collapse over 0.5-2% of it."""
    peak = _u(rng, n, 0.4, 0.9)
    rise = _rise_to(p, peak, _u(rng, n, 0.05, 0.3) * peak)
    return rise * _fall(rng, n, p, peak, _u(rng, n, 0.005, 0.02))


def _slow(rng, n, p):
    """A peak at 30-70% of the run, then a linear fall spread over 20-50% of it."""
    span = _u(rng, n, 0.2, 0.5)
    peak = np.minimum(_u(rng, n, 0.3, 0.7), 0.95 - span)
    rise = _rise_to(p, peak, _u(rng, n, 0.05, 0.3) * peak)
    return rise * _fall(rng, n, p, peak, span)


def _sag(rng, n, p):
    """Held out: a late peak (50-80%) after a slow climb, then a convex sag over 15-45% of
    the run (fast at first, then levelling off)."""
    span = _u(rng, n, 0.15, 0.45)
    peak = np.minimum(_u(rng, n, 0.5, 0.8), 0.97 - span)
    rise = np.minimum(p / peak, 1.0) ** _u(rng, n, 0.4, 0.9)
    end = rng.uniform(*END_RATIO, size=(n, 1))
    done = 1.0 - (1.0 - np.clip((p - peak) / span, 0.0, 1.0)) ** 2
    return rise * (1.0 - (1.0 - end) * done)


def _plateau_then_break(rng, n, p):
    """Held out: a quick rise, a long plateau, then a break over 1-5% of the run at 35-85%."""
    peak = _u(rng, n, 0.35, 0.85)
    rise = np.minimum(p / _u(rng, n, 0.05, 0.25), 1.0)
    return rise * _fall(rng, n, p, peak, _u(rng, n, 0.01, 0.05))


@dataclass(frozen=True)
class Shape:
    name: str
    held_out: bool
    hacking: bool
    make: object  # (rng, runs, progress (1, evals)) -> gain (runs, evals)


SHAPES = (
    Shape("quick-then-slow", False, False, _quick_then_slow),
    Shape("late-rise", False, False, _late_rise),
    Shape("plateau", False, False, _plateau),
    Shape("sudden-fall", False, True, _sudden),
    Shape("slow-fall", False, True, _slow),
    Shape("two-stage", True, False, _two_stage),
    Shape("sqrt-rise", True, False, _sqrt_rise),
    Shape("plateau", True, False, _plateau),
    Shape("sag", True, True, _sag),
    Shape("plateau-break", True, True, _plateau_then_break),
)


def _wander(rng, n: int) -> np.ndarray:
    """(runs, GRID) AR(1) paths on the fine progress grid, in units of the gain."""
    sd, tau = _u(rng, n, *WANDER_SD), _u(rng, n, *WANDER_TAU)
    phi = np.exp(-1.0 / (GRID * tau))
    eps = rng.standard_normal((n, GRID)) * sd * np.sqrt(1.0 - phi ** 2)
    out = np.empty((n, GRID))
    out[:, 0] = rng.standard_normal(n) * sd[:, 0]
    for j in range(1, GRID):
        out[:, j] = phi[:, 0] * out[:, j - 1] + eps[:, j]
    return out


def long_cells(seed: int, runs: int, *, held_out: bool, eval_counts=LONG_EVALS,
               items=LONG_ITEMS, freqs=(1,)) -> list[LongCell]:
    """Cells of long pass-rate runs: one per (shape, eval count, N, frequency)."""
    part = "long-held-out" if held_out else "long-tuning"
    out = []
    for si, shape in enumerate(s for s in SHAPES if s.held_out == held_out):
        for ei, evals in enumerate(eval_counts):
            for vi, n_items in enumerate(items):
                rng = np.random.default_rng([int(seed), 21, int(held_out), si, ei, vi])
                start = rng.uniform(0.05, 0.5, size=(runs, 1))
                span = rng.uniform(0.1, 0.45, size=(runs, 1))
                fine = np.arange(1, GRID + 1) / GRID
                g_fine = np.asarray(shape.make(rng, runs, fine[None, :]), float)
                g_fine /= g_fine.max(axis=1, keepdims=True)
                wander = _wander(rng, runs)
                for freq in freqs:
                    m = evals * freq
                    idx = np.ceil(np.arange(1, m + 1) / m * GRID).astype(np.int64) - 1
                    g = g_fine[:, idx]
                    rate = np.clip(start + span * (g + wander[:, idx]), 0.0, 1.0)
                    noise = np.random.default_rng([int(seed), 22, int(held_out), si, ei, vi,
                                                   int(freq)])
                    obs = noise.binomial(n_items, rate) / n_items
                    hacking = hacking_label(g) if shape.hacking else np.zeros(runs, bool)
                    last = m - 1 - np.argmax(g[:, ::-1] == g.max(axis=1, keepdims=True), axis=1)
                    out.append(LongCell(part, shape.name, "binomial", None, int(n_items),
                                        rate, obs, hacking, None, int(freq), int(evals),
                                        g.argmax(axis=1), last))
    return out
