"""Attach types, hidden labels, duration estimates and curves to a job table.

The one path from a ``JobTable`` to a ``Workload``, shared by the synthetic generator and
by trace replay, so both draw the hidden parts the same way. Draw order (fixed, for
reproducibility): types (only if the table has none), hacking labels, duration estimates
(only if the table has none), curve parameters, eval noise.
"""

from __future__ import annotations

import numpy as np

from evalstop.workload._checks import real
from evalstop.workload.curves import add_eval_noise, eval_grid, job_curves
from evalstop.workload.knobs import scales
from evalstop.workload.model import Workload
from evalstop.workload.presets import (
    EST_SIGMA,
    draw_hacking,
    draw_types,
    estimate_durations,
    get_preset,
    resolve_hacking_frac,
)
from evalstop.workload.real_curves import apply_lab_curves, check_choice
from evalstop.workload.table import JobTable

DEFAULT_SIGMA = 0.02  # the paper's default eval noise (it sweeps 0.01..0.12)
DEFAULT_EVAL_INTERVAL = 0.05  # an eval every 5% of progress: 20 evals per job
DEFAULT_TENANT = "default"  # tenant of every job when the source names none


def check_generator(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


MAX_EVAL_POINTS = 20_000_000


def check_curve_knobs(spec, rlhf_curves: str, late_snr, decline_snr) -> None:
    """The SNR knobs stretch the paper's synthetic RLHF curves and nothing else."""
    check_choice(rlhf_curves)
    if late_snr is None and decline_snr is None:
        return
    if rlhf_curves != "synthetic":
        raise ValueError("late_snr and decline_snr set synthetic RLHF curves; lab curves "
                         "are real runs and keep their own")
    if spec.rlhf_family != "gao":
        raise ValueError(f"late_snr and decline_snr stretch the paper's curves; preset "
                         f"{spec.name!r} has curves fitted to measured runs")


def check_fitted_knobs(spec, hack_peak, fall_scale) -> None:
    """``hack_peak`` in [0, 1) and ``fall_scale`` > 0, on a preset with fitted curves only."""
    if hack_peak is None and fall_scale == 1.0:
        return
    if spec.rlhf_family != "fitted":
        raise ValueError(f"hack_peak and fall_scale move fitted curves; preset {spec.name!r} "
                         "has the paper's")
    if hack_peak is not None:
        real("hack_peak", hack_peak, low=0.0, high=0.99)
    real("fall_scale", fall_scale, low=0.0, low_open=True)


def workload_from_table(table: JobTable, rng: np.random.Generator, *, preset: str = "paper",
                        sigma: float = DEFAULT_SIGMA, hacking_frac: float | None = None,
                        eval_interval: float = DEFAULT_EVAL_INTERVAL,
                        meta: dict | None = None, rlhf_curves: str = "synthetic",
                        late_snr: float | None = None,
                        decline_snr: float | None = None, hack_peak: float | None = None,
                        fall_scale: float = 1.0) -> Workload:
    """A ``Workload`` of the table's jobs, sorted stably by arrival.

    Keeps the table's arrivals, durations, GPU demands, and its types, tenants and
    estimates where it has them; draws the rest with ``rng``. ``meta`` entries are added
    to the workload's record of how it was generated. ``rlhf_curves="lab"`` replaces the
    RLHF jobs' synthetic curves by runs of the lab corpus with the same drawn label
    (``evalstop.workload.real_curves``; drawn after everything else, so every other
    column, LoRA/DPO curves included, is the same as with ``"synthetic"``).
    ``late_snr`` / ``decline_snr`` (None: today's curves) set the synthetic RLHF curves'
    signal-to-noise ratios (``evalstop.workload.knobs``); they draw nothing extra.
    ``hack_peak`` / ``fall_scale`` move the fitted preset's hacking peaks and scale their
    falls (``evalstop.workload.fitted_curves.shapes``); they draw nothing extra either.
    """
    check_generator(rng)
    spec = get_preset(preset)
    frac = resolve_hacking_frac(spec, hacking_frac)
    sigma = real("sigma", sigma, low=0.0)
    grid = eval_grid(eval_interval)
    check_curve_knobs(spec, rlhf_curves, late_snr, decline_snr)
    check_fitted_knobs(spec, hack_peak, fall_scale)
    c_late, c_decline = scales(grid, sigma, late_snr, decline_snr)

    t = table.take(table.arrival_order())
    n = len(t)
    if n * len(grid) > MAX_EVAL_POINTS:
        # Curves hold several floats per job and eval: the Philly trace (82k jobs) at
        # eval_interval 1e-4 needed over 24 GiB. Refuse at once instead of thrashing.
        raise ValueError(f"{n} jobs x {len(grid)} evals per job is more than "
                         f"{MAX_EVAL_POINTS:,} eval points; use a larger eval_interval")
    types = t.type if t.type is not None else draw_types(rng, n, spec)
    hacking = draw_hacking(rng, types, frac)
    est = (t.est_duration_s if t.est_duration_s is not None
           else estimate_durations(rng, t.duration_s, EST_SIGMA))
    curves = job_curves(types, hacking, grid, rng, late_scale=c_late, decline_scale=c_decline,
                        rlhf_family=spec.rlhf_family, hack_peak=hack_peak,
                        fall_scale=fall_scale)
    eval_obs = add_eval_noise(curves.eval_true, sigma, rng, curves=curves, progress=grid)
    lab_runs = (apply_lab_curves(curves, eval_obs, types, grid, rng)
                if rlhf_curves == "lab" else None)

    record = {
        "source": t.source,
        "preset": spec.name,
        "sigma": sigma,
        "hacking_frac": frac,
        "load": None,  # arrivals come from the table; synthetic_workload records its load
        "eval_interval": float(eval_interval),
        "n_jobs": n,
        "types_from": "table" if t.type is not None else "preset mix",
        "est_duration_from": ("table" if t.est_duration_s is not None
                              else f"lognormal error, sigma {EST_SIGMA}, mean-unbiased"),
        "rlhf_curves": rlhf_curves,
        **({"late_snr": late_snr, "decline_snr": decline_snr, "late_scale": c_late,
            "decline_scale": c_decline}
           if (late_snr is not None or decline_snr is not None) else {}),
        **({"hack_peak": hack_peak, "fall_scale": fall_scale}
           if (hack_peak is not None or fall_scale != 1.0) else {}),
        **({"lab_runs": lab_runs} if lab_runs is not None else {}),
        **t.meta,
        **(meta or {}),
    }
    w = Workload(
        job_id=list(t.job_id),
        type=np.asarray(types, dtype=str),
        tenant=(np.asarray(t.tenant, dtype=str) if t.tenant is not None
                else np.full(n, DEFAULT_TENANT)),
        gpus=np.asarray(t.gpus, dtype=np.int64),
        arrival_s=np.asarray(t.arrival_s, dtype=float),
        duration_s=np.asarray(t.duration_s, dtype=float),
        est_duration_s=np.asarray(est, dtype=float),
        eval_progress=grid,
        eval_obs=eval_obs,
        eval_true=curves.eval_true,
        proxy=curves.proxy,
        loss=curves.loss,
        hacking=curves.hacking,
        peak_progress=curves.peak_progress,
        meta=record,
    )
    w.validate()
    return w
