"""Learning curves as vectorised functions of training progress.

Each family maps a progress grid ``p`` (shape ``(m,)``, values in (0, 1]) and per-job
parameters drawn from documented ranges to three ``(n_jobs, m)`` arrays:

- ``eval_true``: the noiseless world-feedback quality, positive, on a 0..1 scale;
- ``proxy``: the proxy reward, strictly increasing (hacking runs too);
- ``loss``: the training loss, strictly decreasing (hacking runs too: that is why
  loss-driven signals cannot see reward hacking).

It also returns ``peak_progress`` (where ``eval_true`` peaks, 1.0 if it never falls within
the run) and the hidden ``hacking`` label. The formulas and every range are documented in
docs/workloads.md, "Curves"; the ranges live here, next to the code that uses them.

All randomness comes from the ``numpy.random.Generator`` passed in, drawn in a fixed order
(families in ``JOB_TYPES`` order, parameters in the order written), so one generator state
gives one set of curves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.workload._checks import real
from evalstop.workload.model import JOB_TYPES

# A job is "hacking" when its quality peaks inside the run and has fallen by at least this
# much (absolute, on the 0..1 scale) by the end. Half the default eval noise: a smaller
# drop is a flat top, not a decline anyone could act on. RLHF hacking runs satisfy it by
# construction (smallest drop 0.05 * 0.30 = 0.015, see RLHF_GAIN and KL_POWER below);
# LoRA and DPO curves never fall, so they are never hacking.
MIN_DROP = 0.01
RLHF_FAMILIES = ("gao", "fitted")  # the paper's functional form; the fit to measured runs

# --- RLHF: Gao, Schulman & Hilton (2023), RL form R(d) = d (alpha - beta ln d) ----------
# d = sqrt(KL) grows with progress as KL = KL_END * p**KL_POWER. KL_POWER = 2 makes d grow
# linearly with progress. With KL linear in progress (KL_POWER = 1) a run that peaks at
# 55-75% loses only 1-5.5% of its rise by the end, mostly below the default eval noise, so
# hacking would be invisible to any eval-based rule; with d linear it loses 5-27%.
KL_POWER = 2.0
RLHF_HACK_PEAK = (0.55, 0.75)  # peak progress of hacking runs (the paper's setting)
# Healthy runs peak beyond the end: 1.2 is nearly flat at the end (98.5% of the would-be
# peak), 3.0 still rising clearly (70%).
RLHF_HEALTHY_PEAK = (1.2, 3.0)
RLHF_Q0 = (0.30, 0.45)  # eval quality of the starting (SFT) policy
RLHF_GAIN = (0.30, 0.50)  # rise from start to the best quality reached within the run
RLHF_PROXY_GAIN = (1.0, 3.0)  # proxy reward at the end of the run, reward-model units
RLHF_LOSS0 = (1.0, 1.5)  # reported loss (e.g. PPO value loss) at the start
RLHF_LOSS_INF = (0.1, 0.4)  # ... and its asymptote
RLHF_LOSS_TAU = (0.2, 0.5)  # ... and its decay constant, in progress units

# --- LoRA: monotone exponential convergence --------------------------------------------
LORA_Q0 = (0.30, 0.50)
LORA_GAIN = (0.15, 0.35)  # rise by the end of the run
LORA_TAU = (0.15, 0.40)  # convergence constant, shared by quality and loss
LORA_PROXY_GAIN = (0.5, 1.5)
LORA_LOSS0 = (1.8, 2.6)  # token cross-entropy at the start
LORA_LOSS_INF = (0.6, 1.2)

# --- DPO: saturating gain with a small plateau ------------------------------------------
DPO_Q0 = (0.35, 0.50)
DPO_GAIN = (0.10, 0.25)
DPO_SATURATE = (0.60, 0.85)  # progress at which quality stops rising (plateau after it)
DPO_PROXY_GAIN = (0.5, 2.0)  # implicit-reward margin at the end; keeps rising on the plateau
DPO_LOSS0 = float(np.log(2.0))  # DPO loss of the reference policy is exactly ln 2
DPO_LOSS_INF = (0.20, 0.45)
DPO_LOSS_TAU = (0.20, 0.40)


@dataclass
class Curves:
    """Curves of ``n`` jobs on one progress grid of ``m`` points."""

    eval_true: np.ndarray  # (n, m)
    proxy: np.ndarray  # (n, m)
    loss: np.ndarray  # (n, m)
    peak_progress: np.ndarray  # (n,)
    hacking: np.ndarray  # (n,) bool
    # A job's own eval noise (the fitted preset's RLHF jobs): sd and the width over which
    # it is correlated, in progress units (0: white). NaN sd: the job takes the sigma.
    noise_sd: np.ndarray | None = None  # (n,)
    noise_ell: np.ndarray | None = None  # (n,)

    @classmethod
    def empty(cls, n: int, m: int) -> Curves:
        return cls(np.zeros((n, m)), np.zeros((n, m)), np.zeros((n, m)),
                   np.ones(n), np.zeros(n, dtype=bool), np.full(n, np.nan), np.zeros(n))


MIN_EVAL_INTERVAL = 1e-4


def eval_grid(eval_interval: float) -> np.ndarray:
    """Progress points of the evals: every ``eval_interval``, the last one exactly 1.0.

    When 1/eval_interval is not a whole number the last interval is shorter (0.3 gives
    0.3, 0.6, 0.9, 1.0).
    """
    eval_interval = real("eval_interval", eval_interval, low=0.0, high=1.0, low_open=True)
    if eval_interval < MIN_EVAL_INTERVAL:
        # Every job holds one row per eval point: 1e-9 ran a 128 GiB machine out of memory.
        raise ValueError(f"eval_interval must be >= {MIN_EVAL_INTERVAL:g} (at most "
                         f"{round(1 / MIN_EVAL_INTERVAL)} evals per job), got {eval_interval!r}")
    # round() first so that 0.05 gives 20 points, not 21 from float error in 1 / 0.05.
    n = round(1.0 / eval_interval)
    if abs(n * eval_interval - 1.0) > 1e-9:
        n = int(np.ceil(1.0 / eval_interval))
    grid = np.minimum(np.arange(1, n + 1) * eval_interval, 1.0)
    grid[-1] = 1.0
    return grid


def gao_shape(x: np.ndarray) -> np.ndarray:
    """Gao's R(d) = d (alpha - beta ln d) normalised to peak 1 at x = d / d* = 1.

    With d* = exp(alpha / beta - 1) the argmax and R(d*) = beta d*, R(d) / R(d*) =
    x (1 - ln x): alpha and beta only set the peak's location and height, which the
    affine map to quality absorbs. Concave, so one peak; 0 at x = 0.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0.0, x * (1.0 - np.log(x)), 0.0)


