"""patience:n=N,min_delta=D, the Keras / Lightning / Hugging Face early-stopping rule."""

import json
import math

import pytest
from conftest import run_detector
from hypothesis import given
from hypothesis import strategies as st

from evalstop.detectors import Patience, make_detector

NAN = math.nan


run = run_detector


@pytest.mark.parametrize(
    "values, params, stop, best",
    [
        ([1, 2, 3, 4], {"n": 1}, None, 4),
        ([1, 0.9], {"n": 1}, 2, 1),
        ([1, 0.9, 0.95, 0.8], {"n": 3}, 4, 1),
        ([1, 0.9, 1.1, 1.0, 1.0, 1.0], {"n": 3}, 6, 3),  # an improvement resets the wait
        ([1, 1, 1], {"n": 2}, 3, 1),  # a tie is not an improvement; best is the earliest
        ([1.0, 1.05, 1.08, 1.12], {"n": 3, "min_delta": 0.1}, None, 4),
        ([1.0, 1.05, 1.09, 1.099], {"n": 3, "min_delta": 0.1}, 4, 4),  # creeping up
        ([1, NAN, 0.9, 0.8], {"n": 2}, 4, 1),  # a NaN eval neither waits nor resets
        ([1, 0.9, 0.95, 0.97, 0.96], {"n": 3}, 4, 1),  # rising, but still below the best
    ],
)
def test_table(values, params, stop, best):
    assert run(Patience(**params), values) == (stop, best)


def test_mode_min_mirrors_max():
    values = [1.0, 0.9, 0.95, 0.97]
    assert run(Patience(n=2, mode="min"), values) == (4, 2)
    assert run(Patience(n=2), [-v for v in values]) == (4, 2)


@pytest.mark.parametrize(
    "kwargs", [{"n": 0}, {"n": -2}, {"min_delta": -0.1}, {"min_delta": NAN},
               {"min_delta": math.inf}],
)
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        Patience(**kwargs)


def test_spec():
    det = make_detector("patience:n=5,min_delta=0.01")
    assert (det.n, det.min_delta) == (5, 0.01)
    assert det.spec == "patience:n=5,min_delta=0.01"
    with pytest.raises(ValueError, match="n must be >= 1"):
        make_detector("patience:n=0")


finite = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=40, unique=True))
def test_strictly_increasing_never_stops(values):
    assert run(Patience(n=1), sorted(values))[0] is None


@given(st.lists(finite, min_size=2, max_size=30), st.data())
def test_state_round_trip(values, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    n = data.draw(st.integers(1, 4))
    whole, first = Patience(n=n), Patience(n=n)
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    second = Patience(n=n)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected
