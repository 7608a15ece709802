"""Synthetic workloads: determinism, preset fractions, Poisson load, argument checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.workload import (
    JOB_SPECS,
    PRESETS,
    offered_load,
    poisson_arrivals,
    synthetic_workload,
)
from evalstop.workload.presets import EST_SIGMA, mean_gpu_seconds

ARRAYS = ("type", "tenant", "gpus", "arrival_s", "duration_s", "est_duration_s",
          "eval_progress", "eval_obs", "eval_true", "proxy", "loss", "hacking", "peak_progress")


@pytest.fixture(scope="module")
def big_paper():
    return synthetic_workload(np.random.default_rng(11), n_jobs=20_000)


def test_default_workload_is_valid_and_recorded():
    w = synthetic_workload(np.random.default_rng(0))
    w.validate()
    assert w.n_jobs == 300 and w.n_evals == 20
    assert len(set(w.job_id)) == 300
    for key, value in {"preset": "paper", "sigma": 0.02, "hacking_frac": 0.6, "load": 0.9,
                       "eval_interval": 0.05, "source": "synthetic", "n_gpus": 64}.items():
        assert w.meta[key] == value


def test_same_seed_same_workload_and_other_seed_differs():
    a = synthetic_workload(np.random.default_rng(5), n_jobs=200)
    b = synthetic_workload(np.random.default_rng(5), n_jobs=200)
    c = synthetic_workload(np.random.default_rng(6), n_jobs=200)
    assert a.job_id == b.job_id
    for name in ARRAYS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.meta == b.meta
    assert not np.array_equal(a.arrival_s, c.arrival_s)


def test_global_numpy_random_state_is_untouched():
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    synthetic_workload(np.random.default_rng(0), n_jobs=50)
    np.testing.assert_array_equal(np.random.get_state()[1], before)


@pytest.mark.parametrize("preset", ["paper", "balanced"])
def test_preset_type_and_hacking_fractions(preset):
    w = (synthetic_workload(np.random.default_rng(11), n_jobs=20_000, preset=preset))
    spec = PRESETS[preset]
    for name, share in spec.mix.items():
        assert np.mean(w.type == name) == pytest.approx(share, abs=0.015)
    rlhf = w.type == "rlhf"
    assert np.mean(w.hacking[rlhf]) == pytest.approx(spec.hacking_frac, abs=0.02)
    assert not np.any(w.hacking[~rlhf])


@pytest.mark.parametrize("frac", [0.0, 0.2, 1.0])
def test_hacking_frac_overrides_preset(frac):
    w = synthetic_workload(np.random.default_rng(3), n_jobs=3000, hacking_frac=frac)
    assert np.mean(w.hacking[w.type == "rlhf"]) == pytest.approx(frac, abs=0.03)
    assert w.meta["hacking_frac"] == frac


def test_gpu_demands_and_durations_follow_the_type_specs(big_paper):
    w = big_paper
    for name, spec in JOB_SPECS.items():
        rows = w.type == name
        assert set(np.unique(w.gpus[rows]).tolist()) == set(spec.gpus)
        lo, hi = spec.duration_h
        hours = w.duration_s[rows] / 3600
        assert hours.min() >= lo and hours.max() <= hi
        assert w.duration_s[rows].mean() == pytest.approx(spec.mean_duration_s, rel=0.03)


def test_duration_estimates_are_unbiased_in_the_mean(big_paper):
    ratio = big_paper.est_duration_s / big_paper.duration_s
    assert np.mean(ratio) == pytest.approx(1.0, abs=0.01)
    assert np.std(np.log(ratio)) == pytest.approx(EST_SIGMA, rel=0.03)


@pytest.mark.parametrize("load", [0.5, 0.9, 1.3])
def test_realised_offered_load_is_near_target(load):
    w = synthetic_workload(np.random.default_rng(21), n_jobs=20_000, load=load)
    assert offered_load(w.arrival_s, w.gpus, w.duration_s, 64) == pytest.approx(load, rel=0.04)


def test_mean_gpu_seconds_matches_a_large_sample(big_paper):
    demand = np.mean(big_paper.gpus * big_paper.duration_s)
    assert demand == pytest.approx(mean_gpu_seconds(PRESETS["paper"]), rel=0.03)


def test_interarrivals_are_exponential():
    gaps = np.diff(poisson_arrivals(np.random.default_rng(0), 50_000, rate=2.0))
    assert np.mean(gaps) == pytest.approx(0.5, rel=0.02)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(1.0, abs=0.03)  # CV of 1


def test_eval_interval_and_sigma_reach_the_workload():
    w = synthetic_workload(np.random.default_rng(0), n_jobs=20, eval_interval=0.1, sigma=0.0)
    assert w.n_evals == 10
    np.testing.assert_array_equal(w.eval_obs, w.eval_true)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_jobs": 0}, "n_jobs"),
    ({"n_jobs": 2.5}, "n_jobs"),
    ({"n_gpus": 0}, "n_gpus"),
    ({"n_gpus": 8}, "n_gpus=8"),  # paper's RLHF jobs ask for up to 16
    ({"preset": "nope"}, "unknown preset 'nope'"),
    ({"load": 0.0}, "load"),
    ({"load": -1.0}, "load"),
    ({"load": float("nan")}, "load"),
    ({"sigma": -0.1}, "sigma"),
    ({"hacking_frac": 1.5}, "hacking_frac"),
    ({"hacking_frac": -0.1}, "hacking_frac"),
    ({"eval_interval": 0.0}, "eval_interval"),
])
def test_bad_arguments_raise_value_error_naming_them(kwargs, match):
    with pytest.raises(ValueError, match=match):
        synthetic_workload(np.random.default_rng(0), **kwargs)


def test_rng_must_be_a_generator():
    with pytest.raises(TypeError, match="Generator"):
        synthetic_workload(0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_jobs=st.integers(1, 60),
       preset=st.sampled_from(sorted(PRESETS)), load=st.floats(0.05, 3.0),
       sigma=st.floats(0.0, 0.2), frac=st.none() | st.floats(0.0, 1.0),
       interval=st.sampled_from([0.05, 0.1, 0.25, 0.3]))
def test_any_valid_arguments_give_a_valid_workload(seed, n_jobs, preset, load, sigma, frac,
                                                  interval):
    w = synthetic_workload(np.random.default_rng(seed), n_jobs=n_jobs, preset=preset,
                           load=load, sigma=sigma, hacking_frac=frac, eval_interval=interval)
    w.validate()
    assert w.n_jobs == n_jobs
    assert np.all(w.arrival_s > 0) and np.all(w.est_duration_s > 0)
    assert np.all(w.hacking <= (w.type == "rlhf"))
    assert np.all((w.peak_progress < 1.0) == w.hacking)  # only hacking jobs peak inside