def _uniform(rng: np.random.Generator, bounds: tuple[float, float], n: int) -> np.ndarray:
    return rng.uniform(bounds[0], bounds[1], size=n)[:, None]  # a column: broadcasts on p


def _exp_loss(p, loss0, loss_inf, tau):
    # Strictly decreasing in p for loss0 > loss_inf: falls through any hacking.
    return loss_inf + (loss0 - loss_inf) * np.exp(-p / tau)


def rlhf_curves(progress: np.ndarray, hacking: np.ndarray, rng: np.random.Generator, *,
                late_scale: float = 1.0, decline_scale: float = 1.0) -> Curves:
    """RLHF runs; ``hacking`` (bool per job) is the drawn label.

    eval_true = q0 + gain * f(x) / f(min(x_end, 1)) with f = gao_shape, x = d / d*,
    d / d_end = p ** (KL_POWER / 2), so x = (p / p*) ** (KL_POWER / 2) where p* is the
    peak's progress. This is an affine map of R(d) per job, scaled so that the best
    quality reached within the run is q0 + gain. proxy = proxy_gain * d / d_end (the
    proxy keeps rising with the distance travelled).

    ``late_scale`` stretches healthy runs about their start (every gain x late_scale) and
    ``decline_scale`` hacking runs' post-peak part about the peak (every loss x
    decline_scale); 1.0 is today's curves. ``evalstop.workload.knobs`` turns SNR targets
    into these stretches. They draw nothing, so the random stream is the same.
    """
    hacking = np.asarray(hacking, dtype=bool)
    n, p = len(hacking), np.asarray(progress, dtype=float)[None, :]
    peak = np.where(hacking,
                    rng.uniform(*RLHF_HACK_PEAK, size=n),
                    rng.uniform(*RLHF_HEALTHY_PEAK, size=n))[:, None]
    q0, gain = _uniform(rng, RLHF_Q0, n), _uniform(rng, RLHF_GAIN, n)
    proxy_gain = _uniform(rng, RLHF_PROXY_GAIN, n)
    loss0, loss_inf = _uniform(rng, RLHF_LOSS0, n), _uniform(rng, RLHF_LOSS_INF, n)
    tau = _uniform(rng, RLHF_LOSS_TAU, n)

    half = KL_POWER / 2.0
    x = (p / peak) ** half
    x_end = (1.0 / peak) ** half
    eval_true = q0 + gain * gao_shape(x) / gao_shape(np.minimum(x_end, 1.0))
    if late_scale != 1.0:
        healthy = ~hacking[:, None]
        eval_true = np.where(healthy, q0 + late_scale * (eval_true - q0), eval_true)
    if decline_scale != 1.0:
        top = q0 + gain  # a hacking run's peak quality (the normaliser is f(1) = 1)
        falling = hacking[:, None] & (p > peak)
        eval_true = np.where(falling, top - decline_scale * (top - eval_true), eval_true)
    return Curves(eval_true=eval_true,
                  proxy=proxy_gain * p ** half,
                  loss=_exp_loss(p, loss0, loss_inf, tau),
                  peak_progress=np.minimum(peak[:, 0], 1.0),
                  hacking=hacking.copy())


