"""The compiled twin of the default rule's planned stops (``cusum_drop_jit``) gives the
objects' stop and kept eval on every row the array answers, over random specs: fixed and
growing windows, medians, stated and binomial noise, a noise estimate of 0 (constant
runs), ties, quantised scores, NaN rows, both modes."""

import os
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, object_stops, scores

from evalstop import jit
from evalstop.detectors import CusumDrop
from evalstop.detectors.cusum_drop_array import stop_index
from evalstop.detectors.stop_arrays import SUM_IN_ORDER

pytest.importorskip("numba")
pytestmark = pytest.mark.skipif(not SUM_IN_ORDER, reason="the arrays decline on 3.12+")


@st.composite
def specs(draw):
    smooth = draw(st.integers(1, 16))
    trim = draw(st.integers(-1, (smooth - 1) // 2))
    k = draw(st.sampled_from([0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]))
    kw = {
        "smooth": smooth, "trim": trim, "k": k,
        "clip": k + draw(st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0])),
        "h": draw(st.sampled_from([0.5, 1.0, 2.0, 2.5, 3.0, 4.0])),
        "min_evals": draw(st.integers(1, 8)),
    }
    if smooth >= 2 and draw(st.booleans()):
        kw["smooth_min"] = draw(st.integers(2, smooth))
    noise = draw(st.sampled_from(["own", "own", "sigma", "eval_n"]))
    if noise == "sigma":
        kw["sigma"] = draw(st.sampled_from([1e-6, 0.01, 0.05, 0.125, 0.3]))
    elif noise == "eval_n":
        kw["eval_n"] = draw(st.sampled_from([1, 7, 50, 100]))
    return kw


def objects(kw, mode, obs):
    return object_stops(CusumDrop, kw, mode, obs)


def twin_plan(kw, mode, obs, twin=True):
    """The array plan, by the compiled twin or (``twin=False``) by numpy."""
    with mock.patch.dict(os.environ, {"EVALSTOP_JIT": "1" if twin else "0"}):
        assert (jit.twin("evalstop.detectors.cusum_drop_jit", 1) is not None) == twin
        return stop_index(CusumDrop(mode=mode, **kw), obs)


@settings(max_examples=300, deadline=None)
@given(specs(), st.sampled_from(["max", "min"]), st.sampled_from(KINDS), st.integers(0, 2**32))
def test_the_twin_is_the_rule(kw, mode, kind, seed):
    rng = np.random.default_rng(seed)
    n, m = 24, int(rng.integers(1, 41))
    obs = scores(rng, kind, n, m)
    if kind != "wide" and rng.random() < 0.5:  # on a grid: ties and exact drops
        obs = np.round(obs * 16) / 16
    if "eval_n" in kw:
        obs = np.clip(obs, 0.0, 1.0)
        obs[0, -1] = 1.5  # out of [0, 1]: left to the object, which raises
    obs[1, rng.integers(0, m)] = np.nan  # a row with a non-finite score: left to the objects
    stop_at, kept, done = twin_plan(kw, mode, obs)
    want = np.isfinite(obs).all(axis=1)
    if "eval_n" in kw:
        want &= ((obs >= 0.0) & (obs <= 1.0)).all(axis=1)
    assert done.tolist() == want.tolist()
    rows = np.flatnonzero(done)
    assert list(zip(stop_at[rows], kept[rows])) == objects(kw, mode, obs[rows])
    assert (stop_at[~done] == -1).all() and (kept[~done] == -1).all()


@pytest.mark.parametrize("kw", [
    {"h": 2.5, "k": 1.5, "clip": 3.0, "smooth": 15, "min_evals": 4, "trim": 3, "smooth_min": 3},
    {"h": 2.0, "k": 0.75, "clip": 2.0, "smooth": 9, "min_evals": 6, "trim": 2},
    {"h": 1.0, "k": 0.5, "clip": 1.5, "smooth": 6, "min_evals": 1, "trim": -1, "smooth_min": 2},
])
def test_the_twin_is_the_numpy_version_on_long_noisy_runs(kw):
    """Many long rows (up to the noise estimate's window and past it with a wide window):
    twin and numpy agree row for row, stops included."""
    rng = np.random.default_rng(7)
    for m in (60, 200):
        x = np.arange(m)[None, :] / m
        peak = rng.uniform(0.2, 1.2, (300, 1))
        obs = np.where(x < peak, x, 2 * peak - x) + rng.normal(0, 0.05, (300, m))
        found = twin_plan(kw, "max", obs)
        with mock.patch.dict(os.environ, {"EVALSTOP_JIT": "0"}):
            plain = stop_index(CusumDrop(**kw), obs)
        for a, b in zip(found, plain):
            assert a.tolist() == b.tolist()
        assert (found[0] >= 0).sum() > 10


