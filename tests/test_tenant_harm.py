"""Tenant-view harm: smoothed delivered level against the smoothed end level."""

import numpy as np
import pytest

from evalstop.metrics.tenant_harm import levels, tenant_harm


def test_levels_are_centred_means_clipped_at_the_run_ends():
    scores = np.array([[0.0, 1.0, 2.0, 3.0, np.nan]])
    lev = levels(scores, np.array([4]), window=0.25)  # w = 1
    np.testing.assert_allclose(lev[0, :4], [0.5, 1.0, 2.0, 2.5])
    assert np.isnan(lev[0, 4])



@pytest.mark.parametrize("window", [0.0, 0.025, 0.25, 1.0])
def test_levels_of_runs_of_many_lengths_are_each_runs_own_window_mean(window):
    # Runs of one length are computed together; each cell must still be its own run's
    # window mean over finite scores (NaN where the window holds none or past the end).
    rng = np.random.default_rng(3)
    n = np.array([0, 1, 7, 7, 12, 30, 30, 30])
    scores = rng.normal(size=(n.size, 30))
    scores[rng.random(scores.shape) < 0.15] = np.nan
    lev = levels(scores, n, window=window)
    for r, nr in enumerate(n.tolist()):
        w = max(1, int(np.ceil(window * nr)))
        for j in range(30):
            part = scores[r, max(0, j - w):min(j + w + 1, nr)] if j < nr else []
            part = [x for x in part if np.isfinite(x)]
            if part:
                assert lev[r, j] == pytest.approx(sum(part) / len(part), rel=1e-12, abs=1e-12)
            else:
                assert np.isnan(lev[r, j])

def test_a_stop_at_the_peak_of_a_run_that_keeps_rising_is_harmful():
    n = 200
    rise = np.linspace(0.0, 1.0, n)[None, :]
    th = tenant_harm(rise, np.array([True]), np.array([100]), np.array([False]))
    # delivered ~0.5, end level ~0.95 (mean of the last tenth), gain ~0.99
    assert th.loss[0] == pytest.approx((np.mean(rise[0, -20:]) - rise[0, 100]) / th.gain[0],
                                       rel=1e-9)
    assert th.harmful[0]


def test_a_stop_near_the_plateau_costs_under_the_tolerance():
    n = 200
    curve = np.minimum(np.linspace(0.0, 2.0, n), 1.0)[None, :]  # plateau from the middle
    th = tenant_harm(curve, np.array([True]), np.array([150]), np.array([False]))
    assert th.loss[0] == pytest.approx(0.0, abs=1e-12)
    assert not th.harmful[0]


def test_hacking_runs_and_unstopped_runs_are_never_harmful():
    rise = np.tile(np.linspace(0.0, 1.0, 50), (2, 1))
    th = tenant_harm(rise, np.array([True, False]), np.array([5, 0]), np.array([True, False]))
    assert not th.harmful.any()
    assert th.loss[1] == 0.0


def test_ragged_runs_and_nan_scores():
    scores = np.array([[0.0, 0.5, 1.0, np.nan, np.nan], [0.0, np.nan, 1.0, 1.0, 1.0]])
    th = tenant_harm(scores, np.array([True, True]), np.array([0, 4]),
                     np.array([False, False]), n_evals=np.array([3, 5]))
    assert th.end[0] == pytest.approx(1.0)  # last ceil(0.3) = 1 eval of 3
    assert np.isfinite(th.loss).all()
    assert th.harmful[0] and not th.harmful[1]


def test_no_gain_gives_nan_loss_and_no_harm():
    flat = np.zeros((1, 30))
    th = tenant_harm(flat, np.array([True]), np.array([3]), np.array([False]))
    assert np.isnan(th.loss[0]) and not th.harmful[0]


@pytest.mark.parametrize("bad", [
    {"kept_idx": np.array([9])}, {"n_evals": np.array([0])}, {"tol": 1.5},
])
def test_bad_arguments_are_refused(bad):
    kw = {"scores": np.zeros((1, 5)), "stopped": np.array([True]), "kept_idx": np.array([1]),
              "hacking": np.array([False])}
    kw.update(bad)
    with pytest.raises(ValueError):
        tenant_harm(**kw)
