"""Curve families: shapes, labels, noise, and the eval grid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.workload.curves import (
    MIN_DROP,
    RLHF_HACK_PEAK,
    add_eval_noise,
    dpo_curves,
    eval_grid,
    gao_shape,
    job_curves,
    lora_curves,
    rlhf_curves,
)

FINE = np.linspace(0.0005, 1.0, 2000)  # fine enough to locate peaks to 0.05% of progress


def rlhf(hacking: bool, n: int = 400, seed: int = 0, grid=FINE):
    return rlhf_curves(grid, np.full(n, hacking), np.random.default_rng(seed))


# ---------------------------------------------------------------- eval grid

@pytest.mark.parametrize("interval, expected", [
    (0.05, np.arange(1, 21) / 20),
    (0.25, [0.25, 0.5, 0.75, 1.0]),
    (0.3, [0.3, 0.6, 0.9, 1.0]),  # uneven: the last interval is shorter
    (1.0, [1.0]),
    (0.1, np.arange(1, 11) / 10),
])
def test_eval_grid(interval, expected):
    grid = eval_grid(interval)
    np.testing.assert_allclose(grid, expected, atol=1e-12)
    assert grid[-1] == 1.0 and np.all(np.diff(grid) > 0)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, float("nan"), float("inf"), True, "0.1"])
def test_eval_grid_rejects(bad):
    with pytest.raises(ValueError, match="eval_interval"):
        eval_grid(bad)


# ---------------------------------------------------------------- Gao's RL form

def test_gao_shape_peaks_at_one_and_is_concave():
    x = np.linspace(0.01, 2.5, 500)
    f = gao_shape(x)
    assert gao_shape(np.array([1.0]))[0] == pytest.approx(1.0)
    assert x[np.argmax(f)] == pytest.approx(1.0, abs=0.01)
    assert np.all(np.diff(f, 2) < 0)
    assert gao_shape(np.array([0.0]))[0] == 0.0


def test_gao_shape_matches_alpha_beta_form():
    # R(d) = d (alpha - beta ln d) normalised by its peak R(d*) = beta d*.
    alpha, beta = 1.3, 0.4
    d = np.linspace(0.1, 20, 200)
    d_star = np.exp(alpha / beta - 1.0)
    np.testing.assert_allclose(d * (alpha - beta * np.log(d)) / (beta * d_star),
                               gao_shape(d / d_star), rtol=1e-12)


# ---------------------------------------------------------------- RLHF

def test_hacking_rlhf_peaks_inside_55_to_75_then_declines():
    c = rlhf(hacking=True)
    q = c.eval_true
    peak_at = FINE[np.argmax(q, axis=1)]
    lo, hi = RLHF_HACK_PEAK
    assert np.all((peak_at >= lo - 1e-3) & (peak_at <= hi + 1e-3))
    np.testing.assert_allclose(c.peak_progress, peak_at, atol=1e-3)
    for row, i in zip(q, np.argmax(q, axis=1)):
        assert np.all(np.diff(row[i:]) < 0)  # falls all the way from the peak to the end
        assert np.all(np.diff(row[: i + 1]) > 0)  # and rose all the way to it
    assert np.all(q.max(axis=1) - q[:, -1] >= MIN_DROP)
    assert np.all(c.hacking)


def test_healthy_rlhf_never_declines():
    c = rlhf(hacking=False)
    assert np.all(np.diff(c.eval_true, axis=1) > 0)
    assert np.all(c.peak_progress == 1.0)
    assert not np.any(c.hacking)


@pytest.mark.parametrize("hacking", [True, False])
def test_rlhf_proxy_rises_and_loss_falls_through_hacking(hacking):
    c = rlhf(hacking)
    assert np.all(np.diff(c.proxy, axis=1) > 0)
    assert np.all(np.diff(c.loss, axis=1) < 0)


def test_rlhf_best_quality_is_q0_plus_gain_within_range():
    # The affine map puts the in-run best at q0 + gain, q0 in [0.30, 0.45], gain in [0.30, 0.50].
    for hacking in (True, False):
        best = rlhf(hacking).eval_true.max(axis=1)
        assert np.all((best >= 0.60 - 1e-3) & (best <= 0.95 + 1e-9))


# ---------------------------------------------------------------- LoRA, DPO

def test_lora_is_monotone_exponential_convergence():
    c = lora_curves(FINE, 300, np.random.default_rng(1))
    assert np.all(np.diff(c.eval_true, axis=1) > 0)
    slopes = np.diff(c.eval_true, axis=1)
    assert np.all(slopes[:, -1] < slopes[:, 0])  # converging: slows down
    assert np.all(c.peak_progress == 1.0) and not np.any(c.hacking)


def test_dpo_saturates_then_plateaus():
    c = dpo_curves(FINE, 300, np.random.default_rng(2))
    steps = np.diff(c.eval_true, axis=1)
    assert np.all(steps >= 0)  # never falls
    tail = FINE >= 0.85  # DPO_SATURATE upper bound: every job is on its plateau here
    assert np.all(np.ptp(c.eval_true[:, tail], axis=1) == 0.0)
    assert np.all(c.eval_true[:, 0] < c.eval_true[:, -1])
    assert np.all(c.loss[:, 0] < np.log(2.0)) and np.all(c.loss[:, 0] > np.log(2.0) - 0.01)
    assert np.all(c.peak_progress == 1.0) and not np.any(c.hacking)


# ---------------------------------------------------------------- mixed jobs, labels

def test_hacking_label_matches_the_stated_rule():
    types = np.array(["rlhf", "lora", "dpo", "rlhf"] * 200)
    hacking = np.arange(800) % 3 == 0  # only RLHF rows may hack
    c = job_curves(types, hacking, FINE, np.random.default_rng(3))
    drop = c.eval_true.max(axis=1) - c.eval_true[:, -1]
    rule = (c.peak_progress < 1.0) & (drop >= MIN_DROP)
    np.testing.assert_array_equal(c.hacking, rule)
    np.testing.assert_array_equal(c.hacking, hacking & (types == "rlhf"))


def test_job_curves_rejects_unknown_type():
    with pytest.raises(ValueError, match="unknown job type.*'ppo'"):
        job_curves(np.array(["rlhf", "ppo"]), np.zeros(2, bool), FINE, np.random.default_rng(0))


def test_job_curves_is_deterministic():
    types = np.array(["rlhf", "lora", "dpo"] * 10)
    a = job_curves(types, np.ones(30, bool), eval_grid(0.05), np.random.default_rng(7))
    b = job_curves(types, np.ones(30, bool), eval_grid(0.05), np.random.default_rng(7))
    for name in ("eval_true", "proxy", "loss", "peak_progress", "hacking"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1),
       types=st.lists(st.sampled_from(["lora", "dpo", "rlhf"]), min_size=1, max_size=30),
       interval=st.sampled_from([0.05, 0.1, 0.2, 0.3, 1.0]),
       data=st.data())
def test_curve_invariants(seed, types, interval, data):
    hacking = np.array(data.draw(st.lists(st.booleans(), min_size=len(types),
                                          max_size=len(types))))
    grid = eval_grid(interval)
    c = job_curves(np.array(types), hacking, grid, np.random.default_rng(seed))
    assert np.all((c.eval_true > 0) & (c.eval_true < 1))  # positive, on a 0..1 scale
    assert np.all(np.diff(c.proxy, axis=1) > 0)
    assert np.all(np.diff(c.loss, axis=1) < 0)
    assert np.all((c.peak_progress > 0) & (c.peak_progress <= 1.0))
    np.testing.assert_array_equal(c.hacking, hacking & (np.array(types) == "rlhf"))


# ---------------------------------------------------------------- noise

def test_noise_std_is_sigma_and_zero_sigma_is_exact():
    true = np.full((200, 50), 0.5)
    obs = add_eval_noise(true, 0.05, np.random.default_rng(0))
    assert np.std(obs - true) == pytest.approx(0.05, rel=0.03)
    assert abs(np.mean(obs - true)) < 0.002
    np.testing.assert_array_equal(add_eval_noise(true, 0.0, np.random.default_rng(0)), true)


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), None, True])
def test_noise_rejects_bad_sigma(bad):
    with pytest.raises(ValueError, match="sigma"):
        add_eval_noise(np.zeros((1, 2)), bad, np.random.default_rng(0))
