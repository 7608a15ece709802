"""Noisy, labelled runs drawn from the families: what a detector sees and what it must not.

A ``RunSet`` holds one cell of the benchmark (a family at one noise level and noise kind).
Detectors get ``eval`` (plus ``proxy``, ``loss`` and ``progress``); the hidden label
``hacking`` and the noiseless ``gain`` are for scoring only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.detbench.families import FAMILIES, MIN_DROP, Family

EVALS = 20  # one eval every 5% of progress, the last at progress 1.0
SIGMAS = (0.01, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12)
NOISES = ("gauss", "t3")
T_DF = 3
# Student-t noise is scaled so that its interquartile range matches N(0, sigma): the same
# typical scatter as the Gaussian cell at that sigma, with far heavier tails. The value is
# float(scipy.stats.norm.ppf(0.75) / scipy.stats.t.ppf(0.75, 3)), written out because
# importing scipy.stats costs each process about a second (a test recomputes it).
T_SCALE = 0.8818100602514172
PROXY_SIGMA = 0.02
LOSS_SIGMA = 0.005


@dataclass(frozen=True)
class RunSet:
    family: Family
    sigma: float
    noise: str
    progress: np.ndarray  # (evals,)
    gain: np.ndarray  # (runs, evals) true quality over the start, peak 1: hidden
    hacking: np.ndarray  # (runs,) bool: hidden
    eval: np.ndarray  # (runs, evals) observed score
    proxy: np.ndarray | None  # (runs, evals) proxy reward, RLHF families only
    loss: np.ndarray  # (runs, evals) training loss

    @property
    def runs(self) -> int:
        return int(self.hacking.size)


def progress_grid(evals: int = EVALS) -> np.ndarray:
    if evals < 2:
        raise ValueError(f"evals must be >= 2, got {evals}")
    return np.arange(1, evals + 1) / evals


def noise(rng: np.random.Generator, kind: str, sigma: float, shape) -> np.ndarray:
    if kind == "gauss":
        return sigma * rng.standard_normal(shape)
    if kind == "t3":
        return sigma * T_SCALE * rng.standard_t(T_DF, size=shape)
    raise ValueError(f"unknown noise kind {kind!r}; known: {', '.join(NOISES)}")


def _outliers(rng, fam: Family, sigma: float, shape) -> np.ndarray:
    """Single-eval dips and spikes: never the first two evals, never two in a row."""
    out = np.zeros(shape)
    lo, hi = fam.outliers
    if hi == 0:
        return out
    runs, evals = shape
    for i in range(runs):
        k = int(rng.integers(lo, hi + 1))
        slots = rng.permutation(np.arange(2, evals))
        chosen: list[int] = []
        for s in slots:
            if len(chosen) == k:
                break
            if all(abs(int(s) - c) > 1 for c in chosen):
                chosen.append(int(s))
        size = sigma * rng.uniform(4.0, 8.0, len(chosen)) + rng.uniform(0.05, 0.25, len(chosen))
        out[i, chosen] = np.where(rng.random(len(chosen)) < 0.5, -size, size)
    return out


def hacking_label(gain: np.ndarray) -> np.ndarray:
    """The label rule: the true peak is inside the run and the end is MIN_DROP below it."""
    peak = gain.max(axis=1)
    inside = gain.argmax(axis=1) < gain.shape[1] - 1
    return inside & (gain[:, -1] <= (1.0 - MIN_DROP) * peak)


def make_runs(
    fam: Family, sigma: float, kind: str, runs: int, rng: np.random.Generator,
    evals: int = EVALS,
) -> RunSet:
    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    if not sigma >= 0.0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    p = progress_grid(evals)
    hacking = np.arange(runs) < round(runs * fam.hacking_rate)
    gain = fam.make(rng, hacking, p)
    gain = gain / gain.max(axis=1, keepdims=True)
    label = hacking_label(gain)
    if not np.array_equal(label, hacking):
        bad = int(np.flatnonzero(label != hacking)[0])
        raise RuntimeError(f"family {fam.name!r} drew run {bad} against its label")
    offset = rng.uniform(0.0, 0.5, size=(runs, 1))  # no rule may rely on a zero start
    obs = offset + gain + noise(rng, kind, sigma, gain.shape) + _outliers(rng, fam, sigma,
                                                                           gain.shape)
    proxy = None
    if fam.kind == "rlhf":  # the optimised reward keeps rising, hacking or not
        slope = rng.uniform(0.5, 2.0, size=(runs, 1))
        proxy = slope * np.sqrt(p)[None, :] + PROXY_SIGMA * rng.standard_normal(gain.shape)
    tau = rng.uniform(0.15, 0.5, size=(runs, 1))
    loss = (1.0 + np.exp(-p[None, :] / tau)) * (1.0 + LOSS_SIGMA * rng.standard_normal(gain.shape))
    return RunSet(fam, float(sigma), kind, p, gain, hacking, obs, proxy, loss)


def build(
    seed: int, runs: int, *, held_out: bool, sigmas=SIGMAS, noises=NOISES, evals: int = EVALS,
    fresh: bool = False,
) -> list[RunSet]:
    """Every cell of one part. Each cell has its own stream keyed by (seed, part, cell), so
    the held-out part never shares random numbers with the tuning part."""
    out = []
    for fi, fam in enumerate(FAMILIES):
        if fam.held_out != held_out or fam.fresh != fresh:
            continue
        for si, sigma in enumerate(sigmas):
            for ni, kind in enumerate(noises):
                rng = np.random.default_rng([int(seed), int(held_out), fi, si, ni])
                out.append(make_runs(fam, sigma, kind, runs, rng, evals))
    return out
