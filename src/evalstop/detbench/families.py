"""Labelled families of eval curves for the detector benchmark.

A family draws noiseless *gain* curves (see ``shapes``) for a batch of runs, half of them
hacking where the family has hacking runs. A run is hacking when its true quality peaks
inside the run and has fallen by at least ``MIN_DROP`` of its peak gain by the end; every
hacking generator draws its end ratio below ``1 - MIN_DROP`` and every healthy generator is
non-decreasing, so the label never sits on the boundary.

Families are split once, before any tuning, into a tuning part and a held-out part with
different shapes (and different random streams, see ``runs``). The held-out part is never
used to choose a rule or a parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evalstop.detbench import shapes

MIN_DROP = 0.10
END_RATIO = (0.40, 0.85)  # true quality at the end of a hacking run, as a fraction of its peak

Maker = Callable[[np.random.Generator, np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Family:
    name: str
    held_out: bool
    kind: str  # "rlhf" runs carry a proxy reward; "lora" and "dpo" runs do not
    hacking_rate: float
    outliers: tuple[int, int]  # (min, max) single-eval dips or spikes injected per run
    description: str
    make: Maker  # (rng, hacking mask (runs,), progress (evals,)) -> gain (runs, evals)
    # A second held-out part, written after the first had been examined (per family and
    # by decline SNR) and before anything ran on it: the blind check of later choices.
    fresh: bool = False


def _u(rng, n, lo, hi):
    return rng.uniform(lo, hi, size=n)


def _end_ratio(rng, n):
    return _u(rng, n, *END_RATIO)


# ---- tuning families -----------------------------------------------------------------


def _gao_paper(rng, hacking, p):
    """The paper's setting: KL grows as progress**gamma, hacking peaks at 55-75%."""
    n = hacking.size
    peak = np.where(hacking, _u(rng, n, 0.55, 0.75), _u(rng, n, 1.15, 3.0))
    # Hacking runs: pick the end ratio, then the KL growth that reaches it at progress 1.
    u_end = shapes.gao_inverse_after_peak(_end_ratio(rng, n))
    gamma = np.where(hacking, 2.0 * np.log(u_end) / np.log(1.0 / np.minimum(peak, 0.999)),
                     _u(rng, n, 1.0, 2.5))
    u = (p[None, :] / peak[:, None]) ** (gamma[:, None] / 2.0)
    return shapes.gao(u)


def _plateau(rng, hacking, p):
    """Fast rise to a plateau (early or late); hacking runs leave it and decline."""
    n = hacking.size
    peak = _u(rng, n, 0.45, 0.85)
    tau = np.exp(_u(rng, n, np.log(0.03), np.log(0.3)))
    healthy = shapes.saturating(p, tau, 1.0)
    rise = shapes.saturating(p, np.minimum(tau, peak / 4.0), peak)
    fall = shapes.decline(p, peak, _end_ratio(rng, n), _u(rng, n, 1.0, 2.5))
    return np.where(hacking[:, None], np.minimum(rise, 1.0) * fall, healthy)


def _peak_anywhere(rng, hacking, p):
    """Peak anywhere from 30% to 90%, falling fast (power < 1) or slowly (power > 1)."""
    n = hacking.size
    peak = _u(rng, n, 0.3, 0.9)
    fast = rng.random(n) < 0.5
    power = np.where(fast, _u(rng, n, 0.5, 0.9), _u(rng, n, 1.5, 3.0))
    rise = shapes.saturating(p, _u(rng, n, 0.1, 0.5) * peak, peak)
    hack = np.minimum(rise, 1.0) * shapes.decline(p, peak, _end_ratio(rng, n), power)
    healthy = shapes.saturating(p, _u(rng, n, 0.2, 1.5), 1.0)  # steady rises, some near-linear
    return np.where(hacking[:, None], hack, healthy)


def _mixed(rng, hacking, p):
    """Half paper-like, half plateau-like; the outlier family puts dips and spikes on these."""
    a, b = _gao_paper(rng, hacking, p), _plateau(rng, hacking, p)
    return np.where((rng.random(hacking.size) < 0.5)[:, None], a, b)


def _lora(rng, hacking, p):
    """LoRA fine-tuning: monotone exponential convergence, never hacking."""
    tau = np.exp(_u(rng, hacking.size, np.log(0.03), np.log(0.4)))
    return shapes.saturating(p, tau, 1.0)


# ---- held-out families: other shapes, never tuned on -----------------------------------


