"""The paper's rule, evalstop:k=K, against its documented contract."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalstop.detectors import KDecline, make_detector


def run(scores, k, mode="max"):
    det = make_detector(f"evalstop:k={k}", mode=mode)
    for step, s in enumerate(scores, 1):
        d = det.update(step, s)
        if d.stop:
            return step, d.best_step
    return None, det.best_step


@pytest.mark.parametrize(
    "scores, k, stop_step, best_step",
    [
        ([0.1, 0.2, 0.3, 0.25, 0.2], 2, 5, 3),
        ([0.1, 0.2, 0.3, 0.25, 0.2], 1, 4, 3),
        ([0.1, 0.2, 0.3, 0.25, 0.2], 3, None, 3),
        ([0.3, 0.2, 0.25, 0.2, 0.1], 2, 5, 1),  # the rise at step 3 resets the streak
        ([0.3, 0.3, 0.3, 0.3], 1, None, 1),  # equal is not lower: never a decline
        ([0.5, 0.4, 0.5, 0.4, 0.3], 2, 5, 1),  # best is the earliest on ties
        ([0.5, 0.4, 0.4, 0.3, 0.2], 2, 5, 1),  # a flat eval resets the streak
        ([1.0, 0.9, 0.8, 0.7, 0.6, 0.5], 5, 6, 1),
        ([0.2], 1, None, 1),
        ([], 2, None, None),
    ],
)
def test_table(scores, k, stop_step, best_step):
    assert run(scores, k) == (stop_step, best_step)


@pytest.mark.parametrize(
    "scores, k, stop_step, best_step",
    [
        ([0.5, 0.4, 0.45, 0.5], 2, 4, 2),  # loss-like metric: rising is the decline
        ([0.5, 0.4, 0.3, 0.2], 1, None, 4),
    ],
)
def test_min_mode(scores, k, stop_step, best_step):
    assert run(scores, k, mode="min") == (stop_step, best_step)


def test_nonfinite_scores_are_ignored():
    # NaN neither declines nor resets; the next finite eval compares with the last finite.
    assert run([0.3, 0.2, math.nan, 0.1], 2) == (4, 1)
    assert run([0.3, 0.2, math.inf, 0.25, 0.2], 2) == (None, 1)
    det = KDecline(k=2)
    d = det.update(1, math.nan)
    assert not d.stop and d.best_step is None and "non-finite" in d.reason


def test_frozen_after_stop_and_steps_must_increase():
    det = KDecline(k=1)
    det.update(1, 0.5)
    assert det.update(2, 0.4).stop
    assert det.update(3, 0.9).stop  # frozen: still the same decision
    assert det.stop_step == 2 and det.best_step == 1
    det = KDecline(k=2)
    det.update(5, 0.1)
    with pytest.raises(ValueError, match="strictly increase"):
        det.update(5, 0.2)


def test_bad_k():
    with pytest.raises(ValueError, match="k must be >= 1"):
        KDecline(k=0)


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=40, unique=True),
       st.integers(1, 5))
def test_strictly_increasing_is_never_stopped(values, k):
    assert run(sorted(values), k)[0] is None


@given(st.lists(st.floats(-100, 100, allow_nan=False), max_size=40), st.integers(1, 5))
def test_stop_is_exactly_at_kth_consecutive_decline(scores, k):
    expected = None
    streak = 0
    for i in range(1, len(scores)):
        streak = streak + 1 if scores[i] < scores[i - 1] else 0
        if streak == k:
            expected = i + 1
            break
    stop, best = run(scores, k)
    assert stop == expected
    if scores:
        seen = scores[: (stop or len(scores))]
        assert best == seen.index(max(seen)) + 1


@given(st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=30),
       st.integers(1, 4), st.data())
def test_state_round_trip_gives_identical_decisions(scores, k, data):
    cut = data.draw(st.integers(0, len(scores)))
    a = KDecline(k=k)
    for step, s in enumerate(scores[:cut], 1):
        a.update(step, s)
    b = KDecline(k=k)
    b.load_state_dict(a.state_dict())
    for step, s in enumerate(scores[cut:], cut + 1):
        assert a.update(step, s) == b.update(step, s)
    assert a.state_dict() == b.state_dict()


def test_state_for_other_spec_is_refused():
    with pytest.raises(ValueError, match="state is for"):
        KDecline(k=3).load_state_dict(KDecline(k=2).state_dict())