def lora_curves(progress: np.ndarray, n: int, rng: np.random.Generator) -> Curves:
    """LoRA runs: eval_true = q0 + gain * (1 - exp(-p/tau)) / (1 - exp(-1/tau)).

    Strictly increasing, so it peaks at the end (peak_progress 1.0) and never hacks. The
    loss converges with the same tau; the proxy follows the quality's shape.
    """
    p = np.asarray(progress, dtype=float)[None, :]
    q0, gain, tau = _uniform(rng, LORA_Q0, n), _uniform(rng, LORA_GAIN, n), _uniform(rng, LORA_TAU, n)
    proxy_gain = _uniform(rng, LORA_PROXY_GAIN, n)
    loss0, loss_inf = _uniform(rng, LORA_LOSS0, n), _uniform(rng, LORA_LOSS_INF, n)
    shape = -np.expm1(-p / tau) / -np.expm1(-1.0 / tau)
    return Curves(eval_true=q0 + gain * shape,
                  proxy=proxy_gain * shape,
                  loss=_exp_loss(p, loss0, loss_inf, tau),
                  peak_progress=np.ones(n),
                  hacking=np.zeros(n, dtype=bool))


def dpo_curves(progress: np.ndarray, n: int, rng: np.random.Generator) -> Curves:
    """DPO runs: eval_true = q0 + gain * (1 - (1 - min(p / p_sat, 1))**2).

    Rises with a smoothly vanishing slope and is flat after p_sat (the small plateau). It
    never falls, so peak_progress is 1.0 and it never hacks. The proxy (the implicit
    reward margin) keeps rising linearly; the loss falls from ln 2.
    """
    p = np.asarray(progress, dtype=float)[None, :]
    q0, gain = _uniform(rng, DPO_Q0, n), _uniform(rng, DPO_GAIN, n)
    p_sat = _uniform(rng, DPO_SATURATE, n)
    proxy_gain = _uniform(rng, DPO_PROXY_GAIN, n)
    loss_inf, tau = _uniform(rng, DPO_LOSS_INF, n), _uniform(rng, DPO_LOSS_TAU, n)
    rest = 1.0 - np.minimum(p / p_sat, 1.0)
    return Curves(eval_true=q0 + gain * (1.0 - rest * rest),
                  proxy=proxy_gain * p,
                  loss=_exp_loss(p, DPO_LOSS0, loss_inf, tau),
                  peak_progress=np.ones(n),
                  hacking=np.zeros(n, dtype=bool))


