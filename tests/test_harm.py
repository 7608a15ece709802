"""Regret, harmful stops and compute saved, on runs worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalstop.metrics.harm import harm

# run 0: healthy, rises to the end; stopped at eval 2 keeping eval 1 -> harmful
# run 1: healthy, dips and recovers to its old best; stopped in the dip keeping its best
#        (eval 1 = 0.5 = run-to-end 0.5) -> not harmful, regret 0
# run 2: hacking, peaks at eval 1 then falls; stopped at eval 3 keeping eval 1 -> regret < 0
# run 3: healthy, not stopped -> regret 0, nothing saved
TRUE = np.array([
    [0.0, 0.2, 0.3, 0.4, 1.0],
    [0.0, 0.5, 0.3, 0.4, 0.5],
    [0.0, 1.0, 0.8, 0.5, 0.2],
    [0.0, 0.2, 0.4, 0.6, 0.8],
])
STOPPED = np.array([True, True, True, False])
STOP = np.array([2, 2, 3, -1])
KEPT = np.array([1, 1, 1, -1])
HACK = np.array([False, False, True, False])


def test_hand_worked_case():
    h = harm(TRUE, STOPPED, STOP, KEPT, HACK)
    assert h.delivered.tolist() == [0.2, 0.5, 1.0, 0.8]
    assert h.run_to_end.tolist() == [1.0, 0.5, 0.2, 0.8]
    np.testing.assert_allclose(h.regret, [0.8, 0.0, -0.8, 0.0])
    assert h.harmful.tolist() == [True, False, False, False]
    assert h.saved_intervals.tolist() == [2, 2, 1, 0]
    s = h.summary()
    assert s["harmful"] == 1 and s["harmful_rate"] == pytest.approx(1 / 3)
    assert s["compute_saved"] == pytest.approx(5 / 20)
    assert s["regret_hacking_mean"] == pytest.approx(-0.8)


def test_tolerance_is_a_share_of_gain():
    # all three end at 1.0 with a gain of 1.0; they deliver 0.99, 1.0 and 0.97
    true = np.array([[0.0, 0.5, 0.99, 1.0], [0.0, 1.0, 0.97, 1.0], [0.0, 0.5, 0.97, 1.0]])
    h = harm(true, np.ones(3, bool), np.array([2, 2, 2]), np.array([2, 1, 2]),
             np.zeros(3, bool))
    np.testing.assert_allclose(h.regret, [0.01, 0.0, 0.03])
    assert h.harmful.tolist() == [False, False, True]  # 1% and 0% lost are within 2%
    assert harm(true, np.ones(3, bool), np.array([2, 2, 2]), np.array([2, 1, 2]),
                np.zeros(3, bool), tol=0.005).harmful.tolist() == [True, False, True]


def test_ragged_runs_and_flat_runs():
    true = np.array([[0.3, 0.3, 0.3, np.nan], [0.0, 0.5, 0.2, 0.1]])
    h = harm(true, np.array([True, False]), np.array([1, -1]), np.array([0, -1]),
             np.array([False, True]), n_evals=np.array([3, 4]))
    assert math.isnan(h.regret[0])  # no gain to measure against
    assert not h.harmful[0]  # and nothing lost
    assert h.saved_intervals.tolist() == [1, 0]
    assert h.summary()["compute_saved"] == pytest.approx(1 / 7)


@pytest.mark.parametrize("bad", [
    dict(stop_idx=np.array([9, 2, 3, -1])),
    dict(kept_idx=np.array([3, 1, 1, -1])),
    dict(hacking=np.array([True])),
])
def test_bad_input_is_a_value_error(bad):
    args = dict(true=TRUE, stopped=STOPPED, stop_idx=STOP, kept_idx=KEPT, hacking=HACK)
    args.update(bad)
    with pytest.raises(ValueError):
        harm(**args)
