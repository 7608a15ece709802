"""slope:window=W,alpha=A, a one-sided t-test on the slope of the last W evals."""

import json
import math

import pytest
from conftest import run_detector
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from evalstop.detectors import SlopeTest, make_detector

NAN = math.nan


run = run_detector


@pytest.mark.parametrize(
    "values, params, stop, best",
    [
        ([1, 2, 3, 4, 5], {"window": 3}, None, 5),
        ([3, 2, 1], {"window": 3}, 3, 1),  # an exact fall: slope -inf standard errors
        ([1, 1, 1, 1, 1], {"window": 4}, None, 1),  # an exact flat line is not a fall
        ([1.0, 0.9, 1.0, 0.9], {"window": 4, "alpha": 0.05}, None, 1),
        ([1.0, 0.9, 0.85, 0.7], {"window": 4, "alpha": 0.05}, 4, 1),
        ([1.0, 0.9, 0.85, 0.7], {"window": 4, "alpha": 0.001}, None, 1),
        ([1.0, NAN, 0.9, 0.85, 0.7], {"window": 4, "alpha": 0.05}, 5, 1),
        ([5, 1, 2, 3, 4, 3.9, 3.7, 3.2], {"window": 4, "alpha": 0.05}, 8, 1),
    ],
)
def test_table(values, params, stop, best):
    assert run(SlopeTest(**params), values) == (stop, best)


def reference_stop(values, window, alpha):
    """The same test with scipy.stats.linregress, step by step."""
    for end in range(window, len(values) + 1):
        ys = values[end - window:end]
        fit = stats.linregress(range(end - window + 1, end + 1), ys)
        if fit.slope < 0 and fit.pvalue / 2 < alpha:
            return end
    return None


smooth_values = st.lists(st.integers(-1000, 1000).map(lambda i: i / 100), min_size=3,
                         max_size=25)


@given(smooth_values, st.integers(3, 8), st.sampled_from([0.2, 0.05, 0.01]))
def test_agrees_with_scipy(values, window, alpha):
    got = run(SlopeTest(window=window, alpha=alpha), values)[0]
    want = reference_stop(values, window, alpha)
    if got != want:  # only a p-value within rounding of alpha may differ
        end = got if want is None else want
        ys = values[end - window:end]
        p = stats.linregress(range(window), ys).pvalue / 2
        assert p == pytest.approx(alpha, rel=1e-6) or math.isnan(p)


@pytest.mark.parametrize(
    "kwargs, word",
    [({"window": 2}, "window"), ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"),
     ({"alpha": NAN}, "alpha")],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=f"{word} must"):
        SlopeTest(**kwargs)


def test_spec():
    assert make_detector("slope:window=8,alpha=0.01").spec == "slope:window=8,alpha=0.01"


finite = st.floats(-1e4, 1e4, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=30, unique=True), st.integers(3, 8))
def test_strictly_increasing_never_stops(values, window):
    assert run(SlopeTest(window=window, alpha=0.2), sorted(values))[0] is None


@given(st.lists(finite, min_size=2, max_size=30), st.data())
def test_state_round_trip(values, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    whole, first = SlopeTest(window=4), SlopeTest(window=4)
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    second = SlopeTest(window=4)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected
