"""A synthetic workload: a preset's job mix arriving as a Poisson process at a given load."""

from __future__ import annotations

import numpy as np

from evalstop.workload._checks import count, real
from evalstop.workload.arrivals import DEFAULT_LOAD, arrival_rate, poisson_arrivals
from evalstop.workload.build import (
    DEFAULT_EVAL_INTERVAL,
    DEFAULT_SIGMA,
    check_curve_knobs,
    check_fitted_knobs,
    check_generator,
    workload_from_table,
)
from evalstop.workload.curves import eval_grid
from evalstop.workload.knobs import scales
from evalstop.workload.model import Workload
from evalstop.workload.presets import (
    draw_durations,
    draw_gpus,
    draw_tenants,
    draw_types,
    get_preset,
    max_gpus,
    mean_gpu_seconds,
    resolve_hacking_frac,
)
from evalstop.workload.table import JobTable

DEFAULT_N_JOBS = 300
DEFAULT_N_GPUS = 64


def synthetic_workload(rng: np.random.Generator, *, n_jobs: int = DEFAULT_N_JOBS,
                       n_gpus: int = DEFAULT_N_GPUS, preset: str = "paper",
                       load: float = DEFAULT_LOAD, sigma: float = DEFAULT_SIGMA,
                       hacking_frac: float | None = None,
                       eval_interval: float = DEFAULT_EVAL_INTERVAL,
                       rlhf_curves: str = "synthetic", late_snr: float | None = None,
                       decline_snr: float | None = None, hack_peak: float | None = None,
                       fall_scale: float = 1.0) -> Workload:
    """``n_jobs`` jobs of ``preset``'s mix offering ``load`` to ``n_gpus`` GPUs.

    ``hacking_frac`` None takes the preset's. ``rlhf_curves="lab"`` gives RLHF jobs the
    curves of real lab runs (``evalstop.workload.real_curves``). ``late_snr`` and
    ``decline_snr`` (None: today's curves) are the RLHF curves' signal-to-noise knobs
    (``evalstop.workload.knobs``). ``hack_peak`` and ``fall_scale`` move the fitted
    preset's hacking peaks and falls (``evalstop.workload.fitted_curves``). Deterministic for one
    generator state: every draw goes through ``rng``, in a fixed order (types, GPU demands,
    durations, arrivals, tenants, then workload_from_table's draws).
    """
    check_generator(rng)
    n_jobs = count("n_jobs", n_jobs)
    n_gpus = count("n_gpus", n_gpus)
    spec = get_preset(preset)
    load = real("load", load, low=0.0, low_open=True)
    # Check the rest before drawing anything, so a bad argument fails before any work.
    resolve_hacking_frac(spec, hacking_frac)
    real("sigma", sigma, low=0.0)
    eval_grid(eval_interval)
    check_curve_knobs(spec, rlhf_curves, late_snr, decline_snr)
    check_fitted_knobs(spec, hack_peak, fall_scale)
    scales(eval_grid(eval_interval), sigma, late_snr, decline_snr)
    if max_gpus(spec) > n_gpus:
        raise ValueError(f"n_gpus={n_gpus} is smaller than the largest GPU demand of preset "
                         f"{preset!r} ({max_gpus(spec)} GPUs); such jobs could never run")

    types = draw_types(rng, n_jobs, spec)
    gpus = draw_gpus(rng, types)
    duration = draw_durations(rng, types)
    rate = arrival_rate(load, n_gpus, mean_gpu_seconds(spec))
    arrivals = poisson_arrivals(rng, n_jobs, rate)
    tenants = draw_tenants(rng, n_jobs)

    width = len(str(n_jobs - 1))
    table = JobTable(job_id=[f"job-{i:0{width}d}" for i in range(n_jobs)],
                     arrival_s=arrivals, duration_s=duration, gpus=gpus, type=types,
                     tenant=tenants, source="synthetic")
    return workload_from_table(table, rng, preset=preset, sigma=sigma,
                               hacking_frac=hacking_frac, eval_interval=eval_interval,
                               rlhf_curves=rlhf_curves, late_snr=late_snr,
                               hack_peak=hack_peak, fall_scale=fall_scale,
                               decline_snr=decline_snr, meta={"load": load, "n_gpus": n_gpus,
                                     "arrival_rate_per_h": rate * 3600.0,
                                     # drawn above from the mix, handed over as a column
                                     "types_from": "preset mix"})
