"""cusum-drop's shift test (shift=J,shift_m=M): a fast stop on a large sustained drop."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.detectors import FleetNoise, make_detector
from evalstop.detectors.shift_test import shift_z

# sigma 0.05 stated, the level window grows from 3 evals (4 after 7 evals, trimming 1 from
# each end), so the level of a flat start at 0.5 is 0.5. A drop to 0.3 is 4 sigmas, clipped
# at 2.5; the CUSUM alone adds clip - k = 1.0 per such eval and needs 3 of them (h = 3).
BASE = "cusum-drop:h=3,k=1.5,clip=2.5,smooth=15,min_evals=4,trim=3,smooth_min=3,sigma=0.05"
FLAT = [0.5] * 5


def stops(spec, values):
    det = make_detector(spec)
    for i, v in enumerate(values):
        if det.update(i + 1, v).stop:
            return i + 1
    return None


SHIFT_TABLE = [
    # (values, extra params, expected stop step)
    (FLAT + [0.3, 0.3], "", None),  # the CUSUM alone: two evals add 2.0 < 3
    (FLAT + [0.3, 0.3], ",shift=2.5", 7),  # 2.5 / sqrt(1/2 + 1/4) = 2.89 >= 2.5
    (FLAT + [0.3, 0.3], ",shift=3", None),  # ... < 3
    (FLAT + [0.3, 0.3, 0.3], ",shift=3", 8),  # the CUSUM's third eval
    (FLAT + [0.4, 0.3, 0.3, 0.3], "", 9),  # a drop over two evals: the CUSUM needs four
    (FLAT + [0.4, 0.3, 0.3], ",shift=2.5", 7),  # (2 + 2.5) / 2 / 0.866 = 2.60
    (FLAT + [0.4, 0.3, 0.3], ",shift=3,shift_m=3", 8),  # 7 / 3 / sqrt(1/3 + 1/4) = 3.05
    (FLAT + [0.0] + [0.5] * 4, ",shift=2.5", None),  # one wild eval is clipped at 2.5
    (FLAT + [0.0, 0.5, 0.0, 0.5], ",shift=2.5", None),  # not sustained
    ([0.5, 0.5, 0.5, 0.3, 0.3], ",shift=2.5", 5),  # window of 3: 2.5 / 0.913 = 2.74
    ([0.5, 0.5, 0.5, 0.3, 0.3], ",shift=2.5,min_evals=6", None),  # overrides BASE's 4
    # after a rise the level (a trimmed mean of 4 rising evals) lags the peak, so a 4-sigma
    # drop from the peak is only 1 sigma below the level
    ([0.1, 0.2, 0.3, 0.4, 0.5, 0.3, 0.3], ",shift=2.5", None),
    ([0.5] * 12, ",shift=0.5", None),  # flat: never below the level
]


@pytest.mark.parametrize("values, extra, expected", SHIFT_TABLE)
def test_shift_table(values, extra, expected):
    spec = BASE.replace(",min_evals=4", "") if "min_evals" in extra else BASE
    assert stops(spec + extra, values) == expected


def test_the_reason_names_the_shift_test():
    det = make_detector(BASE + ",shift=2.5")
    for i, v in enumerate(FLAT + [0.3, 0.3]):
        d = det.update(i + 1, v)
    assert d.stop and "the last 2 evals" in d.reason and "shift threshold 2.5" in d.reason


def test_shift_z_is_the_two_mean_z_when_nothing_is_clipped():
    z = shift_z(1.0, [0.8, 0.9], 0.1, 8, clip=10.0)
    assert z == pytest.approx(1.5 / math.sqrt(1 / 2 + 1 / 8))
    # each eval's drop counts at most clip sigmas, so one wild eval cannot reach J alone
    assert shift_z(1.0, [-100.0, 1.0], 0.1, 8, clip=2.5) == pytest.approx(
        1.25 / math.sqrt(1 / 2 + 1 / 8))
    assert shift_z(1.0, [1.2, 1.1], 0.1, 8, clip=2.5) < 0  # above the level


def test_shift_z_with_noise_free_scores():
    top = 2.5 / math.sqrt(1 / 2 + 1 / 4)
    assert shift_z(1.0, [0.9, 0.9], 0.0, 4, clip=2.5) == pytest.approx(top)
    assert shift_z(1.0, [1.0, 1.0], 0.0, 4, clip=2.5) == 0.0
    assert shift_z(1.0, [0.9, 1.1], 0.0, 4, clip=2.5) == -math.inf


@pytest.mark.parametrize("extra, word", [
    (",shift=0", "shift must"), (",shift=-1", "shift must"), (",shift=nan", "shift must"),
    (",shift=inf", "shift must"), (",shift_m=3", "shift_m needs shift"),
    (",shift=3,shift_m=1", "shift_m must"), (",shift=3,shift_m=x", "not an int"),
])
def test_bad_shift_options_are_one_line_value_errors(extra, word):
    with pytest.raises(ValueError, match=word) as err:
        make_detector(BASE + extra)
    assert "\n" not in str(err.value)


def test_specs_without_the_shift_test_are_unchanged():
    assert "shift" not in make_detector("cusum-drop").spec
    assert "shift" not in make_detector(BASE).spec
    # shift alone takes the default window of 2 evals, and the spec spells it out
    spec = make_detector(BASE + ",shift=2.5").spec
    assert spec.endswith("smooth_min=3,shift=2.5,shift_m=2,sigma=0.05")
    assert make_detector(spec).spec == spec


def test_cusum_known_has_no_shift_test():
    assert "shift" not in make_detector("cusum-known:sigma=0.1").spec
    with pytest.raises(ValueError, match="unknown key 'shift'"):
        make_detector("cusum-known:sigma=0.1,shift=2")


def test_the_array_version_is_left_out_with_the_shift_test():
    import numpy as np

    det = make_detector("cusum-drop:shift=2.5")
    assert det.stop_index(np.zeros((2, 5))) is None


# ---- properties, with the noise stated or from a fleet ---------------------------------
SHIFTED = ("cusum-default:shift=2.25", "cusum-default:shift=3,shift_m=3", "cusum-drop:shift=0.5")
rises = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=40).map(sorted)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(rises, st.sampled_from(SHIFTED), st.sampled_from(["", ",eval_n=30", ",sigma=0.01"]))
def test_a_run_that_only_rises_is_never_stopped(values, spec, noise):
    assert stops(spec + noise, values) is None


values_st = st.lists(st.floats(-10.0, 10.0, allow_nan=False), min_size=3, max_size=30)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(values_st, st.integers(-6, 6), st.sampled_from(SHIFTED))
def test_scaling_scores_and_sigma_alike_keeps_the_decision(values, e, spec):
    """A power-of-two scale is exact in floating point, so decisions must match exactly."""
    c = 2.0 ** e
    scaled = [v * c for v in values]
    assert stops(f"{spec},sigma=0.5", values) == stops(f"{spec},sigma={0.5 * c!r}", scaled)
    assert stops(spec, values) == stops(spec, scaled)


@settings(max_examples=150, derandomize=True, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=3, max_size=30), st.integers(-500, 500),
       st.sampled_from(SHIFTED))
def test_adding_a_constant_keeps_the_decision(ints, shift, spec):
    values = [float(v) for v in ints]
    assert stops(f"{spec},sigma=2.0", values) == stops(f"{spec},sigma=2.0",
                                                       [v + shift for v in values])


def _fleet():
    fleet = FleetNoise()
    for d in [0.3, -0.2, 0.1, -0.4] * 8:  # 32 differences: it gives out a sigma
        fleet.add(d)
    return fleet


@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=30),
       st.sampled_from(SHIFTED), st.data())
def test_state_and_fleet_round_trip_give_the_same_decisions(values, spec, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    whole = make_detector(spec, fleet=_fleet())
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    fleet = _fleet()
    first = make_detector(spec, fleet=fleet)
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    fleet2 = FleetNoise.from_state(json.loads(json.dumps(fleet.state_dict())))
    second = make_detector(spec, fleet=fleet2)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected
