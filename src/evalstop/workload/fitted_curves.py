"""RLHF curves of the ``fitted`` preset: shapes drawn from a fit to measured runs.

Each job draws one run of its class from the fit (``evalstop.workload.fit``: the fit
part's measured runs, as generator parameters) and gets a curve of that run's shape in
units of its own eval noise ``u``:

* hacking: a rise of ``gain_snr * u`` to the peak at ``peak_at`` (``1 - (1 - p/p*)**2``),
  then a fall of ``fall_snr * u`` by the end, ``1 - (1 - t)**fall_c`` of it after a share
  ``t`` of the post-peak part (``fall_c`` 1 is straight, above 1 a collapse);
* healthy: a rise of ``gain_snr * u`` that reaches 90% of it at ``rise_at``, then a
  straight drift of ``drift * u`` per unit of progress (kept to less than a fifth of the
  gain downward, so a healthy run never falls like a hacking one);
* the peak level is drawn in ``PEAK_LEVEL`` and ``u`` is ``NOISE_UNIT`` unless the run's
  span would leave (0, 1), where it shrinks; a hacking fall is at least ``MIN_DROP``.

Noise: sd ``sd * u`` (``sd`` maps the measured noise to the process's), white for a run
measured on fresh samples, smoothed over ``ell`` progress units for one measured on a
fixed eval set (``correlated_noise``): evals wander together, as on a fixed set the same
items are graded at every checkpoint. Returned as ``noise_sd`` and ``noise_ell`` per job;
``add_eval_noise`` applies them.
"""

from __future__ import annotations

import functools

import numpy as np

from evalstop.workload.curves import (
    MIN_DROP,
    RLHF_LOSS0,
    RLHF_LOSS_INF,
    RLHF_LOSS_TAU,
    RLHF_PROXY_GAIN,
    Curves,
    _exp_loss,
    _uniform,
)

PEAK_LEVEL = (0.6, 0.9)  # a run's best quality, 0..1 scale
NOISE_UNIT = 0.02  # a run's eval noise unless its span needs a smaller one
FLOOR = 0.02  # lowest quality a run reaches
RISE_TO_SAT = 1.0 - np.sqrt(0.1)  # 1 - (1 - x)**2 reaches 0.9 at x = this
HEALTHY_DRIFT_FLOOR = 0.2  # a healthy run's drift loses at most this share of its gain


@functools.lru_cache(maxsize=4)
def _fit(path: str | None):
    from evalstop.workload.fit import load_fit

    return load_fit(path)


def fit_columns(fit: dict, cls: str) -> dict[str, np.ndarray]:
    """The fit's runs of class ``cls`` as arrays, one per parameter."""
    rows = fit["runs"][cls]
    return {k: np.array([float(r[k]) for r in rows]) for k, v in rows[0].items()
            if not isinstance(v, str)}  # the run's corpus is a name, not a parameter


