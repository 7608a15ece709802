"""Job types (GPU demand, duration) and the named workload mixes.

Per job type, GPU demand is one of a few sizes (equally likely) and the uninterrupted run
time is log-uniform between two bounds: bounded like a platform's real limits, spread over
a factor of 3-4 like real fine-tuning jobs, and with a closed-form mean, which the Poisson
arrival rate needs (see arrivals.py). Rationale for each number: docs/workloads.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.suggest import unknown
from evalstop.workload._checks import real
from evalstop.workload.fit import load_fit
from evalstop.workload.model import JOB_TYPES

HOUR_S = 3600.0
_FIT = load_fit()  # a few kB of JSON: the fitted preset's hacking share comes from it


@dataclass(frozen=True)
class JobTypeSpec:
    gpus: tuple[int, ...]  # GPU demands, equally likely
    duration_h: tuple[float, float]  # log-uniform bounds of the run time, hours

    @property
    def mean_gpus(self) -> float:
        return float(np.mean(self.gpus))

    @property
    def mean_duration_s(self) -> float:
        lo, hi = self.duration_h
        # Mean of a log-uniform on [lo, hi]: (hi - lo) / ln(hi / lo).
        return (hi - lo) / np.log(hi / lo) * HOUR_S


JOB_SPECS: dict[str, JobTypeSpec] = {
    # Adapter tuning: fits on one or two GPUs, minutes to a couple of hours.
    "lora": JobTypeSpec(gpus=(1, 2), duration_h=(0.5, 2.0)),
    # DPO holds policy and reference model: a node or half of one, a few hours.
    "dpo": JobTypeSpec(gpus=(4, 8), duration_h=(2.0, 6.0)),
    # PPO-style RLHF holds policy, reference, reward and value models: one or two nodes,
    # the longest runs.
    "rlhf": JobTypeSpec(gpus=(8, 16), duration_h=(4.0, 12.0)),
}


@dataclass(frozen=True)
class Preset:
    name: str
    mix: dict[str, float]  # job type -> probability, over JOB_TYPES, sums to 1
    hacking_frac: float  # probability that an RLHF job hacks
    description: str
    # RLHF curves: "gao" (the paper's setting, Gao et al.'s functional form, ranges in
    # curves.py) or "fitted" (drawn from the fit to measured runs, fitted_curves.py).
    rlhf_family: str = "gao"

    def probabilities(self) -> np.ndarray:
        return np.array([self.mix[t] for t in JOB_TYPES], dtype=float)


PRESETS: dict[str, Preset] = {
    "paper": Preset("paper", {"lora": 0.1, "dpo": 0.1, "rlhf": 0.8}, 0.6,
                    "RLHF-heavy, as in the paper: 80% RLHF (60% of them hacking), "
                    "the rest split evenly between LoRA and DPO"),
    "balanced": Preset("balanced", {"lora": 1 / 3, "dpo": 1 / 3, "rlhf": 1 / 3}, 0.3,
                       "a third of each type, 30% of RLHF jobs hacking"),
    # The paper's mix (no real platform's job mix is shipped to fit one), with RLHF curves,
    # eval noise and the share of hacking runs fitted to the measured runs.
    "fitted": Preset("fitted", {"lora": 0.1, "dpo": 0.1, "rlhf": 0.8},
                     round(_FIT["hacking_share"]["rlhf"], 4),
                     "the paper's mix; RLHF curves, their eval noise and the share of hacking "
                     "RLHF jobs fitted to measured runs (evalstop/data/fitted_workload.json)",
                     rlhf_family="fitted"),
}

EST_SIGMA = 0.3  # log-space std of the duration estimate's multiplicative error
N_TENANTS = 8  # tenants of the synthetic platform, equally likely per job


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(unknown("preset", name, sorted(PRESETS)))
    return PRESETS[name]


def resolve_hacking_frac(preset: Preset, hacking_frac: float | None) -> float:
    """The RLHF hacking probability: the preset's unless one is given."""
    if hacking_frac is None:
        return preset.hacking_frac
    return real("hacking_frac", hacking_frac, low=0.0, high=1.0)


def max_gpus(preset: Preset) -> int:
    """The largest GPU demand any job of this preset can have."""
    return max(max(JOB_SPECS[t].gpus) for t, w in preset.mix.items() if w > 0.0)


def mean_gpu_seconds(preset: Preset) -> float:
    """E[gpus * duration] of one job (GPU demand and duration independent within a type)."""
    return float(sum(w * JOB_SPECS[t].mean_gpus * JOB_SPECS[t].mean_duration_s
                     for t, w in preset.mix.items()))


def draw_types(rng: np.random.Generator, n: int, preset: Preset) -> np.ndarray:
    idx = rng.choice(len(JOB_TYPES), size=n, p=preset.probabilities())
    return np.asarray(JOB_TYPES, dtype=object)[idx].astype(str)


def draw_hacking(rng: np.random.Generator, types: np.ndarray, hacking_frac: float) -> np.ndarray:
    """Bernoulli(hacking_frac) per RLHF job; other types never hack.

    One uniform per job, RLHF or not, so a job's draw does not depend on the others' types.
    """
    u = rng.random(len(types))
    return (np.asarray(types) == "rlhf") & (u < hacking_frac)


def draw_gpus(rng: np.random.Generator, types: np.ndarray) -> np.ndarray:
    gpus = np.zeros(len(types), dtype=np.int64)
    for name in JOB_TYPES:  # fixed order keeps the draws reproducible
        rows = np.flatnonzero(types == name)
        gpus[rows] = rng.choice(np.array(JOB_SPECS[name].gpus), size=len(rows))
    return gpus


def draw_durations(rng: np.random.Generator, types: np.ndarray) -> np.ndarray:
    dur = np.zeros(len(types))
    for name in JOB_TYPES:
        rows = np.flatnonzero(types == name)
        lo, hi = JOB_SPECS[name].duration_h
        dur[rows] = np.exp(rng.uniform(np.log(lo), np.log(hi), size=len(rows))) * HOUR_S
    return dur


def estimate_durations(rng: np.random.Generator, duration_s: np.ndarray,
                       sigma: float = EST_SIGMA) -> np.ndarray:
    """What a scheduler is told: duration * exp(sigma Z - sigma^2 / 2), Z ~ N(0, 1).

    Unbiased in the mean (E[est] = duration); the median estimate is low by a factor
    exp(-sigma^2 / 2) (4.4% at sigma 0.3). Always positive.
    """
    sigma = real("estimate sigma", sigma, low=0.0)
    z = rng.standard_normal(len(duration_s))
    return np.asarray(duration_s, dtype=float) * np.exp(sigma * z - 0.5 * sigma * sigma)


def draw_tenants(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.char.add("tenant-", rng.integers(0, N_TENANTS, size=n).astype(str)).astype(str)
