"""``priority_twin.tie_ranges``: a job with a known range has in it every job whose
Tiresias key can equal its own, at any levels (the twin looks only there for a running
job with its key)."""

import numpy as np
import pytest
from conftest import make_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.sim.priority_twin import tie_ranges

SPAN = 2.0**32


def brute_clashes(arrival, n_levels):
    keys = np.arange(n_levels + 1, dtype=np.float64)[:, None] * SPAN + arrival
    n = len(arrival)
    return {(i, j) for i in range(n) for j in range(n) if i != j
            and np.intersect1d(keys[:, i], keys[:, j]).size}


def check(arrival, n_levels):
    arrival = np.asarray(arrival, dtype=np.float64)
    w = make_workload(arrival, np.full(len(arrival), 10.0), np.ones(len(arrival), int))
    r = tie_ranges(w, "levels", np.arange(1, n_levels + 1) * 100.0)
    for i, j in brute_clashes(arrival, n_levels):
        assert r[i, 0] < 0 or r[i, 0] <= j < r[i, 1], (i, j, r)
    known = r[:, 0] >= 0
    i = np.flatnonzero(known)
    assert np.all(r[known, 0] <= i) and np.all(i < r[known, 1])
    return r


def test_equal_and_rounded_arrivals_share_a_range():
    # 100 and 100 + 1e-7 differ as level-0 keys but round to one level-1 key.
    r = check([5.0, 100.0, 100.0 + 1e-7, 100.0 + 1e-7, 300.0, 300.0], 2)
    assert r.tolist() == [[0, 1], [1, 4], [1, 4], [1, 4], [4, 6], [4, 6]]


def test_a_clash_across_levels_leaves_both_unknown():
    # Just under 2**32, the level-1 key rounds up to the level-2 key of arrival 0.
    assert 1 * SPAN + (SPAN - 2.0**-21) == 2 * SPAN + 0.0
    r = check([0.0, 1.0, SPAN - 2.0**-21], 2)
    assert r[0].tolist() == [-1, -1] and r[2].tolist() == [-1, -1] and r[1].tolist() == [1, 2]


def test_other_rules_are_not_known():
    w = make_workload([0.0, 1.0], [10.0, 10.0], [1, 1])
    assert (tie_ranges(w, "table", None) == -1).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 1.0 + 1e-7, 2.0, 2.0 + 4e-7, 7.0, 1e6, 1e6 + 1e-4,
                                 SPAN - 2.0**-21, SPAN - 2.0**-22]), max_size=12),
       st.integers(0, 3))
def test_any_arrivals(arrival, n_levels):
    check(sorted(arrival), n_levels)


@pytest.mark.parametrize("n", [0, 1])
def test_tiny_workloads(n):
    check([3.0] * n, 2)