@pytest.mark.parametrize("twin", [True, False])
def test_past_the_noise_window(twin):
    """smooth > 200: histories longer than the noise estimate's window are answered with
    the object's noise, which reads the last 200 values only (here a zigzag rise whose
    second differences are far larger than the plateau's after it, so counting more of
    them would change the stops)."""
    kw = {"smooth": 240, "smooth_min": 2, "trim": 1, "min_evals": 1}
    rng = np.random.default_rng(3)
    rise = 0.01 * np.arange(100) + 0.05 * (-1.0) ** np.arange(100)
    obs = np.concatenate([rise, np.full(130, 1.0)]) + rng.normal(0, 0.002, (40, 230))
    obs[:, 205:] -= np.linspace(0, 0.2, 25) * rng.random((40, 1))
    stop_at, kept, done = twin_plan(kw, "max", obs, twin)
    assert done.all()
    assert list(zip(stop_at.tolist(), kept.tolist())) == objects(kw, "max", obs)
    assert (stop_at > 200).sum() > 20


def test_z_exactly_at_the_clip_and_w_exactly_at_h():
    """Scores on a 1/8 grid with sigma=1/8: each drop of 2/8 is exactly the clip and adds
    exactly 1, so the third lands W exactly on h (a stop); a recovery in between does not."""
    kw = {"h": 3.0, "k": 1.0, "clip": 2.0, "smooth": 3, "trim": 0, "smooth_min": 2,
          "min_evals": 2, "sigma": 0.125}
    obs = np.array([[0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.25],
                    [0.5, 0.5, 0.5, 0.25, 0.25, 0.5, 0.25]])
    found = twin_plan(kw, "max", obs)
    assert list(zip(found[0], found[1])) == objects(kw, "max", obs) == [(5, 0), (-1, -1)]


def test_a_constant_run_is_not_a_drop():
    """Constant scores whose mean rounds above them (0.1 + 0.1 + 0.1 = 0.30000000000000004):
    the level's clamp keeps it at the value, so no eval of the run is below it. The spikes,
    one per window (trimmed), put the bound above the run, so that the gates do not hide an
    unclamped level."""
    spikes = [0.1] * 20
    spikes[0] = spikes[6] = spikes[12] = 0.9
    flat = [[v] * 20 for v in (0.1, 0.3, 0.7, 1 / 3, 0.01, 2 / 7)]
    for kw, rows in (({"smooth": 5, "trim": 1, "min_evals": 1, "sigma": 1e-18}, [spikes]),
                     ({"smooth": 3, "trim": 0, "min_evals": 1}, flat),
                     ({"smooth": 15, "trim": 3, "smooth_min": 3, "min_evals": 4, "h": 2.5,
                       "k": 1.5, "clip": 3.0}, flat)):
        obs = np.array(rows)
        for twin in (True, False):
            assert twin_plan(kw, "max", obs, twin)[0].tolist() == [-1] * len(obs)
        assert objects(kw, "max", obs) == [(-1, -1)] * len(obs)


def _bits(x):
    return float(x).hex()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(-2.0, 2.0), st.sampled_from([0.1, 0.2, 0.3, 0.7, -0.0])),
                min_size=1, max_size=16),
       st.integers(-1, 7), st.booleans())
def test_the_twin_level_is_the_objects_float(window, trim, full):
    """``_smoothed`` gives ``CusumDrop._smoothed``'s float, bit for bit (sum order, clamp,
    median, the trim at a narrower width)."""
    from evalstop.detectors import cusum_drop_jit as twin
    w = len(window)
    smooth = w if full else 16
    trim = min(trim, (smooth - 1) // 2)
    det = CusumDrop(smooth=smooth, trim=trim)
    want = det._smoothed(list(window))
    got = twin._smoothed(np.sort(np.array(window)), w, smooth, trim)
    assert _bits(got) == _bits(want) or got == want == 0.0  # a median's zero has either sign


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(-1.0, 1.0), st.sampled_from([0.0, 0.125, 0.1, 0.3])),
                min_size=5, max_size=40))
