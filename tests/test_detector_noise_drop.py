"""noise-drop:m=M,n=N,smooth=S and the noise estimate it relies on."""

import json
import math

import numpy as np
import pytest
from conftest import run_detector
from hypothesis import given
from hypothesis import strategies as st

from evalstop.detectors import DEFAULT_SPEC, NoiseDrop, make_detector
from evalstop.detectors.noise import MIN_DIFFS, second_differences, sigma_hat

NAN = math.nan


run = run_detector


@pytest.mark.parametrize(
    "values, params, stop, best",
    [
        ([0.1 * i for i in range(30)], {}, None, 30),
        ([1.0] * 9 + [0.9, 0.9], {}, 11, 1),  # the first eval at 0.9 is not yet sustained
        ([1.0] * 10 + [0.5, 0.5], {}, 12, 1),
        ([1.0] * 10 + [0.5] + [1.0] * 5, {}, None, 1),  # a single bad eval never stops
        ([1.0] * 10 + [1.5] + [1.0] * 5, {}, None, 11),  # nor does a single lucky one
        ([1.0, 0.0, 0.0, 0.0, 0.0], {}, None, 1),  # no best level before S evals
        ([0, 1, 2, 3, 2, 1], {"smooth": 1}, 6, 4),
        ([0, 1, 2, 3, 2, NAN, 1], {"smooth": 1}, 7, 4),  # a NaN eval is skipped
        ([0, 1, 2, 3, 2, 1], {"smooth": 1, "m": 3.0}, None, 4),
        ([0, 1, 2, 3, 2, 1], {"smooth": 1, "n": 1}, 5, 4),  # one eval is enough with N = 1
    ],
)
def test_table(values, params, stop, best):
    assert run(NoiseDrop(**params), values) == (stop, best)


def test_healthy_noisy_plateau_is_not_stopped_but_a_decline_is():
    rng = np.random.default_rng(3)
    plateau = 1.0 + 0.05 * rng.standard_normal(40)
    assert run(NoiseDrop(), plateau)[0] is None
    falling = np.concatenate([plateau[:20], plateau[20:] - np.linspace(0.05, 1.0, 20)])
    stop, best = run(NoiseDrop(), falling)
    assert stop is not None and 20 < stop <= 30 and best <= 20


def test_mode_min_mirrors_max():
    values = [0, 1, 2, 3, 2, 1]
    assert run(NoiseDrop(smooth=1, mode="min"), [-v for v in values]) == (6, 4)


@pytest.mark.parametrize(
    "kwargs, word",
    [({"m": -1.0}, "m"), ({"m": NAN}, "m"), ({"m": math.inf}, "m"), ({"n": 0}, "n"),
     ({"smooth": 0}, "smooth")],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=f"{word} must"):
        NoiseDrop(**kwargs)


def test_spec_and_default():
    det = make_detector("noise-drop:m=2,n=3,smooth=5")
    assert det.spec == "noise-drop:m=2.0,n=3,smooth=5"
    assert make_detector("default").spec == make_detector(DEFAULT_SPEC).spec


def test_sigma_hat_is_close_to_the_noise_on_a_curve():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 1, 200)
    curve = 1.0 - np.exp(-x / 0.2)  # steep rise, then flat: first differences would not do
    est = [sigma_hat(list(curve + 0.03 * rng.standard_normal(200))) for _ in range(50)]
    assert 0.025 < np.median(est) < 0.036  # widened by (1 + 1/sqrt(198))


def test_sigma_hat_edge_cases():
    assert sigma_hat([1.0] * (MIN_DIFFS + 1)) is None
    assert sigma_hat([1.0] * (MIN_DIFFS + 2)) == 0.0
    assert sigma_hat([0.0, 1.0, 2.0, 3.0, 4.0, 5.0]) == 0.0  # an exact line has no noise
    # quantised scores: most second differences 0, so the MAD is 0; the mean must survive
    assert sigma_hat([0.5, 0.5, 0.5, 0.5, 0.52, 0.5, 0.5, 0.5]) > 0.0
    assert second_differences([1.0, 2.0, 4.0]) == [1.0]


def test_sigma_hat_ignores_one_outlier():
    rng = np.random.default_rng(1)
    values = list(1.0 + 0.02 * rng.standard_normal(20))
    clean = sigma_hat(values)
    values[10] += 5.0
    assert sigma_hat(values) < 1.6 * clean


finite = st.floats(-1e3, 1e3, allow_nan=False)
params = st.fixed_dictionaries({"m": st.sampled_from([0.0, 0.5, 1.4, 3.0]),
                                "n": st.integers(1, 4), "smooth": st.integers(1, 9)})


@given(st.lists(finite, min_size=1, max_size=40), params)
def test_non_decreasing_never_stops(values, kw):
    assert run(NoiseDrop(**kw), sorted(values))[0] is None


@given(st.lists(finite, min_size=1, max_size=30), params, st.sampled_from([0.25, 2.0, 8.0]))
def test_scale_and_direction_invariant(values, kw, scale):
    base = run(NoiseDrop(**kw), values)
    assert run(NoiseDrop(**kw), [scale * v for v in values]) == base
    assert run(NoiseDrop(mode="min", **kw), [-v for v in values]) == base


@given(st.lists(finite, min_size=2, max_size=30), params, st.data())
def test_state_round_trip(values, kw, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    whole, first = NoiseDrop(**kw), NoiseDrop(**kw)
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    second = NoiseDrop(**kw)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected
