"""block-cusum's planned stops (``block_cusum_array``: cusum-drop's plan with the rule's
threshold and gain gates before the first merge, the compiled twin ``block_cusum_jit``
after it) give the objects' stop and kept eval on every row they answer, with the twin
and without: random specs, ties, quantised pass rates, NaN rows, stated and binomial
noise, both modes, rows long enough to pass the block-doubling points."""

import math
import os
from typing import ClassVar
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, by_objects, object_stops, scores

from evalstop import jit
from evalstop.detectors import BlockCusum, CusumDrop, FleetNoise
from evalstop.detectors.block_cusum_array import stop_index, thresholds
from evalstop.detectors.stop_arrays import SUM_IN_ORDER
from evalstop.sim.stops import stop_index as planned

pytestmark = pytest.mark.skipif(not SUM_IN_ORDER, reason="the arrays decline on 3.12+")


def jit_env(twin):
    """The compiled twins on (skipped without numba) or off, for the ``with`` block."""
    if twin:
        pytest.importorskip("numba")
    return mock.patch.dict(os.environ, {"EVALSTOP_JIT": "1" if twin else "0"})


@st.composite
def specs(draw):
    blocks = draw(st.sampled_from([4, 5, 6, 8, 12, 16]))
    lowest = draw(st.integers(2, min(blocks, 6)))
    smooth = draw(st.integers(lowest, 16))
    kw = {"blocks": blocks, "smooth": smooth, "wblocks": draw(st.integers(1, blocks // 2))}
    if draw(st.booleans()):
        kw["smooth_min"] = lowest
    else:  # no smooth_min: the first window is smooth wide, which blocks must hold
        kw["smooth_min"] = None
        kw["smooth"] = smooth = lowest
    kw["trim"] = draw(st.integers(-1, (smooth - 1) // 2))
    k = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5]))
    kw.update(k=k, clip=k + draw(st.sampled_from([0.5, 1.0, 1.5, 2.0])),
              h=draw(st.sampled_from([0.5, 1.0, 2.5, 4.0])),
              min_evals=draw(st.integers(1, 8)),
              rel=draw(st.sampled_from([0.0, 0.05, 0.1, 0.3])),
              hg=draw(st.sampled_from([0.0, 0.0, 0.5, 1.5])),
              hn=draw(st.sampled_from([1, 4, 12, 30])),
              lags=draw(st.sampled_from([1, 2, 4, 8])),
              gmin=draw(st.sampled_from([0.0, 1.0, 3.0])))
    noise = draw(st.sampled_from(["own", "own", "sigma", "eval_n"]))
    if noise == "sigma":
        kw["sigma"] = draw(st.sampled_from([1e-6, 0.01, 0.05, 0.125]))
    elif noise == "eval_n":
        kw["eval_n"] = draw(st.sampled_from([7, 50, 100, 1319]))
    return kw


def objects(kw, mode, obs):
    return object_stops(BlockCusum, kw, mode, obs)


def plan(kw, mode, obs, twin):
    with jit_env(twin):
        assert (jit.twin("evalstop.detectors.block_cusum_jit", 1) is not None) == twin
        return stop_index(BlockCusum(mode=mode, **kw), obs)


def _rows(rng, kind, n, m, kw):
    obs = scores(rng, kind, n, m)
    if kind != "wide" and rng.random() < 0.5:  # on a grid: ties and exact drops
        obs = np.round(obs * 16) / 16
    if "eval_n" in kw:
        obs = np.clip(obs, 0.0, 1.0)
        if kw["eval_n"] <= 100 and rng.random() < 0.5:  # quantised pass rates
            obs = np.round(obs * kw["eval_n"]) / kw["eval_n"]
        obs[0, -1] = 1.5  # out of [0, 1]: left to the object, which raises
    obs[1, rng.integers(0, m)] = np.nan  # a non-finite score: left to the objects
    return obs


def _blocks(kw):
    return kw.get("blocks", BlockCusum.PARAMS["blocks"][1])


def _check(kw, mode, obs, twin):
    stop_at, kept, done = plan(kw, mode, obs, twin)
    want = np.isfinite(obs).all(axis=1)
    if "eval_n" in kw:
        want &= ((obs >= 0.0) & (obs <= 1.0)).all(axis=1)
    first = 2 * _blocks(kw) - 1  # evals before the first merge
    if twin or obs.shape[1] <= first:
        assert done.tolist() == want.tolist()
    else:  # without the twin, rows that reach the merge unstopped go to the objects
        assert done.tolist() == (want & (stop_at >= 0)).tolist()
        assert (stop_at[done] < first).all()
    rows = np.flatnonzero(done)
    assert list(zip(stop_at[rows].tolist(), kept[rows].tolist())) == objects(kw, mode,
                                                                             obs[rows])
    assert (stop_at[~done] == -1).all() and (kept[~done] == -1).all()
    return stop_at[rows]


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@settings(max_examples=120, deadline=None)
@given(specs(), st.sampled_from(["max", "min"]), st.sampled_from(KINDS), st.integers(0, 2**32))
def test_the_plan_is_the_rule(twin, kw, mode, kind, seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 4 * kw["blocks"] + 8))  # short rows and rows past 2 merges
    _check(kw, mode, _rows(rng, kind, 16, m, kw), twin)


DEFAULT_LIKE = [
    {},  # the rule's defaults
    {"sigma": 0.02},
    {"eval_n": 1319},
    {"eval_n": 100, "rel": 0.0, "gmin": 0.0},
    {"blocks": 8, "wblocks": 4, "hg": 1.0, "hn": 20, "lags": 8},
    {"blocks": 4, "wblocks": 2, "smooth": 4, "smooth_min": 3, "trim": 1, "lags": 1},
]


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@pytest.mark.parametrize("kw", DEFAULT_LIKE)
def test_long_slow_curves(kw, twin):
    """Many rows of 20-400 evals (a rise, a plateau or slow wander, then maybe a fall of
    10-60% of the gain): stops before and after the merges, all the objects'."""
    rng = np.random.default_rng(11)
    late = 0
    for m in (20, 45, 130, 400):
        n = 40 if m < 400 else 12
        t = np.arange(m)[None, :] / m
        gain = rng.uniform(0.1, 0.5, (n, 1))
        peak = rng.uniform(0.3, 1.2, (n, 1))
        fall = rng.uniform(0.1, 0.6, (n, 1)) * gain
        level = 0.2 + gain * np.minimum(t / 0.3, 1.0) - fall * np.clip((t - peak) / 0.2, 0, 1)
        wander = np.cumsum(rng.normal(0, 0.003, (n, m)), axis=1)
        obs = np.clip(level + wander + rng.normal(0, 0.012, (n, m)), 0.0, 1.0)
        if "eval_n" in kw:
            obs = np.round(obs * kw["eval_n"]) / kw["eval_n"]
        late += int((_check(kw, "max", obs, twin) >= 2 * _blocks(kw)).sum())
    assert late > 0 or not twin  # stops past the first merge (the objects' without the twin)


def test_it_is_cusum_drop_with_gates_before_the_first_merge():
    """With rel=0, gmin=0 and hg=0 a row shorter than 2 * blocks evals is planned as
    cusum-drop with the same options plans it, stop for stop; the gates then remove stops
    (the reason they are there)."""
    rng = np.random.default_rng(5)
    obs = np.clip(scores(rng, "curve", 400, 20), 0.0, 1.0)
    shared = {"h": 2.5, "k": 1.5, "clip": 3.0, "smooth": 15, "min_evals": 4, "trim": 3,
              "smooth_min": 3}
    for twin in (True, False):
        if twin and not jit.enabled():
            continue
        with jit_env(twin):
            bare = stop_index(BlockCusum(rel=0.0, gmin=0.0, hg=0.0, **shared), obs)
            cusum = CusumDrop(**shared).stop_index(obs)
            gated = stop_index(BlockCusum(rel=0.2, gmin=3.0, hn=8, **shared), obs)
        for a, b in zip(bare, cusum):
            assert a.tolist() == b.tolist()
        assert (bare[0] >= 0).sum() > (gated[0] >= 0).sum() > 0
        assert not ((gated[0] >= 0) & (bare[0] < 0)).any()


def test_the_threshold_is_the_objects_float():
    det = BlockCusum(hg=0.7, hn=3)
    thr = thresholds(det, 50)
    for n in range(1, 51):
        assert thr[n] == det.h + det.hg * math.log2(max(1.0, n / det.hn))


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
def test_the_simulators_plan_is_the_objects(twin):
    """Through ``sim.stops``: rows the array leaves (NaN, the merge without the twin) are
    run by the objects, so the whole plan is theirs."""
    rng = np.random.default_rng(2)
    for m in (20, 40):
        obs = np.clip(scores(rng, "curve", 60, m), 0.0, 1.0)
        obs[3, 5] = np.nan
        z = np.zeros_like(obs)
        grid = np.arange(1, m + 1) / m
        with jit_env(twin):
            fast = planned(lambda: BlockCusum(sigma=0.02), obs, z, z, grid)
        slow = by_objects("block-cusum:sigma=0.02", "max", obs, z, grid)
        for a, b, name in zip(fast, slow, fast._fields):
            assert a.tolist() == b.tolist(), name
        assert fast.stopped.any()


def test_what_it_leaves_to_the_objects():
    class OwnNoise(BlockCusum):
        def _own_block_sigma(self):
            return 1.0

    class WithOption(BlockCusum):
        name = "block-cusum-more"
        PARAMS: ClassVar = {**BlockCusum.PARAMS, "extra": (float, None)}

        def __init__(self, *, extra=None, **kw):
            super().__init__(**kw)
            self.extra = extra

    obs = np.random.default_rng(0).random((5, 12))
    assert OwnNoise().stop_index(obs) is None
    assert BlockCusum(fleet=FleetNoise()).stop_index(obs) is None
    assert WithOption(extra=1.0).stop_index(obs) is None
    assert WithOption().stop_index(obs) is not None
    assert BlockCusum(blocks=101, wblocks=8).stop_index(obs) is None
    assert BlockCusum(blocks=100, wblocks=8).stop_index(obs) is not None


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@pytest.mark.parametrize("blocks", [4, 16])
def test_the_gain_gate_starts_after_hn_evals(twin, blocks):
    """A run that never gained, then falls: stopped at the eval where W reaches h when that
    is hn evals or fewer, not after (the gate's first eval is hn + 1)."""
    flat = [[1.0] * 14 + [0.5] * 6, [0.0] * 3 + [1.0] * 11 + [0.5] * 6]
    obs = np.array(flat * 3) + np.repeat([0.0, 1e-3, -1e-3], 2)[:, None]
    stops = set()
    for hn in range(12, 22):
        kw = {"sigma": 0.1, "hn": hn, "blocks": blocks, "wblocks": blocks // 2, "smooth_min": 3,
              "smooth": min(15, blocks), "trim": 3 if blocks >= 15 else 1}
        stops.update(_check(kw, "max", obs, twin).tolist())
    if twin or blocks > 9:  # (without the twin, rows past the merge are the objects')
        assert -1 in stops and len(stops) > 1  # hn decides whether the run stops


def test_the_switch_is_asked_with_the_rows_left_past_the_merge(monkeypatch):
    """What the twin of the second phase saves is the objects' work on the rows that the
    first phase leaves unstopped, every eval of them: the switch is asked with that count
    (not with every row) and the row's length."""
    rng = np.random.default_rng(4)
    obs = np.clip(scores(rng, "curve", 80, 40), 0.0, 1.0)
    obs[2, 7] = np.nan  # a row the arrays do not answer at all
    asked = {}

    def twin(module, n_jobs, n_evals=0):
        asked[module] = (n_jobs, n_evals)

    monkeypatch.setattr(jit, "twin", twin)
    det = BlockCusum(sigma=0.02)
    stop_index(det, obs)
    first = 2 * det.blocks - 1
    full = stop_index(det, obs[:, :first])  # the first phase alone
    left = int((full[2] & (full[0] < 0)).sum())
    assert 0 < left < 79
    assert asked["evalstop.detectors.block_cusum_jit"] == (left, 40)