def _gao_kl_schedule(rng, hacking, p):
    """Gao's form under an accelerating KL schedule exp(b p) - 1, peaks at 30-90%."""
    n = hacking.size
    peak = np.where(hacking, _u(rng, n, 0.3, 0.9), _u(rng, n, 1.05, 2.5))
    # The schedule cannot fall slower than b -> 0 allows, so cap the drawn end ratio there.
    slowest = shapes.gao(np.sqrt(1.0 / np.minimum(peak, 0.999)))
    hi = np.minimum(END_RATIO[1], slowest - 0.01)
    ratio = END_RATIO[0] + (hi - END_RATIO[0]) * rng.random(n)
    u_end = shapes.gao_inverse_after_peak(ratio)
    b_lo, b_hi = np.full(n, 1e-3), np.full(n, 40.0)
    for _ in range(60):  # u_end grows with b: bisection for the b that reaches the ratio
        b = 0.5 * (b_lo + b_hi)
        reach = np.sqrt(np.expm1(b) / np.expm1(b * np.minimum(peak, 0.999)))
        b_lo, b_hi = np.where(reach < u_end, b, b_lo), np.where(reach < u_end, b_hi, b)
    b = np.where(hacking, 0.5 * (b_lo + b_hi), _u(rng, n, 0.5, 4.0))
    kl = np.expm1(b[:, None] * p[None, :]) / np.expm1(b[:, None] * peak[:, None])
    return shapes.gao(np.sqrt(kl))


def _rise_plateau_fall(rng, hacking, p):
    """Piecewise linear: rise, a long slightly rising plateau, then (hacking) a linear fall."""
    n = hacking.size
    top = _u(rng, n, 0.15, 0.5)
    peak = np.where(hacking, top + (0.9 - top) * rng.random(n), 1.0)
    pc, top_c, peak_c = p[None, :], top[:, None], peak[:, None]
    up = np.minimum(pc / top_c, 1.0) * 0.98 + 0.02 * np.clip((pc - top_c) / (peak_c - top_c
                                                                             + 1e-12), 0, 1)
    fall = shapes.decline(p, np.minimum(peak, 0.999), _end_ratio(rng, n), np.ones(n))
    return np.where(hacking[:, None], up * fall, up)


def _dpo(rng, hacking, p):
    """DPO: a sigmoid gain that saturates early into a small plateau, never hacking."""
    n = hacking.size
    return shapes.logistic(p, _u(rng, n, 0.1, 0.4), _u(rng, n, 0.03, 0.1))


def _sigmoid_bump(rng, hacking, p):
    """Sigmoid rise, then a Gaussian-shaped fall after a peak at 30-90%."""
    n = hacking.size
    peak = _u(rng, n, 0.3, 0.9)
    width = np.sqrt(-0.5 * (1.0 - peak) ** 2 / np.log(_end_ratio(rng, n)))
    mid = peak * _u(rng, n, 0.3, 0.6)
    rise = shapes.logistic(p, mid, (peak - mid) / _u(rng, n, 4.0, 6.0))  # saturated by the peak
    after = np.clip(p[None, :] - peak[:, None], 0.0, None)
    bump = np.exp(-0.5 * (after / width[:, None]) ** 2)
    return np.where(hacking[:, None], rise * bump, rise)


# ---- fresh held-out families: written blind, after the first held-out part was examined ---


def _steps(rng, n, lo, hi, count):
    """(runs, count) step positions in (lo, hi) and heights summing to 1 per run."""
    pos = lo[:, None] + (hi - lo)[:, None] * rng.random((n, count))
    height = rng.dirichlet(np.ones(count), size=n)
    return pos, height


def _staircase(p, pos, height):
    return (height[:, :, None] * (p[None, None, :] >= pos[:, :, None])).sum(axis=1)


def _logistic_exp_decay(rng, hacking, p):
    """Sigmoid rise, then an exponential decay toward a floor after a 25-85% peak."""
    n = hacking.size
    peak = _u(rng, n, 0.25, 0.85)
    mid = peak * _u(rng, n, 0.3, 0.6)
    rise = shapes.logistic(p, mid, (peak - mid) / _u(rng, n, 4.0, 6.0))
    tau = (1.0 - peak) * _u(rng, n, 0.2, 1.5)
    e_end = np.exp(-(1.0 - peak) / tau)
    floor = (_end_ratio(rng, n) - e_end) / (1.0 - e_end)  # reaches the end ratio at 1.0
    after = np.clip(p[None, :] - peak[:, None], 0.0, None)
    fall = floor[:, None] + (1.0 - floor[:, None]) * np.exp(-after / tau[:, None])
    healthy = shapes.logistic(p, _u(rng, n, 0.1, 0.7), _u(rng, n, 0.03, 0.2))
    return np.where(hacking[:, None], rise * fall, healthy)


