"""The shape of eval curves in numbers: one code for real runs and for generated ones.

Issue 44 compared the simulator's curves with real runs statistic by statistic; these are
those statistics, measured from a run's *observed* evals alone (its progress grid and
scores, plus its class: hacking or healthy), so real logs and generated workloads are
measured the same way and a fit can be checked against runs it never saw.

Per run (``run_stats``), with ``w`` an odd smoothing window covering about 5% of the run
(at least 3 evals) and ``s`` the evals smoothed by a centred moving average over ``w``:

* ``noise``: the robust scale (1.4826 x median absolute value) of the residual
  ``eval - s``, divided by sqrt(1 - 1/w) so that it is the noise sd for white noise;
  autocorrelated noise reads lower (the smoothing follows it), the same for every run;
* ``gain``: the smoothed peak minus the smoothed first eval;
* ``peak_at``: the progress of the smoothed peak;
* ``fall_share``: (smoothed peak - mean of the last 3 evals) / gain: what the run gives
  back after its peak, as a share of what it had gained;
* ``fall_speed``: that fall in noise sigmas per 5% of the run after the peak;
* ``fall_half``: the share of the fall reached halfway from the peak to the end (0.5 for
  a straight fall, near 1 for a collapse);
* ``rise_at``: the progress at which the smoothed curve first reaches 90% of its gain;
* ``late_slope``: the least-squares slope of the evals after half the run, in noise sigmas
  per 5% of the run;
* ``drift``: the same slope of the smoothed curve after ``max(0.5, rise_at)``, in noise
  sigmas per unit of progress (what the generator draws for healthy runs);
* ``noise_over_gain``, ``gain_snr`` (gain / noise), ``fall_snr`` (fall / noise);
* ``ar1``: the lag-1 autocorrelation of the residual from a 25-eval centred mean (the
  measure of ``benchmarks/lab_dense_shape.py``), for runs of at least ``DENSE_EVALS``
  evals (NaN for fewer: on 26 evals the detrending alone makes it negative);
* ``n_evals``.

``table`` reduces runs of one class to the issue's statistics (median and quartiles).
"""

from __future__ import annotations

import math

import numpy as np

SHARE_UNIT = 0.05  # "per 5% of the run": the unit of the speed statistics
SMOOTH_SHARE = 0.05  # the smoothing window covers about this share of the run's evals
TAIL = 3  # evals averaged for the end of a run (the lab label rule's)
RISE_LEVEL = 0.9  # "risen": the smoothed curve has reached this share of its gain
AR_WINDOW = 25  # evals in the centred mean the residual autocorrelation is measured around
DENSE_EVALS = 100  # fewest evals for which the residual autocorrelation is measured
MAD_N01 = 1.4826  # median absolute deviation -> sd for a normal
MIN_EVALS = 2 * TAIL + 2

# The statistics of the table, per class: (key, what it is). "hacking" and
# "healthy" rows come from runs of that class only; "all" rows from every run.
TABLE = (
    ("hacking", "peak_at", "hacking peak, share of the run"),
    ("hacking", "fall_share", "hacking fall after the peak, share of the gain"),
    ("hacking", "fall_speed", "speed of the fall, noise sigmas per 5% of the run"),
    ("healthy", "late_slope", "healthy runs' late slope, noise sigmas per 5% of the run"),
    ("dense", "ar1", "residual lag-1 autocorrelation, dense evals on a fixed set"),
    ("hacking", "noise_over_gain", "noise / gain, hacking runs"),
    ("healthy", "noise_over_gain", "noise / gain, healthy runs"),
    ("all", "n_evals", "evals per run"),
)


def window(n: int) -> int:
    """The odd smoothing window of a run of ``n`` evals: about 5% of it, at least 3."""
    w = max(3, int(round(n * SMOOTH_SHARE)))
    return w if w % 2 else w + 1


def smooth(values: np.ndarray, w: int) -> np.ndarray:
    """Centred moving average over ``w`` (odd) evals, the ends padded with the end values."""
    half = w // 2
    return np.convolve(np.pad(values, half, mode="edge"), np.ones(w) / w, mode="valid")


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 3 or np.ptp(x) == 0:
        return math.nan
    return float(np.polyfit(x, y, 1)[0])


