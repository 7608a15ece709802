"""The eval's noise sigma measured from several jobs' eval histories, for ``cusum-known``.

Eval noise belongs to the eval (how many prompts it grades, how it samples), not to the
job: every job scored by the same eval suite shares it. One job's ~20 evals estimate it
poorly (``noise.sigma_hat`` is often 25% off and is widened to stay safe), which is the
largest recall cost the detector benchmark measured. Pooling the second differences of a
few finished jobs that used the same eval gives a much better estimate, which
``cusum-known:sigma=S`` can then use for every later job.

The estimator is the per-job one without its small-sample widening: the winsorised scale of
the pooled second differences (``noise.diff_scale``) over sqrt(6). Each job's finite evals
are taken in order, so a NaN eval is skipped, as the detectors skip it. The interval, when
asked for, resamples whole jobs (a job's second differences are correlated).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalstop.detectors.noise import (
    CLIP,
    CLIPPED_MEAN_ABS,
    MAD_N01,
    MEAN_ABS,
    MIN_DIFFS,
    diff_scale,
    second_differences,
)

MIN_POOLED_DIFFS = 10  # below this the pooled scale is too rough to configure a rule with


@dataclass(frozen=True)
class NoiseMeasure:
    sigma: float
    n_jobs: int  # jobs that gave at least one second difference
    n_diffs: int
    lo: float = math.nan  # bootstrap interval over jobs; NaN when not asked for
    hi: float = math.nan
    per_job: tuple[float, ...] = ()  # each job's own (unwidened) estimate, jobs with enough


def _diffs(values: Sequence[float]) -> list[float]:
    finite = [float(v) for v in values if math.isfinite(float(v))]
    return second_differences(finite)


def measure_noise(series: Sequence[Sequence[float]], *, rng: np.random.Generator | None = None,
                  n_boot: int = 1000, level: float = 0.9) -> NoiseMeasure:
    """Pooled noise sigma of the jobs' evals (each job's values in step order).

    With ``rng``, also a ``level`` bootstrap interval from ``n_boot`` resamples of the jobs.
    Raises ValueError when the jobs give fewer than ``MIN_POOLED_DIFFS`` second differences,
    or when the evals are so large that their second differences overflow.
    """
    per = [d for d in (_diffs(s) for s in series) if d]
    n_diffs = sum(len(d) for d in per)
    if n_diffs < MIN_POOLED_DIFFS:
        raise ValueError(f"too few evals to measure the noise: {n_diffs} second differences "
                         f"from {len(per)} job(s), need at least {MIN_POOLED_DIFFS} (each job "
                         "gives its number of finite evals minus 2)")
    pooled = [x for d in per for x in d]
    sigma = diff_scale(pooled) / math.sqrt(6.0)
    own = tuple(diff_scale(d) / math.sqrt(6.0) for d in per if len(d) >= MIN_DIFFS)
    if not all(math.isfinite(x) for x in (*pooled, sigma, *own)):
        raise ValueError("eval values too large to measure the noise: their second "
                         "differences overflow (|eval| must stay well below 1e307)")
    lo = hi = math.nan
    if rng is not None and len(per) > 1:
        arrays = [np.asarray(d) for d in per]
        draws = [_diff_scale_np(np.concatenate([arrays[i] for i in
                                                rng.integers(0, len(per), len(per))]))
                 for _ in range(n_boot)]
        lo, hi = (float(q) / math.sqrt(6.0)
                  for q in np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]))
    return NoiseMeasure(sigma, len(per), n_diffs, lo, hi, own)


def _diff_scale_np(d: np.ndarray) -> float:
    """``noise.diff_scale`` vectorised, for the bootstrap's thousands of pooled resamples
    (the online rules keep the list version: numpy's per-call cost dominates at ~20 values)."""
    dev = np.abs(d - np.median(d))
    robust_sd = float(np.median(dev)) / MAD_N01
    if robust_sd > 0.0:
        return float(np.minimum(dev, CLIP * robust_sd).mean()) / CLIPPED_MEAN_ABS
    return float(dev.mean()) / MEAN_ABS