def job_curves(types: np.ndarray, hacking: np.ndarray, progress: np.ndarray,
               rng: np.random.Generator, *, late_scale: float = 1.0,
               decline_scale: float = 1.0, rlhf_family: str = "gao",
               hack_peak: float | None = None, fall_scale: float = 1.0) -> Curves:
    """Curves for a mixed set of jobs: each row gets its type's family.

    ``hacking`` is only read for RLHF rows (other families never hack); the scales go to
    ``rlhf_curves``. ``rlhf_family="fitted"`` draws RLHF rows from the fit to measured runs
    (``evalstop.workload.fitted_curves``) instead, with their own eval noise;
    ``hack_peak`` and ``fall_scale`` go to it.
    """
    if rlhf_family not in RLHF_FAMILIES:
        raise ValueError(f"rlhf_family must be one of {', '.join(RLHF_FAMILIES)}, "
                         f"got {rlhf_family!r}")
    types = np.asarray(types)
    unknown = sorted(set(np.unique(types).tolist()) - set(JOB_TYPES))
    if unknown:
        raise ValueError(f"unknown job type(s) {unknown}; known: {list(JOB_TYPES)}")
    out = Curves.empty(len(types), len(progress))
    for name in JOB_TYPES:  # fixed order: the draws do not depend on how rows interleave
        rows = np.flatnonzero(types == name)
        if name == "rlhf" and rlhf_family == "fitted":
            from evalstop.workload.fitted_curves import fitted_rlhf_curves

            part = fitted_rlhf_curves(progress, np.asarray(hacking, dtype=bool)[rows], rng,
                                      hack_peak=hack_peak, fall_scale=fall_scale)
        elif name == "rlhf":
            part = rlhf_curves(progress, np.asarray(hacking, dtype=bool)[rows], rng,
                               late_scale=late_scale, decline_scale=decline_scale)
        elif name == "lora":
            part = lora_curves(progress, len(rows), rng)
        else:
            part = dpo_curves(progress, len(rows), rng)
        for field in ("eval_true", "proxy", "loss", "peak_progress", "hacking"):
            getattr(out, field)[rows] = getattr(part, field)
        if part.noise_sd is not None:
            out.noise_sd[rows], out.noise_ell[rows] = part.noise_sd, part.noise_ell
    return out


def add_eval_noise(eval_true: np.ndarray, sigma: float, rng: np.random.Generator, *,
                   curves: Curves | None = None, progress=None) -> np.ndarray:
    """Observed evals: eval_true plus independent Gaussian noise of std ``sigma``.

    Not clipped to [0, 1]: clipping would bias the mean near the bounds. The noise is drawn
    even when sigma is 0, so the generator advances the same way for every sigma. Rows
    of ``curves`` with their own noise (``noise_sd`` not NaN) get it instead, made from the
    same normal draws (``fitted_curves.correlated_noise`` on the grid ``progress``).
    """
    sigma = real("sigma", sigma, low=0.0)
    z = rng.standard_normal(np.shape(eval_true))
    noise = sigma * z
    own = (np.flatnonzero(np.isfinite(curves.noise_sd))
           if curves is not None and curves.noise_sd is not None else np.array([], int))
    if own.size:
        from evalstop.workload.fitted_curves import correlated_noise

        noise[own] = correlated_noise(z[own], progress, curves.noise_sd[own],
                                      curves.noise_ell[own])
    return eval_true + noise