def residual_ar1(values: np.ndarray) -> float:
    """Lag-1 autocorrelation of the residual from an ``AR_WINDOW``-eval centred mean."""
    r = values - smooth(values, AR_WINDOW)
    if r.size < 3 or np.std(r[:-1]) == 0 or np.std(r[1:]) == 0:
        return math.nan
    return float(np.corrcoef(r[:-1], r[1:])[0, 1])


def run_stats(progress, evals) -> dict:
    """The statistics of one run from its eval grid (progress 0..1, increasing) and its
    observed scores (finite). A ValueError names a run too short or malformed."""
    p = np.asarray(progress, dtype=float)
    e = np.asarray(evals, dtype=float)
    if p.ndim != 1 or p.shape != e.shape:
        raise ValueError(f"progress {p.shape} and evals {e.shape} must be 1-D, same length")
    if e.size < MIN_EVALS:
        raise ValueError(f"a run needs at least {MIN_EVALS} evals to be measured, got {e.size}")
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(p)) and np.all(np.diff(p) > 0)):
        raise ValueError("a run's progress must increase and its evals be finite")
    n = e.size
    w = window(n)
    s = smooth(e, w)
    noise = MAD_N01 * float(np.median(np.abs(e - s))) / math.sqrt(1.0 - 1.0 / w)
    i = int(np.argmax(s))
    gain = float(s[i] - s[0])
    fall = float(s[i] - e[-TAIL:].mean())
    after = 1.0 - p[i]
    risen = np.flatnonzero(s - s[0] >= RISE_LEVEL * gain) if gain > 0 else np.array([i])
    rise_at = float(p[risen[0]]) if risen.size else float(p[i])
    mid = p[i] + after / 2.0
    j = min(int(np.searchsorted(p, mid)), n - 1)
    late = p > 0.5
    drift_from = p >= max(0.5, rise_at)
    unit = noise if noise > 0 else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        return {
            "n_evals": n,
            "noise": noise,
            "gain": gain,
            "peak_at": float(p[i]),
            "fall_share": fall / gain if gain > 0 else math.nan,
            "fall_speed": (fall / unit) / (after / SHARE_UNIT) if after > 0 else math.nan,
            "fall_half": float((s[i] - s[j]) / fall) if fall > 0 and after > 0 else math.nan,
            "rise_at": rise_at,
            "late_slope": _slope(p[late], e[late]) * SHARE_UNIT / unit,
            "drift": _slope(p[drift_from], s[drift_from]) / unit,
            "noise_over_gain": noise / gain if gain > 0 else math.nan,
            "gain_snr": gain / unit,
            "fall_snr": fall / unit,
            "ar1": residual_ar1(e) if n >= DENSE_EVALS else math.nan,
        }


def _summary(values) -> dict:
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float)
    if v.size == 0:
        return {"n": 0, "median": None, "q25": None, "q75": None}
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return {"n": int(v.size), "median": float(med), "q25": float(q25), "q75": float(q75)}


def rows_of(stats: list[dict], hacking, cls: str) -> list[dict]:
    """The runs a table row reads: ``hacking``/``healthy`` by class, ``dense`` runs with a
    measured autocorrelation, ``all``."""
    hacking = np.asarray(hacking, dtype=bool)
    if cls == "hacking":
        return [s for s, h in zip(stats, hacking, strict=True) if h]
    if cls == "healthy":
        return [s for s, h in zip(stats, hacking, strict=True) if not h]
    if cls == "dense":
        return [s for s in stats if s["n_evals"] >= DENSE_EVALS]
    return list(stats)


def table(stats: list[dict], hacking) -> dict:
    """``{"class/key": {"n", "median", "q25", "q75"}}`` over ``TABLE``, plus the share of
    hacking runs."""
    out = {f"{cls}/{key}": _summary([s[key] for s in rows_of(stats, hacking, cls)])
           for cls, key, _ in TABLE}
    h = np.asarray(hacking, dtype=bool)
    out["all/hacking_share"] = {"n": int(h.size), "median": float(h.mean()) if h.size else None,
                                "q25": None, "q75": None}
    return out