def test_the_twin_noise_is_the_objects_float(values):
    """The noise from the sorted second differences (the deviations' median read off them
    in their order) and the direct one both give ``noise.sigma_hat``'s float, bit for bit."""
    from evalstop.detectors import cusum_drop_jit as twin
    from evalstop.detectors.noise import (
        CLIP,
        CLIPPED_MEAN_ABS,
        MAD_N01,
        MEAN_ABS,
        MIN_DIFFS,
        sigma_hat,
    )
    want = sigma_hat(list(values))
    v = np.array(values)
    d = v[:-2] - 2.0 * v[1:-1] + v[2:]
    nd = len(d)
    got = twin._sigma_sorted(d, np.sort(d), nd, CLIP, CLIPPED_MEAN_ABS, MEAN_ABS, MAD_N01,
                             np.empty(nd))
    assert _bits(got) == _bits(want)
    direct = twin._sigma_hat(v, len(v), 200, MIN_DIFFS, CLIP, CLIPPED_MEAN_ABS, MEAN_ABS,
                             MAD_N01, np.empty(nd), np.empty(nd))
    assert _bits(direct) == _bits(want)


BOUND_SPECS = [
    {"h": 2.5, "k": 1.5, "clip": 3.0, "smooth": 15, "min_evals": 4, "trim": 3, "smooth_min": 3},
    {"smooth_min": 3, "smooth": 15, "trim": 6},
    {"smooth_min": 2, "smooth": 9, "trim": 4, "h": 1.0, "k": 0.25, "clip": 1.5, "min_evals": 1},
    {"smooth": 5, "trim": 2, "h": 0.5, "k": 0.1, "clip": 0.6},
    {"smooth": 4, "trim": 1, "h": 0.5, "k": 0.0, "clip": 0.25, "min_evals": 1, "sigma": 1e-9},
]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from(BOUND_SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS), st.sampled_from([(1.0, 0.0), (1e-6, 1e6), (3.0, -1e3)]))
def test_the_gates_keep_every_stop_far_from_zero(seed, kw, mode, kind, affine):
    """W_bar's mean of ranks, raised by 1e-11 of the largest |value| for rounding: scores
    far from zero with tiny steps (level and bound means units in the last place apart),
    a small clip and k (W at h from few drops), trims that shrink the kept ranks at the
    full width. The twin's stops are the objects'."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    scale, offset = affine
    obs = scores(rng, kind, 40, m) * scale + offset
    stop_at, kept, done = twin_plan(kw, mode, obs)
    assert done.all()
    assert list(zip(stop_at, kept)) == objects(kw, mode, obs)


def test_the_mean_bound_leaves_out_more_jobs():
    """On a Philly slice W_bar on the mean of the ranks gates fewer (job, eval) pairs than
    on the top kept rank alone (the reason it is there), never more."""
    from evalstop.detectors import cusum_drop_jit as twin
    from evalstop.detectors import make_detector
    from evalstop.workload import load_philly, trace_workload
    w = trace_workload(load_philly(limit=2000), np.random.default_rng(2))
    det = make_detector("cusum-default")  # cusum-drop's twin
    vt = np.ascontiguousarray(w.eval_obs.T)
    m, c = vt.shape
    widths, lo, hi, n_top = twin._bound_ranks(m, det.smooth, det.smooth_min, det.trim)
    gates = []
    for mean_ok in (np.ones(c, dtype=bool), np.zeros(c, dtype=bool)):
        gate = np.zeros((c, m + 1), dtype=bool)
        twin._may_stop_at(vt, c, np.full(m + 1, det.h), det.k, det.clip, det.min_evals, det.trim, widths, lo,
                          hi, n_top, np.empty((n_top, c)), np.abs(vt).max(axis=0) * 1e-11,
                          mean_ok, np.empty((m, c)), gate, np.zeros(c, dtype=np.int64))
        gates.append(gate)
    mean, clamp_only = gates
    assert not (mean & ~clamp_only).any()
    assert mean.sum() < 0.8 * clamp_only.sum()


def test_the_bound_allows_for_the_levels_rounding():
    """The level sums its kept values in ascending order, W_bar the same values from the
    top: 0.1 + 0.2 + 0.3 rounds up (the level is 0.20000000000000004), 0.3 + 0.2 + 0.1
    does not, so evals at 0.2 are drops (of many sigmas) that a bound without its
    rounding margin would call none."""
    kw = {"smooth": 3, "trim": 0, "min_evals": 1, "h": 2.0, "k": 0.5, "clip": 1.5,
          "sigma": 1e-18}
    obs = np.array([[0.3, 0.2, 0.1, 0.2, 0.2, 0.2]])
    for twin in (True, False):
        found = twin_plan(kw, "max", obs, twin)
        assert list(zip(found[0], found[1])) == [(4, 0)]
    assert objects(kw, "max", obs) == [(4, 0)]
