"""Noiseless curve shapes, vectorised over runs: arrays of shape (runs, evals).

Every shape is a *gain* over the starting model: 0 at progress 0 and, once a family has
normalised it, 1 at its best point inside the run. The benchmark scores the kept
checkpoint as a fraction of that gain, so an offset cannot flatter a detector.
"""

from __future__ import annotations

import numpy as np


def gao(u: np.ndarray) -> np.ndarray:
    """Gao et al.'s RL form R(d) = d (alpha - beta ln d) with d scaled by its argmax.

    Writing d = u * d* (d* the peak) gives R / R* = u (1 - ln u) for any alpha, beta: one
    universal shape, 1 at u = 1, rising before, falling after and 0 at u = e.
    """
    u = np.asarray(u, dtype=float)
    out = np.zeros_like(u)
    pos = u > 0
    out[pos] = u[pos] * (1.0 - np.log(u[pos]))
    return out


def gao_inverse_after_peak(r: np.ndarray) -> np.ndarray:
    """The u > 1 with gao(u) = r, for r in (0, 1); bisection, because it has no closed form."""
    r = np.asarray(r, dtype=float)
    lo, hi = np.ones_like(r), np.full_like(r, np.e)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = gao(mid) > r  # gao falls on (1, e): still above r means go right
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
    return 0.5 * (lo + hi)


def saturating(p: np.ndarray, tau: np.ndarray, until: np.ndarray | float = 1.0) -> np.ndarray:
    """1 - exp(-p / tau), scaled to 1 at progress ``until`` (exponential convergence)."""
    tau = np.asarray(tau, dtype=float)[..., None]
    until = np.asarray(until, dtype=float)
    if until.ndim:
        until = until[..., None]
    return -np.expm1(-p / tau) / -np.expm1(-until / tau)


def logistic(p: np.ndarray, mid: np.ndarray, width: np.ndarray) -> np.ndarray:
    """A sigmoid rise scaled to 0 at progress 0 and 1 at progress 1."""
    mid, width = np.asarray(mid)[..., None], np.asarray(width)[..., None]

    def raw(x):
        return 1.0 / (1.0 + np.exp(-(x - mid) / width))

    lo, hi = raw(0.0), raw(1.0)
    return (raw(p) - lo) / (hi - lo)


def decline(
    p: np.ndarray, peak: np.ndarray, end_ratio: np.ndarray, power: np.ndarray
) -> np.ndarray:
    """Multiplier 1 up to ``peak``, then falling to ``end_ratio`` at progress 1.

    ``power`` < 1 drops fast at first and levels off; > 1 starts slowly and accelerates.
    """
    peak, end_ratio, power = (np.asarray(a, dtype=float)[..., None]
                              for a in (peak, end_ratio, power))
    x = np.clip((p - peak) / (1.0 - peak), 0.0, 1.0)
    return 1.0 - (1.0 - end_ratio) * x**power
