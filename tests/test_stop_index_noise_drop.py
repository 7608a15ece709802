"""``noise-drop``'s array stop_index gives the objects' stop and kept eval on every row it
answers, bit for bit (own noise estimate, stated sigma, binomial eval_n), and leaves to
them what it cannot repeat."""

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, assert_same_plan, scores, spec_scores

from evalstop.detectors import FleetNoise, NoiseDrop, make_detector

SPECS = ("noise-drop", "noise-drop:smooth=1,n=1", "noise-drop:smooth=4,n=3,m=0.5",
         "noise-drop:smooth=2,n=1,m=0", "noise-drop:smooth=6,n=2,m=2.5",
         "noise-drop:smooth=30,n=2", "noise-drop:sigma=0.05", "noise-drop:sigma=0.01,smooth=3",
         "noise-drop:eval_n=30", "noise-drop:eval_n=200,smooth=4,n=1",
         # bars on the score grids: evals exactly at the bar
         "noise-drop:sigma=0.125,m=1,smooth=3,n=1", "noise-drop:sigma=0.01,m=5,smooth=2,n=1",
         "noise-drop:sigma=0.0625,m=2,smooth=1,n=2")
OWN_ANSWERS = sys.version_info < (3, 12)  # 3.12's sum is compensated: the objects decide


def _answers(spec):
    return OWN_ANSWERS or "sigma" in spec or "eval_n" in spec


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS))
def test_the_array_is_the_rule(seed, spec, mode, kind):
    obs = spec_scores(np.random.default_rng(seed), kind, spec, 60, 36, nan_rows=0.05)
    answered = None if _answers(spec) and kind != "wide" else 0
    assert_same_plan(spec, mode, obs, answered=answered)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
                         | st.sampled_from([0.0, -0.0, 0.25, 0.5]), min_size=14, max_size=14),
                min_size=1, max_size=8),
       st.sampled_from(SPECS[:7]), st.sampled_from(["max", "min"]))
def test_any_finite_values(rows, spec, mode):
    obs = np.array(rows)
    assert_same_plan(spec, mode, obs, answered=len(obs) if _answers(spec) else 0)


def test_it_stops_rows_on_noisy_curves():
    """Not an empty comparison: the rule stops a share of falling curves."""
    obs = scores(np.random.default_rng(4), "curve", 2000, 20)
    for spec in ("noise-drop", "noise-drop:sigma=0.02", "noise-drop:eval_n=100"):
        found = make_detector(spec).stop_index(obs)
        if found is not None:
            assert found[2].all() and (found[0] >= 0).mean() > 0.1
        assert_same_plan(spec, "max", obs, answered=len(obs) if _answers(spec) else 0)


def test_the_array_declines_what_it_does_not_repeat():
    class OwnNoise(NoiseDrop):
        def _own_sigma(self, values):
            return 1.0

    obs = np.random.default_rng(0).random((5, 12))
    assert OwnNoise().stop_index(obs) is None
    assert NoiseDrop(fleet=FleetNoise()).stop_index(obs) is None
    assert NoiseDrop().stop_index(np.zeros((2, 201))) is None  # longer than the noise keeps
    assert (NoiseDrop().stop_index(obs) is None) == (not OWN_ANSWERS)
    bad = obs.copy()
    bad[1, 3] = 1.5
    assert NoiseDrop(eval_n=50).stop_index(bad)[2].tolist() == [True, False, True, True, True]
    big = obs.copy()
    big[2, 0] = 1e200  # a second difference could overflow
    assert NoiseDrop(sigma=0.1).stop_index(big)[2].tolist() == [True, True, False, True, True]


@pytest.mark.skipif(not OWN_ANSWERS, reason="the objects decide on Python 3.12+")
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS))
def test_each_level_and_noise_is_the_objects_float(seed, spec, mode, kind):
    """Float for float, after every eval: the best level, and the noise at that level."""
    from evalstop.detectors.noise_drop_array import levels, noise
    obs = spec_scores(np.random.default_rng(seed), kind, spec, 10, 36)
    m = obs.shape[1]
    det = make_detector(spec, mode=mode)
    vr = obs * det._sign
    level = levels(det, vr)
    d_all = (vr[:, :-2] - 2.0 * vr[:, 1:-1] + vr[:, 2:]).T
    for i, row in enumerate(obs):
        obj = make_detector(spec, mode=mode)
        for j, x in enumerate(row):
            obj.update_stop(j + 1, x, 0.0, 0.0, (j + 1) / m)
            obj._stop_step = None  # keep it listening after a stop
            assert level[i, j] == (-np.inf if obj._level is None else obj._level)
            if obj._level is not None and (j >= 4 or obj.noise_known):
                want = obj._noise(obj._values, obj._level)
                got = noise(det, d_all, level[i, j: j + 1], j, np.array([i]))
                assert np.all(got == want)