def _staircase_family(rng, hacking, p):
    """Quality that moves in steps (long flat stretches); hacking runs step down after a
    30-80% peak, the last step possibly at the final eval."""
    n = hacking.size
    count = int(rng.integers(2, 5))
    peak = _u(rng, n, 0.3, 0.8)
    healthy = _staircase(p, *_steps(rng, n, np.full(n, 0.02), np.full(n, 0.9), count))
    up = _staircase(p, *_steps(rng, n, np.full(n, 0.02), peak - 0.05, count))
    down_pos, down_h = _steps(rng, n, peak + 0.03, np.full(n, 0.99), int(rng.integers(1, 4)))
    down = 1.0 - (1.0 - _end_ratio(rng, n))[:, None] * _staircase(p, down_pos, down_h)
    return np.where(hacking[:, None], up * down, healthy)


def _slow_drift(rng, hacking, p):
    """Fast rise to an early peak (15-50%), then a long, shallow linear drift down; healthy
    runs keep creeping up after their rise."""
    n = hacking.size
    peak = _u(rng, n, 0.15, 0.5)
    tau = _u(rng, n, 0.03, 0.15)
    rise = shapes.saturating(p, np.minimum(tau, peak / 4.0), peak)
    hack = np.minimum(rise, 1.0) * shapes.decline(p, peak, _end_ratio(rng, n), np.ones(n))
    creep = _u(rng, n, 0.0, 0.15)[:, None]
    healthy = shapes.saturating(p, tau, 1.0) * (1.0 - creep + creep * p[None, :])
    return np.where(hacking[:, None], hack, healthy)


def _uneven_rise(rng, hacking, p):
    """Healthy only: a rise whose speed swings (as under a cyclic learning rate), nearly
    flat at the slow phases: p + a sin(2 pi f p) / (2 pi f), a < 1, never falling."""
    n = hacking.size
    f = _u(rng, n, 1.5, 4.0)[:, None]
    a = _u(rng, n, 0.6, 0.98)[:, None]
    return p[None, :] + a * np.sin(2 * np.pi * f * p[None, :]) / (2 * np.pi * f)


FAMILIES: tuple[Family, ...] = (
    Family("gao-paper", False, "rlhf", 0.5, (0, 0),
           "Gao RL form, KL ~ progress^gamma; hacking peaks at 55-75%, healthy keep rising",
           _gao_paper),
    Family("plateau", False, "rlhf", 0.5, (0, 0),
           "fast rise to an early or late plateau; hacking runs leave it at 45-85% and fall",
           _plateau),
    Family("peak-anywhere", False, "rlhf", 0.5, (0, 0),
           "peak at 30-90% with fast or slow declines; healthy runs rise steadily",
           _peak_anywhere),
    Family("dips-spikes", False, "rlhf", 0.5, (1, 2),
           "paper-like and plateau curves with 1-2 single-eval dips or spikes per run",
           _mixed),
    Family("lora", False, "lora", 0.0, (0, 0),
           "LoRA: monotone exponential convergence (healthy only)", _lora),
    Family("gao-kl-exp", True, "rlhf", 0.5, (0, 0),
           "Gao RL form under an accelerating KL schedule; peaks at 30-90%", _gao_kl_schedule),
    Family("rise-plateau-fall", True, "rlhf", 0.5, (0, 0),
           "piecewise linear rise, long plateau, linear fall from 15-90%", _rise_plateau_fall),
    Family("dpo", True, "dpo", 0.0, (0, 0),
           "DPO: sigmoid gain saturating into a small plateau (healthy only)", _dpo),
    Family("bump-outliers", True, "rlhf", 0.5, (1, 3),
           "sigmoid rise, Gaussian-shaped fall after a 30-90% peak, 1-3 dips or spikes per run",
           _sigmoid_bump),
    Family("logistic-exp-decay", True, "rlhf", 0.5, (0, 0),
           "sigmoid rise, exponential decay toward a floor after a 25-85% peak",
           _logistic_exp_decay, fresh=True),
    Family("staircase", True, "rlhf", 0.5, (0, 1),
           "quality in 2-4 steps with flat stretches; hacking steps down after a 30-80% peak; "
           "0-1 dips or spikes per run", _staircase_family, fresh=True),
    Family("slow-drift", True, "rlhf", 0.5, (0, 0),
           "fast rise to a 15-50% peak, then a long shallow linear fall; healthy runs creep up",
           _slow_drift, fresh=True),
    Family("uneven-rise", True, "lora", 0.0, (0, 0),
           "healthy only: a rise whose speed swings, nearly flat at its slow phases",
           _uneven_rise, fresh=True),
)


def family(name: str) -> Family:
    for fam in FAMILIES:
        if fam.name == name:
            return fam
    raise ValueError(f"unknown family {name!r}; known: {', '.join(f.name for f in FAMILIES)}")
