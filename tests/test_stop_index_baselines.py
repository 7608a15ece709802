"""The array stop_index of ``patience``, ``stopat`` (reads the eval grid) and
``loss-plateau`` (reads the loss table) gives the objects' stop and kept eval, bit for bit;
``stops.stop_index`` hands each the tables it names, for all rows or some."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, assert_same_plan, by_objects, scores

from evalstop.detectors import LossPlateau, Patience, StopAt, make_detector
from evalstop.sim.stops import stop_index

SPECS = ("patience", "patience:n=1", "patience:n=4,min_delta=0.05", "patience:min_delta=0.125",
         "patience:n=2,min_delta=0.03", "patience:n=1,min_delta=0.1",
         "stopat", "stopat:p=1", "stopat:p=0.3", "loss-plateau", "loss-plateau:window=1,eps=0",
         "loss-plateau:window=3,eps=0.2", "loss-plateau:window=40")


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS), st.sampled_from(KINDS))
def test_the_array_is_the_rule(seed, spec, mode, kind, loss_kind):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    obs = scores(rng, kind, 60, m)
    loss = scores(rng, loss_kind, 60, m)
    if rng.random() < 0.5:
        loss = 1.0 - loss  # falling, as a loss does
    obs[rng.random(60) < 0.05, rng.integers(0, m)] = np.nan
    loss[rng.random(60) < 0.05, rng.integers(0, m)] = np.nan
    grid = np.sort(rng.random(m)) if rng.random() < 0.3 else np.arange(1, m + 1) / m
    finite = np.isfinite(obs).all(axis=1)
    if spec.startswith("loss"):
        finite &= np.isfinite(loss).all(axis=1)
    assert_same_plan(spec, mode, obs, loss, grid, answered=finite.sum())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)
                         | st.sampled_from([0.0, -0.0, 1.0, 0.5]), min_size=16, max_size=16),
                min_size=2, max_size=8),
       st.sampled_from(SPECS), st.sampled_from(["max", "min"]))
def test_any_finite_values(rows, spec, mode):
    """Any finite scores and losses, zeros of both signs and gains that overflow."""
    obs = np.array(rows)
    assert_same_plan(spec, mode, obs, obs[::-1].copy(), np.arange(1, 17) / 16)


def test_each_rule_stops_rows():
    """Not empty comparisons: each rule stops a share of the rows."""
    rng = np.random.default_rng(3)
    obs = scores(rng, "curve", 500, 20)
    loss = 1.0 - scores(rng, "curve", 500, 20)
    grid = np.arange(1, 21) / 20
    for spec in ("patience", "stopat", "loss-plateau"):
        plan = by_objects(spec, "max", obs, loss, grid)
        assert 0.05 < plan.stopped.mean()
        assert_same_plan(spec, "max", obs, loss, grid)


def test_some_rows_get_their_own_tables():
    """``stops.stop_index`` for a subset of rows hands the rule those rows' loss."""
    rng = np.random.default_rng(8)
    obs = scores(rng, "curve", 50, 12)
    loss = 1.0 - scores(rng, "steps", 50, 12)
    grid = np.arange(1, 13) / 12
    rows = np.flatnonzero(rng.random(50) < 0.5)
    for spec in ("loss-plateau:window=2,eps=0.05", "stopat:p=0.5", "patience:n=2"):
        fast = stop_index(lambda spec=spec: make_detector(spec), obs, loss, loss, grid, rows)
        slow = by_objects(spec, "max", obs, loss, grid)
        assert slow.stopped[rows].any()
        for a, b in zip(fast, slow):
            assert a[rows].tolist() == b[rows].tolist()
            others = np.setdiff1d(np.arange(50), rows)
            assert not fast.stopped[others].any()


def test_the_arrays_decline_a_changed_rule():
    class Late(Patience):
        def _observe(self, step, value, loss, proxy, progress):
            return None

    class Never(StopAt):
        def _check(self, progress):
            return None

    class Raw(LossPlateau):
        def _take(self, loss):
            return None

    obs = np.random.default_rng(0).random((3, 8))
    assert Late().stop_index(obs) is None
    assert Never().stop_index(obs, progress=np.arange(1, 9) / 8) is None
    assert Raw().stop_index(obs, loss=obs) is None


def test_stopat_takes_the_grid_as_the_object_does():
    """Grid points just inside and just outside the 1e-12 tolerance below p."""
    obs = np.random.default_rng(1).random((4, 5))
    for near in (0.5e-12, 0.99e-12, 1.01e-12, 1.5e-12):
        grid = np.array([0.2, 0.4, 0.65 - near, 0.8, 1.0])
        want = 2 if near < 1e-12 else 3
        assert by_objects("stopat", "max", obs, obs, grid).end_eval.tolist() == [want] * 4
        assert_same_plan("stopat", "max", obs, obs, grid)
