"""cusum-drop:h=H,k=K,clip=C,smooth=S,min_evals=E,trim=T: a robust one-sided CUSUM."""

import json
import math

import numpy as np
import pytest
from conftest import run_detector
from hypothesis import given
from hypothesis import strategies as st

from evalstop.detectors import CusumDrop, make_detector

NAN = math.nan
run = run_detector
RAW = {"smooth": 1, "trim": 0, "min_evals": 1}  # the level is the best single eval


@pytest.mark.parametrize(
    "values, params, stop, best",
    [
        ([0.1 * i for i in range(30)], {}, None, 30),
        ([1.0] * 20, {}, None, 1),
        # one eval adds at most clip - k = 1.25 < h = 2: the second low eval stops
        ([1.0] * 9 + [0.5, 0.5], {}, 11, 1),
        ([1.0] * 9 + [0.5], {}, None, 1),
        ([1.0] * 10 + [0.5] + [1.0] * 5, {}, None, 1),  # a single bad eval never stops
        ([1.0] * 10 + [1.5] + [1.0] * 5, {}, None, 11),  # a spike is trimmed from the level
        ([1.0] * 10 + [1.5] + [0.5, 0.5], {}, 13, 11),  # ... so it does not start a CUSUM
        ([1.0, 0.0, 0.0, 0.0, 0.0], {}, None, 1),  # no best level before S evals
        ([0, 1, 2, 3, 2, 1], RAW, 6, 4),
        ([0, 1, 2, 3, 2, NAN, 1], RAW, 7, 4),  # a NaN eval is skipped
        ([0, 1, 2, 3, 2, 1], {**RAW, "h": 3.0}, None, 4),
        ([0, 1, 2, 3, 2, 1], {**RAW, "min_evals": 7}, None, 4),
        ([0, 1, 2, 3, 2, 1], {**RAW, "trim": -1}, 6, 4),  # a median of one is the value
        ([0, 1, 2, 3, 2, 3, 2, 3, 2, 3], RAW, None, 4),  # each recovery drains the sum
    ],
)
def test_table(values, params, stop, best):
    assert run(CusumDrop(**params), values) == (stop, best)


def test_healthy_noisy_plateau_is_not_stopped_but_a_decline_is():
    rng = np.random.default_rng(3)
    plateau = 1.0 + 0.05 * rng.standard_normal(40)
    assert run(CusumDrop(), plateau)[0] is None
    falling = np.concatenate([plateau[:20], plateau[20:] - np.linspace(0.05, 1.0, 20)])
    stop, best = run(CusumDrop(), falling)
    assert stop is not None and 20 < stop <= 30 and best <= 20


def test_outliers_on_a_plateau_do_not_stop_it():
    rng = np.random.default_rng(5)
    values = 1.0 + 0.02 * rng.standard_normal(30)
    values[[8, 15, 22]] += [-0.5, 0.5, -0.5]
    assert run(CusumDrop(), values)[0] is None


def test_mode_min_mirrors_max():
    values = [0, 1, 2, 3, 2, 1]
    assert run(CusumDrop(**RAW, mode="min"), [-v for v in values]) == (6, 4)


@pytest.mark.parametrize(
    "kwargs, word",
    [({"h": 0.0}, "h"), ({"h": NAN}, "h"), ({"h": math.inf}, "h"), ({"k": -1.0}, "k"),
     ({"clip": NAN}, "clip"), ({"clip": 0.5, "k": 0.75}, "clip"), ({"smooth": 0}, "smooth"),
     ({"min_evals": 0}, "min_evals"), ({"trim": -2}, "trim"), ({"trim": 5}, "trim")],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=f"{word} must"):
        CusumDrop(**kwargs)


def test_spec():
    det = make_detector("cusum-drop:h=3,k=0.5,clip=2.5,smooth=7,min_evals=4,trim=1")
    assert det.spec == "cusum-drop:h=3.0,k=0.5,clip=2.5,smooth=7,min_evals=4,trim=1"
    assert make_detector("cusum-drop").spec == (
        "cusum-drop:h=2.0,k=0.75,clip=2.0,smooth=9,min_evals=6,trim=2")


finite = st.floats(-1e3, 1e3, allow_nan=False)


@st.composite
def params(draw):
    smooth = draw(st.integers(1, 9))
    k = draw(st.sampled_from([0.0, 0.75, 1.5]))
    out = {"h": draw(st.sampled_from([0.5, 2.0, 4.0])), "k": k,
           "clip": k + draw(st.sampled_from([0.5, 1.25, 3.0])), "smooth": smooth,
           "min_evals": draw(st.integers(1, 8)),
           "trim": draw(st.integers(-1, (smooth - 1) // 2))}
    if smooth >= 2 and draw(st.booleans()):  # the growing level window
        out["smooth_min"] = draw(st.integers(2, smooth))
    if draw(st.booleans()):  # the shift test
        out["shift"] = draw(st.sampled_from([0.5, 2.0, 3.0]))
        out["shift_m"] = draw(st.integers(2, 4))
    return out


@given(st.lists(finite, min_size=1, max_size=40), params())
def test_non_decreasing_never_stops(values, kw):
    assert run(CusumDrop(**kw), sorted(values))[0] is None


@given(st.lists(finite, min_size=2, max_size=40, unique=True), params())
def test_strictly_increasing_never_stops(values, kw):
    assert run(CusumDrop(**kw), sorted(values))[0] is None


@given(st.lists(finite, min_size=1, max_size=30), params(), st.sampled_from([0.25, 2.0, 8.0]))
def test_scale_and_direction_invariant(values, kw, scale):
    base = run(CusumDrop(**kw), values)
    assert run(CusumDrop(**kw), [scale * v for v in values]) == base
    assert run(CusumDrop(mode="min", **kw), [-v for v in values]) == base


@given(st.lists(st.one_of(finite, st.just(NAN)), min_size=2, max_size=30), params(),
       st.data())
def test_state_round_trip(values, kw, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    whole, first = CusumDrop(**kw), CusumDrop(**kw)
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    second = CusumDrop(**kw)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected
