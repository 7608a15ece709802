"""``slope``'s array stop_index gives the objects' stop and kept eval on every row it
answers, bit for bit, and leaves to them what it cannot repeat."""

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, assert_same_plan, by_objects, scores, spec_scores

from evalstop.detectors import FleetNoise, SlopeTest, make_detector

SPECS = ("slope", "slope:window=3", "slope:window=5,alpha=0.2", "slope:window=12,alpha=0.3",
         "slope:sigma=0.05", "slope:sigma=0.01,window=4,alpha=0.2", "slope:eval_n=30",
         "slope:eval_n=200,window=3,alpha=0.4")
ANSWERS = sys.version_info < (3, 12)  # 3.12's sum is compensated: the objects decide there


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS))
def test_the_array_is_the_rule(seed, spec, mode, kind):
    obs = spec_scores(np.random.default_rng(seed), kind, spec, 60, 30, nan_rows=0.05)
    # "wide" rows beyond the sizes the t-test handles go to the objects
    answered = 0 if kind == "wide" or not ANSWERS else None
    if ANSWERS and kind != "wide" and "sigma" not in spec and "eval_n" not in spec:
        # rows with a t near the critical value (rare) go to the objects
        answered = int(0.9 * np.isfinite(obs).all(axis=1).sum())
    assert_same_plan(spec, mode, obs, answered=answered)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
                         | st.sampled_from([0.0, -0.0, 0.25, 0.5]), min_size=12, max_size=12),
                min_size=1, max_size=8),
       st.sampled_from(SPECS[:5]), st.sampled_from(["max", "min"]))
def test_any_finite_values(rows, spec, mode):
    assert_same_plan(spec, mode, np.array(rows), answered=0)


def test_it_stops_and_answers_nearly_every_row():
    """Not an empty comparison: on noisy falling curves the rule stops many rows, and the
    margin near the critical t sends few to the objects."""
    rng = np.random.default_rng(5)
    obs = scores(rng, "curve", 2000, 20)
    for spec in ("slope", "slope:sigma=0.02"):
        stop_at, _, done = make_detector(spec).stop_index(obs)
        if ANSWERS:
            assert done.mean() > 0.99 and (stop_at >= 0).mean() > 0.1
        assert_same_plan(spec, "max", obs, answered=int(0.99 * len(obs)) if ANSWERS else 0)


def test_a_row_near_the_critical_value_goes_to_the_objects():
    """Evals whose t sits on the critical value to 1e-12: the array does not decide them."""
    if not ANSWERS:
        pytest.skip("the objects decide on Python 3.12+")
    spec = "slope:window=4,alpha=0.2"
    det = make_detector(spec)
    crit = det._t_crit
    # t rises above -crit for x = 0 and tends to -1.73 < -crit as the last eval falls by x:
    # bisect x to the crossing
    lo, hi = 0.0, 100.0
    assert _t(0.0) > -crit > _t(hi)
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t(mid) >= -crit else (lo, mid)
    row = _row(lo)
    assert abs(_t(lo) + crit) < 1e-12 * crit
    assert not det.stop_index(row[None, :])[2][0]
    assert_same_plan(spec, "max", row[None, :], answered=0)


def _row(x):
    return np.array([0.0, 0.3, -0.1, 0.2 - x])


def _t(x):
    from evalstop.detectors.slope_test import _slope_t
    return _slope_t([1.0, 2.0, 3.0, 4.0], list(_row(x)))
def test_the_array_declines_what_it_does_not_repeat():
    class OwnTest(SlopeTest):
        def _observe(self, step, value, loss, proxy, progress):
            return None

    obs = np.random.default_rng(0).random((5, 12))
    assert OwnTest().stop_index(obs) is None
    assert SlopeTest(fleet=FleetNoise()).stop_index(obs) is None
    if ANSWERS:
        bad = obs.copy()
        bad[1, 3] = 1.5
        assert SlopeTest(eval_n=50).stop_index(bad)[2].tolist() == [True, False, True, True,
                                                                   True]
    else:
        assert SlopeTest().stop_index(obs) is None


def test_short_rows_never_stop():
    obs = np.array([[3.0, 2.0, 1.0, 0.0]])
    for spec in ("slope:window=5", "slope:window=5,sigma=0.1"):
        assert by_objects(spec, "max", obs, obs, np.arange(1, 5) / 4).stopped.tolist() == [False]
        assert_same_plan(spec, "max", obs)


def _slope_t_mul(xs, ys):
    """``slope_test._slope_t`` with each residual squared as ``r * r`` (the array's square)
    instead of ``** 2``: every other operation as the object's, in its order."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    resid = sum((y - my - slope * (x - mx)) * (y - my - slope * (x - mx))
                for x, y in zip(xs, ys))
    se = math.sqrt(resid / (n - 2) / sxx)
    if se == 0.0:
        return 0.0 if slope == 0.0 else math.copysign(math.inf, slope)
    return slope / se


@pytest.mark.skipif(not ANSWERS, reason="the objects decide on Python 3.12+")
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS[:-1]))
def test_each_statistic_is_the_objects_float(seed, spec, mode, kind):
    """Float for float: the z statistic is the object's; the t statistic is the object's
    arithmetic with ``r * r`` for the square (which the margin covers)."""
    from evalstop.detectors.slope_array import statistics
    from evalstop.detectors.slope_test import _slope_z
    rng = np.random.default_rng(seed)
    det = make_detector(spec, mode=mode)
    m = det.window + int(rng.integers(0, 12))
    obs = scores(rng, kind, 20, m)
    t, crit = statistics(det, obs * det._sign)
    for i, row in enumerate(obs):
        obj = make_detector(spec, mode=mode)
        for j, x in enumerate(row):
            obj.update_stop(j + 1, x, 0.0, 0.0, (j + 1) / m)
            obj._stop_step = None  # keep it listening after a stop
            if j + 1 >= det.window:
                known = obj._known_sigma()
                want = (_slope_t_mul(obj._xs, obj._ys) if known is None
                        else _slope_z(obj._xs, obj._ys, known))
                assert t[i, j + 1 - det.window] == want
    assert crit == (det._t_crit if known is None else det._z_crit)
