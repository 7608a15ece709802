"""The workload knobs that decide whether a k-decline rule can be precise: two signal-to-noise
ratios of the RLHF curves, in units of the eval noise.

* **late-run SNR**: how much a *healthy* RLHF run still gains per eval late in training
  (the evals in the second half of the run, ``p > LATE_FROM``), divided by the eval noise
  sigma. Below about 1 a healthy run's late evals are mostly noise, and two chance
  declines in a row come often.
* **decline SNR**: how much a *hacking* RLHF run loses per eval after its true peak
  (drop from the peak to the end, over the evals after the peak), divided by sigma.

Both are per eval, so at a fixed curve they grow with the eval interval; and both are
set by the curves and the noise together. The workload generator takes each as a target
(``late_snr=``, ``decline_snr=``; None keeps today's curves) and realises it by stretching
the curves, never the noise:

* healthy RLHF quality about its start: ``q0 + c_late * (eval_true - q0)``. Every per-eval
  gain scales by ``c_late``; the run stays monotone and its start is unchanged (its end
  quality rises with c_late, past 1.0 for c_late above about 1.5: an eval-based rule
  only sees gains in noise units, so the 0..1 scale is stretched rather than the noise
  shrunk);
* hacking RLHF quality after its peak about the peak: ``top - c_decline * (top -
  eval_true)``. Every post-peak loss scales by ``c_decline``; the rise, the peak's place and
  height, and so the labels and the wasted-compute accounting, are unchanged. Up to
  c_decline 5.9 quality stays positive; steeper, the worst runs end below 0 (harmless to
  an eval-based rule, but their "quality kept" ratio then means little).

``c = target / expected`` where ``expected`` is the SNR today's curves have *in
expectation* on this eval grid and noise (computed by quadrature over the documented
parameter ranges, no random draws), so a workload's measured SNR scatters around the
target as any drawn quantity does. The measurements (``late_snr``, ``decline_snr``) are
the ones the claim map places the real lab runs with.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from evalstop.workload._checks import real
from evalstop.workload.curves import (
    MIN_DROP,
    RLHF_GAIN,
    RLHF_HACK_PEAK,
    RLHF_HEALTHY_PEAK,
    gao_shape,
)

LATE_FROM = 0.5  # "late in training": evals after half the run
_QUAD = 4000  # midpoint-rule points over the peak-progress range
# The shallowest hacking run falls 0.015 from its peak; below this stretch it would fall by
# less than MIN_DROP and its "hacking" label would no longer hold.
MIN_DECLINE_SCALE = MIN_DROP / 0.015


def _steps(grid: np.ndarray) -> np.ndarray:
    """Progress between consecutive evals (the first from 0)."""
    return np.diff(np.concatenate(([0.0], grid)))


def _late_index(grid: np.ndarray) -> np.ndarray:
    """Indices of the diffs (eval j minus eval j-1, j >= 1) that end late in training."""
    return np.flatnonzero(grid[1:] > LATE_FROM) + 1


@functools.lru_cache(maxsize=64)
def _expected(grid_key: tuple[float, ...]) -> tuple[float, float]:
    """(late gain per eval of a healthy run, post-peak loss per eval of a hacking run) of
    today's curves, in expectation over their parameter ranges (quality units)."""
    grid = np.asarray(grid_key)
    mean_gain = float(np.mean(RLHF_GAIN))  # gain is drawn independently of the peak
    lo, hi = RLHF_HEALTHY_PEAK
    peaks = lo + (np.arange(_QUAD) + 0.5) * (hi - lo) / _QUAD
    norm = gao_shape(np.minimum(1.0 / peaks, 1.0))[:, None]
    shape = gao_shape(grid[None, :] / peaks[:, None]) / norm
    late = _late_index(grid)
    late_gain = (mean_gain * float(np.diff(shape, axis=1)[:, late - 1].mean()) if late.size
                 else math.nan)
    lo, hi = RLHF_HACK_PEAK
    peaks = lo + (np.arange(_QUAD) + 0.5) * (hi - lo) / _QUAD
    drop = 1.0 - gao_shape(1.0 / peaks)  # from the peak (1) to the end, per unit gain
    evals_after = (1.0 - peaks) / float(np.mean(_steps(grid)))
    decline = mean_gain * float(np.mean(drop / evals_after))
    return late_gain, decline


def _key(grid) -> tuple[float, ...]:
    return tuple(float(g) for g in np.asarray(grid, dtype=float))


def default_snrs(grid, sigma: float) -> tuple[float, float]:
    """(late-run SNR, decline SNR) of today's curves on this eval grid at noise ``sigma``."""
    sigma = real("sigma", sigma, low=0.0, low_open=True)
    late, decline = _expected(_key(grid))
    return late / sigma, decline / sigma


def scales(grid, sigma: float, late_snr: float | None,
           decline_snr: float | None) -> tuple[float, float]:
    """(c_late, c_decline): the curve stretches that give these SNRs (1.0 for None)."""
    if late_snr is None and decline_snr is None:
        return 1.0, 1.0
    if not (isinstance(sigma, (int, float)) and sigma > 0):
        raise ValueError(f"late_snr and decline_snr are in units of the eval noise and need "
                         f"sigma > 0, got sigma={sigma!r}")
    late0, decline0 = default_snrs(grid, sigma)
    c_late = c_decline = 1.0
    if late_snr is not None:
        late_snr = real("late_snr", late_snr, low=0.0, low_open=True)
        if not np.isfinite(late0):
            raise ValueError("late_snr needs at least one eval after half the run")
        c_late = late_snr / late0
    if decline_snr is not None:
        decline_snr = real("decline_snr", decline_snr, low=0.0, low_open=True)
        c_decline = decline_snr / decline0
        if c_decline < MIN_DECLINE_SCALE:
            raise ValueError(f"decline_snr must be >= {MIN_DECLINE_SCALE * decline0:.3g} here "
                             f"(sigma {sigma:g}, {len(np.asarray(grid))} evals): a shallower "
                             f"decline would fall by less than {MIN_DROP} and not be hacking")
    return c_late, c_decline


def snr_for_scale(grid, sigma: float, c_late: float, c_decline: float) -> tuple[float, float]:
    """The SNRs that the stretches (c_late, c_decline) give on this grid and noise: how a
    preset fixed at one setting carries its curves to another (e.g. the sigma sweep)."""
    late0, decline0 = default_snrs(grid, sigma)
    return c_late * late0, c_decline * decline0


# --- measurement, on any curves (synthetic or real) -------------------------------------

def late_gain_per_eval(curves: np.ndarray, grid) -> np.ndarray:
    """(runs,) mean gain per eval over the late evals of each row of ``curves``."""
    grid = np.asarray(grid, dtype=float)
    late = _late_index(grid)
    return np.diff(np.asarray(curves, dtype=float), axis=1)[:, late - 1].mean(axis=1)


def decline_per_eval(curves: np.ndarray, grid, peak_progress) -> np.ndarray:
    """(runs,) loss per eval after the peak: (highest value - last value) over the number of
    evals between the peak's progress and the end (at the grid's mean spacing)."""
    curves = np.asarray(curves, dtype=float)
    grid = np.asarray(grid, dtype=float)
    after = (1.0 - np.asarray(peak_progress, dtype=float)) / float(np.mean(_steps(grid)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(after > 0, (curves.max(axis=1) - curves[:, -1]) / after, np.nan)


def measure(eval_true: np.ndarray, grid, hacking, peak_progress, sigma: float) -> dict:
    """Measured SNRs of a set of RLHF runs: the mean per-eval late gain of the healthy rows
    and the mean per-eval post-peak loss of the hacking rows, over sigma."""
    hacking = np.asarray(hacking, dtype=bool)
    sigma = real("sigma", sigma, low=0.0, low_open=True)
    late = late_gain_per_eval(eval_true[~hacking], grid) if (~hacking).any() else np.array([])
    dec = (decline_per_eval(eval_true[hacking], grid, np.asarray(peak_progress)[hacking])
           if hacking.any() else np.array([]))
    return {"late_snr": float(np.mean(late)) / sigma if late.size else math.nan,
            "decline_snr": float(np.nanmean(dec)) / sigma if dec.size else math.nan,
            "n_evals": int(len(np.asarray(grid))), "n_healthy": int(late.size),
            "n_hacking": int(dec.size), "sigma": sigma}


def workload_snrs(w) -> dict:
    """Measured SNRs of a workload's RLHF jobs at its own noise (``w.meta['sigma']``)."""
    rows = np.asarray(w.type) == "rlhf"
    return measure(w.eval_true[rows], w.eval_progress, w.hacking[rows],
                   w.peak_progress[rows], w.meta["sigma"])


def lab_snrs(corpus=None) -> dict:
    """The SNRs of the real lab runs (the shipped corpus unless ``corpus``): late gains and
    declines from each run's smoothed gold curve (the label rule's smoothing), over the
    runs' pooled eval noise as ``evalstop noise`` measures it (second differences of the
    raw evals). The step-0 eval (the SFT policy) is not an eval of the run."""
    from evalstop.detectors.measured_noise import measure_noise
    from evalstop.workload.real_curves import _shipped, corpus_arrays

    data = _shipped() if corpus is None else corpus_arrays(corpus)
    sigma = measure_noise([row.tolist() for row in data["eval"]]).sigma
    grid = data["progress"][1:]
    return measure(data["eval_true"][:, 1:], grid, data["hacking"], data["peak_progress"],
                   sigma)


def at_eval_count(snr: float, n_from: int, n_to: int) -> float:
    """A per-eval SNR measured at ``n_from`` evals per run, carried to ``n_to``: per-eval
    gains scale with the progress between evals (exact for straight stretches of curve,
    the first-order answer otherwise)."""
    return snr * n_from / n_to
