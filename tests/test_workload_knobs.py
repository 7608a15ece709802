"""Workload knobs (issue 13): late-run SNR and decline SNR move the measured SNRs of the
generated curves as documented, and change nothing else."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.workload import synthetic_workload
from evalstop.workload.curves import MIN_DROP, eval_grid
from evalstop.workload.knobs import (
    MIN_DECLINE_SCALE,
    _late_index,
    at_eval_count,
    default_snrs,
    lab_snrs,
    measure,
    workload_snrs,
)

UNCHANGED = ("type", "gpus", "arrival_s", "duration_s", "hacking", "peak_progress", "proxy",
             "loss")


def _rlhf(w):
    return np.asarray(w.type) == "rlhf"


@settings(max_examples=25, deadline=None)
@given(late=st.floats(0.05, 8.0), decline_x=st.floats(MIN_DECLINE_SCALE, 12.0),
       n_evals=st.sampled_from([5, 10, 20, 40]), sigma=st.floats(0.005, 0.1),
       seed=st.integers(0, 2**31))
def test_knobs_set_the_measured_snrs(late, decline_x, n_evals, sigma, seed):
    """The property: on generated curves, the measured late-run and decline SNRs are the
    knobs' values (up to the sampling spread of 1,000 jobs' parameters), measured both on
    the noiseless curves and, with the noise in, on the observed evals."""
    grid = eval_grid(1.0 / n_evals)
    decline = decline_x * default_snrs(grid, sigma)[1]
    w = synthetic_workload(np.random.default_rng(seed), n_jobs=1000, sigma=sigma,
                           eval_interval=1.0 / n_evals, late_snr=late, decline_snr=decline)
    m = workload_snrs(w)
    assert m["late_snr"] == pytest.approx(late, rel=0.12)
    assert m["decline_snr"] == pytest.approx(decline, rel=0.12)
    # The observed evals (noise included) measure the same late gain: noise adds no trend,
    # only spread. A run's mean late gain telescopes to (last - first) / L over its L late
    # steps, so the noise adds sqrt(2) / L of SNR per run, sqrt(2) / (L sqrt(H)) to the
    # mean of H healthy runs: allowed 4 such standard errors (5 evals per run: L = 1, where
    # a fixed 0.05 failed once in a few hundred examples).
    r = _rlhf(w)
    noisy = measure(w.eval_obs[r], grid, w.hacking[r], w.peak_progress[r], sigma)
    steps = _late_index(np.asarray(grid)).size
    spread = np.sqrt(2.0) / (steps * np.sqrt(noisy["n_healthy"]))
    assert noisy["late_snr"] == pytest.approx(late, rel=0.12, abs=0.05 + 4.0 * spread)


@pytest.mark.parametrize("n_evals", [10, 20, 40])
def test_a_knob_scales_the_same_draws_exactly(n_evals):
    """Same seed, knob moved: every healthy run's late gains scale by exactly the knob's
    ratio, the post-peak declines by it too, and nothing else about the workload moves."""
    iv, sigma = 1.0 / n_evals, 0.02
    late0, decline0 = default_snrs(eval_grid(iv), sigma)
    base = synthetic_workload(np.random.default_rng(5), n_jobs=400, eval_interval=iv)
    m0 = workload_snrs(base)
    for late, decline in ((2 * late0, None), (None, 3 * decline0), (0.5 * late0, 1.5 * decline0)):
        w = synthetic_workload(np.random.default_rng(5), n_jobs=400, eval_interval=iv,
                               late_snr=late, decline_snr=decline)
        m = workload_snrs(w)
        c_late = 1.0 if late is None else late / late0
        c_decline = 1.0 if decline is None else decline / decline0
        assert m["late_snr"] == pytest.approx(c_late * m0["late_snr"], rel=1e-9)
        # the grid's highest eval sits a hair below the analytic peak: nearly exact
        assert m["decline_snr"] == pytest.approx(c_decline * m0["decline_snr"], rel=0.02)
        for name in UNCHANGED:
            np.testing.assert_array_equal(getattr(w, name), getattr(base, name))
        other = ~_rlhf(w)  # LoRA and DPO curves are not knobs' business
        np.testing.assert_array_equal(w.eval_true[other], base.eval_true[other])
        # the noise is the same draw: eval_obs - eval_true unchanged
        np.testing.assert_allclose(w.eval_obs - w.eval_true, base.eval_obs - base.eval_true,
                                   atol=1e-12)
        hack = w.hacking
        before = w.eval_progress[None, :] <= w.peak_progress[:, None]
        np.testing.assert_array_equal(w.eval_true[hack & _rlhf(w)][before[hack & _rlhf(w)]],
                                      base.eval_true[hack & _rlhf(w)][before[hack & _rlhf(w)]])


def test_knobs_keep_the_labels_true():
    """Healthy runs stay monotone; hacking runs still fall by at least MIN_DROP, at the
    lowest decline the knob allows and at a steep one (quality stays positive up to a
    stretch of 5.9, see knobs' docstring)."""
    grid = eval_grid(0.05)
    _, decline0 = default_snrs(grid, 0.02)
    for late, decline in ((0.05, MIN_DECLINE_SCALE * decline0 * 1.0001), (8.0, 5.5 * decline0)):
        w = synthetic_workload(np.random.default_rng(2), n_jobs=2000, late_snr=late,
                               decline_snr=decline)
        r = _rlhf(w)
        healthy, hack = w.eval_true[r & ~w.hacking], w.eval_true[r & w.hacking]
        assert np.all(np.diff(healthy, axis=1) > 0)
        assert np.all(hack.max(axis=1) - hack[:, -1] >= MIN_DROP - 1e-12)
        assert np.all(w.eval_true > 0)  # stretched about the start, never below it


def test_more_knob_more_snr_and_defaults_unchanged():
    w0 = synthetic_workload(np.random.default_rng(3))
    w1 = synthetic_workload(np.random.default_rng(3), late_snr=None, decline_snr=None)
    np.testing.assert_array_equal(w0.eval_obs, w1.eval_obs)
    assert "late_snr" not in w0.meta
    snrs = [workload_snrs(synthetic_workload(np.random.default_rng(3), late_snr=s))["late_snr"]
            for s in (0.3, 1.0, 3.0)]
    assert snrs[0] < snrs[1] < snrs[2]


@pytest.mark.parametrize("kwargs, message", [
    ({"late_snr": 1.0, "sigma": 0.0}, "need sigma > 0"),
    ({"late_snr": -1.0}, "late_snr must be > 0"),
    ({"late_snr": float("nan")}, "late_snr must be a finite number"),
    ({"decline_snr": 0.1}, "decline_snr must be >= "),
    ({"decline_snr": 1.0, "rlhf_curves": "lab"}, "lab curves are real runs"),
])
def test_bad_knob_is_a_one_line_error(kwargs, message):
    with pytest.raises(ValueError, match=message) as e:
        synthetic_workload(np.random.default_rng(0), n_jobs=10, **kwargs)
    assert "\n" not in str(e.value)


def test_real_lab_runs_are_measured():
    """The shipped lab corpus' SNRs: steep declines, flat healthy runs (the claim map's
    triangle). Bounds, not the exact figures, so a regenerated corpus still passes if its
    character holds."""
    lab = lab_snrs()
    assert lab["n_evals"] == 25 and lab["n_healthy"] > 0 and lab["n_hacking"] > 0
    assert 0 < lab["sigma"] < 0.05
    assert lab["late_snr"] < 0.5 < 2.0 < lab["decline_snr"]
    assert at_eval_count(lab["late_snr"], 25, 20) == pytest.approx(lab["late_snr"] * 1.25)