def shapes(progress: np.ndarray, hacking: np.ndarray, rng: np.random.Generator,
           fit: dict, *, hack_peak: float | None = None, fall_scale: float = 1.0,
           pick: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """The noiseless curves (n, m) and per-job noise of ``hacking.size`` jobs on one grid.

    ``hack_peak`` (None: each run's own) puts every hacking peak there; ``fall_scale``
    multiplies every hacking fall (both for the savings map: how early, how far). Draws, in
    this order, whatever they are: a hacking run per hacking job, a healthy run per
    healthy job, then a peak level per job. ``pick`` (hacking rows, healthy rows) gives
    the fit runs instead of drawing them."""
    hacking = np.asarray(hacking, dtype=bool)
    n, p = hacking.size, np.asarray(progress, dtype=float)[None, :]
    hk, ok = fit_columns(fit, "hacking"), fit_columns(fit, "healthy")
    if pick is None:
        pick_h = rng.integers(0, hk["sd"].size, size=n)
        pick_o = rng.integers(0, ok["sd"].size, size=n)
    else:
        pick_h, pick_o = pick
    top = rng.uniform(*PEAK_LEVEL, size=n)

    def col(name_h, name_o=None):
        a = hk[name_h][pick_h] if name_h in hk else np.zeros(n)
        b = ok[name_o or name_h][pick_o] if (name_o or name_h) in ok else np.zeros(n)
        return np.where(hacking, a, b)

    gain_snr, sd, ell = col("gain_snr"), col("sd"), col("ell")
    fall_snr, fall_c, peak_at = col("fall_snr") * fall_scale, col("fall_c"), col("peak_at")
    if hack_peak is not None:
        peak_at = np.where(hacking, hack_peak, peak_at)
    rise_at, drift = col("rise_at"), col("drift")
    p_sat = np.clip(rise_at / RISE_TO_SAT, 1e-3, 1.0)
    drift = np.maximum(drift, -HEALTHY_DRIFT_FLOOR * gain_snr / np.maximum(1.0 - p_sat, 1e-3))
    # Healthy runs drifting upward end above the rise's top: the span includes it.
    span = np.where(hacking, np.maximum(gain_snr, fall_snr),
                    gain_snr + np.maximum(drift, 0.0) * (1.0 - p_sat))
    u = np.minimum(NOISE_UNIT, (top - FLOOR) / np.maximum(span, 1e-9))
    u = np.where(hacking, np.maximum(u, MIN_DROP / np.maximum(fall_snr, 1e-9)), u)
    gain = gain_snr * u
    top = np.where(hacking, top, top - np.maximum(drift, 0.0) * (1.0 - p_sat) * u)
    q0 = top - gain

    col_ = lambda v: v[:, None]  # noqa: E731 - a column that broadcasts on p
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(col_(peak_at) > 0, np.minimum(p / col_(peak_at), 1.0), 1.0)
        after = np.clip((p - col_(peak_at)) / np.maximum(1.0 - col_(peak_at), 1e-9), 0.0, 1.0)
    rise = 1.0 - (1.0 - x) ** 2
    fall = 1.0 - (1.0 - after) ** col_(fall_c)
    hack_curve = col_(q0) + col_(gain) * rise - col_(fall_snr * u) * fall
    xs = np.minimum(p / col_(p_sat), 1.0)
    healthy_curve = (col_(q0) + col_(gain) * (1.0 - (1.0 - xs) ** 2)
                     + col_(drift * u) * np.maximum(p - col_(p_sat), 0.0))
    return {"eval_true": np.where(hacking[:, None], hack_curve, healthy_curve),
            "peak_progress": np.where(hacking, peak_at, 1.0),
            "noise_sd": sd * u, "noise_ell": ell}


def fitted_rlhf_curves(progress: np.ndarray, hacking: np.ndarray, rng: np.random.Generator,
                       fit: dict | None = None, *, hack_peak: float | None = None,
                       fall_scale: float = 1.0) -> Curves:
    """RLHF runs of the fitted preset (the shipped fit unless ``fit``); proxy and loss as
    the paper preset's (the proxy keeps rising, the loss keeps falling)."""
    hacking = np.asarray(hacking, dtype=bool)
    n, p = hacking.size, np.asarray(progress, dtype=float)[None, :]
    s = shapes(progress, hacking, rng, _fit(None) if fit is None else fit,
               hack_peak=hack_peak, fall_scale=fall_scale)
    proxy_gain = _uniform(rng, RLHF_PROXY_GAIN, n)
    loss0, loss_inf = _uniform(rng, RLHF_LOSS0, n), _uniform(rng, RLHF_LOSS_INF, n)
    tau = _uniform(rng, RLHF_LOSS_TAU, n)
    return Curves(eval_true=s["eval_true"], proxy=proxy_gain * p,
                  loss=_exp_loss(p, loss0, loss_inf, tau),
                  peak_progress=np.minimum(s["peak_progress"], 1.0), hacking=hacking.copy(),
                  noise_sd=s["noise_sd"], noise_ell=s["noise_ell"])


def correlated_noise(z: np.ndarray, progress: np.ndarray, sd: np.ndarray,
                     ell: np.ndarray) -> np.ndarray:
    """Standard normals ``z`` (n, m) made into each row's noise: sd ``sd``, smoothed by a
    Gaussian kernel of sd ``ell`` progress units (white where that is under a quarter of an
    eval spacing), so evals ``d`` spacings apart correlate as exp(-d**2 / (4 ell**2)).
    The ends reflect the row's own draws, so no draw is added."""
    z = np.asarray(z, dtype=float)
    spacing = float(np.mean(np.diff(np.concatenate(([0.0], np.asarray(progress, float))))))
    out = z.copy()
    for i, width in enumerate(np.asarray(ell, dtype=float) / spacing):
        if width < 0.25:
            continue
        half = min(int(np.ceil(4.0 * width)), z.shape[1] - 1)
        k = np.exp(-0.5 * (np.arange(-half, half + 1) / width) ** 2)
        k /= np.sqrt(np.sum(k * k))
        out[i] = np.convolve(np.pad(z[i], half, mode="reflect"), k, mode="valid")
    return out * np.asarray(sd, dtype=float)[:, None]


def fitted_runs(rng: np.random.Generator, n: int, fit: dict | None = None,
                hacking_share: float | None = None) -> list[tuple[np.ndarray, np.ndarray, bool]]:
    """``n`` generated runs as ``(progress, observed evals, hacking)``, each on the grid of
    the fit run its eval count is drawn from (``0, 1/(k-1), ..., 1``): what the
    goodness-of-fit check measures with the same code as the real runs."""
    fit = _fit(None) if fit is None else fit
    share = fit["hacking_share"]["rlhf"] if hacking_share is None else hacking_share
    hacking = rng.random(n) < share
    # The run is drawn whole, its eval count included: its noise was measured on it.
    pick_h = rng.integers(0, len(fit["runs"]["hacking"]), size=n)
    pick_o = rng.integers(0, len(fit["runs"]["healthy"]), size=n)
    counts = np.where(hacking, fit_columns(fit, "hacking")["n_evals"][pick_h],
                      fit_columns(fit, "healthy")["n_evals"][pick_o]).astype(int)
    out: list = [None] * n
    for k in np.unique(counts):  # one batch per eval grid
        rows = np.flatnonzero(counts == k)
        grid = np.linspace(0.0, 1.0, int(k))
        s = shapes(grid, hacking[rows], rng, fit, pick=(pick_h[rows], pick_o[rows]))
        noise = correlated_noise(rng.standard_normal((rows.size, grid.size)), grid,
                                 s["noise_sd"], s["noise_ell"])
        for i, obs in zip(rows, s["eval_true"] + noise, strict=True):
            out[i] = (grid, obs, bool(hacking[i]))
    return out
