"""Planned stops (evalstop.sim.stops) give the event path's result, stop for stop.

The simulator finds per-job detectors' stop points before the run and, for schedulers that
ignore checkpoints, simulates only each job's end. Here every field of the result (every
start, finish, stop, kept checkpoint, preemption and the GPU timeline) is compared with
the event path, which asks the detector at every eval, on the benchmark's traces (the
paper scenario and a slice of the Philly trace) under every scheduler and several rules.
"""

import os
import sys
from unittest import mock

import numpy as np
import pytest
from conftest import make_workload, random_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.detectors import CusumDrop, FleetNoise, make_detector
from evalstop.experiments.runner import hacking_jobs
from evalstop.schedulers import SCHEDULERS, EvalStop, build, make_scheduler
from evalstop.sim.engine import simulate
from evalstop.sim.stops import plan_for, stop_index
from evalstop.workload import load_philly, synthetic_workload, trace_workload

RULES = ("evalstop:k=2", "evalstop:k=1", "evalstop:k=3", "default", "noise-drop",
         "patience", "stopat", "loss-plateau", "slope", "default:sigma=0.05", "cusum-default",
         # block-cusum past its merges (blocks of 2 evals from the 8th, of 4 from the 16th)
         "block-cusum:blocks=4,wblocks=2,smooth=4,trim=1")
FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "n_preemptions", "timeline_t", "timeline_used")


def same_result(a, b):
    for f in FIELDS:
        assert np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True), f
    assert (a.n_events, a.n_eval_events) == (b.n_events, b.n_eval_events)


def both_paths(w, n_gpus, make):
    fast = simulate(w, n_gpus, make())
    slow = simulate(w, n_gpus, make(), plan_stops=False)
    same_result(fast, slow)
    return fast


@pytest.fixture(scope="module")
def traces():
    paper = synthetic_workload(np.random.default_rng(0), n_jobs=300, n_gpus=64)
    philly = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    return [(paper, 64), (philly, max(96, int(philly.gpus.max())))]


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "python"])
@pytest.mark.parametrize("sched", SCHEDULERS)
def test_every_scheduler_and_rule_matches_the_event_path(traces, sched, twin):
    with jit_env(twin):
        for w, n_gpus in traces:
            for rule in (None, *RULES):
                res = both_paths(w, n_gpus, lambda rule=rule: build(sched, rule))
                if rule == "evalstop:k=2":
                    assert res.stopped.any()  # the comparison covers real stops


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "python"])
def test_job_types_oracle_and_min_mode_match(traces, twin):
    w, n_gpus = traces[1]
    with jit_env(twin):
        for sched in ("fifo", "sjf-est", "srtf-est", "tiresias"):
            both_paths(w, n_gpus, lambda: build(sched, "evalstop:k=2", job_types=["rlhf"]))
            both_paths(w, n_gpus, lambda: build(sched, "default", only_jobs=hacking_jobs(w)))
            both_paths(w, n_gpus, lambda: EvalStop(make_scheduler(sched), "evalstop:k=2",
                                                   mode="min"))


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "python"])
def test_non_finite_evals_fall_back_to_the_detector_objects(twin):
    w = random_workload(3, 60)
    w.eval_obs[::7, 2] = np.nan
    w.eval_obs[::11, 4] = np.inf
    with jit_env(twin):
        for sched in SCHEDULERS:
            for rule in ("evalstop:k=1", "evalstop:k=2", "default"):
                both_paths(w, 6, lambda: build(sched, rule))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4), st.sampled_from(["max", "min"]))
def test_vectorised_k_decline_is_the_rule(seed, k, mode):
    rng = np.random.default_rng(seed)
    obs = rng.integers(0, 4, (40, 9)).astype(float)  # many ties and runs
    obs[rng.random(40) < 0.1, rng.integers(0, 9)] = np.nan
    spec = f"evalstop:k={k}"
    z = np.zeros_like(obs)
    grid = np.arange(1, 10) / 9
    fast = stop_index(lambda: make_detector(spec, mode=mode), obs, z, z, grid)
    for i in range(40):
        det = make_detector(spec, mode=mode)
        end, kept, stopped = 8, 8, False
        for j in range(9):
            d = det.update_stop(j + 1, obs[i, j], 0.0, 0.0, grid[j])
            if d is not None:
                end, kept, stopped = j, d.best_step - 1, True
                break
        assert (fast.end_eval[i], fast.kept_eval[i], fast.stopped[i]) == (end, kept, stopped)


def test_pooled_rules_and_listening_overlays_keep_the_event_path():
    w = make_workload([0, 1], [10, 10], [1, 1])
    pooled = build("fifo", "evalstop:k=2")
    pooled.per_job = False  # as a rule that pools jobs (a fleet prior) declares
    assert plan_for(w, pooled) is None

    class Listening(EvalStop):
        heard = 0

        def on_eval(self, job, now):
            self.heard += 1
            return super().on_eval(job, now)

    sched = Listening(make_scheduler("fifo"), "evalstop:k=2")
    assert plan_for(w, sched) is None
    simulate(w, 2, sched)
    assert sched.heard == 2 * w.n_evals
    assert plan_for(w, build("fifo", "evalstop:k=2")) is not None


# The default before block-cusum and its relatives: fixed and growing level windows, medians, stated noise
# (sigma=, eval_n=), the noise-free sigma=0, and options where one eval's z is exactly the
# clip and W lands exactly on h (k=1, clip=2, h=3 on scores on a 1/8 grid with sigma=1/8).
CUSUM_SPECS = [
    "cusum-default", "cusum-drop", "cusum-drop:trim=-1,smooth=4", "cusum-drop:smooth=1,trim=0",
    "cusum-drop:smooth=6,trim=1,min_evals=1", "cusum-known:sigma=0.02", "cusum-known:sigma=0",
    "cusum-default:sigma=0.03", "cusum-default:eval_n=100", "cusum-default:eval_n=7",
    "cusum-drop:smooth_min=2,smooth=5,trim=1", "cusum-drop:smooth_min=3,smooth=12,trim=-1",
    "cusum-drop:smooth_min=4,smooth=4,trim=1,min_evals=1",
    "cusum-known:eval_n=50,smooth_min=3,smooth=15,trim=3,h=1,k=0.5,clip=1",
    "cusum-drop:h=3,k=1,clip=2,smooth=3,trim=0,smooth_min=2,min_evals=2,sigma=0.125",
]


KINDS = ["noisy", "steps", "grid", "const", "plateau"]


def _cusum_rows(rng, kind, n, m):
    if kind == "noisy":  # rises then falls, with noise
        peak = rng.uniform(0.2, 1.2, (n, 1))
        x = np.linspace(0, 1, m)[None, :]
        obs = np.where(x < peak, x, 2 * peak - x) * 0.8 + rng.normal(0, rng.uniform(0.005, 0.1),
                                                                    (n, m))
        return np.clip(obs, 0.0, 1.0)
    if kind == "steps":  # ties, constant stretches, a zero noise scale
        steps = np.cumsum(rng.integers(-1, 2, (n, m)), axis=1).astype(float)
        return (steps - steps.min()) / (np.ptp(steps) + 1)
    if kind == "grid":  # scores on a 1/8 grid: exact drops, z at the clip, W exactly h
        return rng.integers(0, 9, (n, 1)) / 8 - np.cumsum(rng.random((n, m)) < 0.3, axis=1) / 8
    if kind == "plateau":  # a tied run at the top, then drops on a grid: the level is
        # clamped to its top kept value and equals the bound on it exactly
        top = rng.integers(2, 9, (n, 1)) / 8
        rise = np.minimum(np.arange(m)[None, :] / 8, top)
        drop = np.cumsum(rng.random((n, m)) < 0.4, axis=1) * (np.arange(m) > m // 2) / 8
        return rise - drop
    obs = np.full((n, m), 0.5)  # constant, then a drop of a few tenths
    obs[:, m // 2:] -= rng.integers(0, 3, (n, 1)) * 0.1
    return obs


def _objects(spec, mode, obs, grid):
    out = []
    for row in obs:
        det = make_detector(spec, mode=mode)
        end, kept, stopped = len(grid) - 1, len(grid) - 1, False
        for j, x in enumerate(row):
            d = det.update_stop(j + 1, x, 0.0, 0.0, grid[j])
            if d is not None:
                end, kept, stopped = j, d.best_step - 1, True
                break
        out.append((end, kept, stopped))
    return out


def jit_env(twin):
    """The compiled twins on (skipped without numba) or off, for the ``with`` block."""
    if twin:
        pytest.importorskip("numba")
    return mock.patch.dict(os.environ, {"EVALSTOP_JIT": "1" if twin else "0"})


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(CUSUM_SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS))
def test_vectorised_cusum_drop_is_the_rule(twin, seed, spec, mode, kind):
    with jit_env(twin):
        _cusum_drop_is_the_rule(seed, spec, mode, kind)


def _cusum_drop_is_the_rule(seed, spec, mode, kind):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    obs = _cusum_rows(rng, kind, 40, m)
    if "eval_n" in spec:
        obs = np.clip(obs, 0.0, 1.0)  # pass rates
    obs[rng.random(40) < 0.05, rng.integers(0, m)] = np.nan
    if sys.version_info < (3, 12):  # the array version answers (and not only the objects)
        found = make_detector(spec, mode=mode).stop_index(obs)
        assert found is not None and found[2].sum() == np.isfinite(obs).all(axis=1).sum()
    z = np.zeros_like(obs)
    grid = np.arange(1, m + 1) / m
    fast = stop_index(lambda: make_detector(spec, mode=mode), obs, z, z, grid)
    assert list(zip(fast.end_eval, fast.kept_eval, fast.stopped)) == _objects(spec, mode, obs,
                                                                             grid)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(CUSUM_SPECS), st.sampled_from(["max", "min"]),
       st.sampled_from(KINDS))
def test_the_bound_keeps_every_job_the_rule_stops(seed, spec, mode, kind):
    """``_may_stop`` leaves out only jobs the objects never stop (it is a bound, not a
    guess), on ties, exact drops, z at the clip and W exactly at h."""
    from evalstop.detectors.cusum_drop_array import _may_stop
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 40))
    obs = _cusum_rows(rng, kind, 60, m)
    if "eval_n" in spec:
        obs = np.clip(obs, 0.0, 1.0)
    det = make_detector(spec, mode=mode)
    vt = (obs * det._sign).T.copy()
    may = _may_stop(det, vt)
    stopped = [s for _, _, s in _objects(spec, mode, obs, np.arange(1, m + 1) / m)]
    assert not np.any(np.array(stopped, dtype=bool) & ~may)


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
def test_the_bound_leaves_out_jobs_on_the_trace(twin):
    """cusum-drop's bound (the default before block-cusum) spares the level windows of a
    share of the Philly jobs (else it would only cost time), and the planned stops are
    still the objects'."""
    from evalstop.detectors.cusum_drop_array import _may_stop
    w = trace_workload(load_philly(limit=300), np.random.default_rng(2))
    det = make_detector("cusum-default")
    may = _may_stop(det, w.eval_obs.T.copy())
    assert 0.1 < 1 - may.mean() < 0.9
    grid = w.eval_progress
    with jit_env(twin):
        fast = stop_index(lambda: make_detector("cusum-default"), w.eval_obs, w.loss, w.proxy,
                          grid)
    assert list(zip(fast.end_eval, fast.kept_eval, fast.stopped)) == _objects(
        "cusum-default", "max", w.eval_obs, grid)


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@pytest.mark.parametrize("spec", ["default", "default:eval_n=100", "default:sigma=0.02"])
def test_the_default_is_planned_by_its_array_on_the_trace(twin, spec):
    """The default (block-cusum) plans every finite Philly job itself (20 evals: before its
    first merge), stop for stop the objects' plan."""
    from evalstop.detectors import BlockCusum
    w = trace_workload(load_philly(limit=600), np.random.default_rng(4))
    assert isinstance(make_detector(spec), BlockCusum)
    grid = w.eval_progress
    with jit_env(twin):
        assert make_detector(spec).stop_index(w.eval_obs)[2].all()
        fast = stop_index(lambda: make_detector(spec), w.eval_obs, w.loss, w.proxy, grid)
    assert list(zip(fast.end_eval, fast.kept_eval, fast.stopped)) == _objects(
        spec, "max", w.eval_obs, grid)
    assert fast.stopped.any()


@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
def test_the_array_version_declines_what_it_does_not_repeat(twin):
    """Options it does not know (a later companion test, say), a fleet, or a changed part
    of the rule leave the decisions to the objects; eval_n rows out of [0, 1] too (the
    object raises on them)."""
    with jit_env(twin):
        _declines_what_it_does_not_repeat()


def _declines_what_it_does_not_repeat():
    class WithShift(CusumDrop):
        name = "cusum-drop-shift"
        PARAMS = {**CusumDrop.PARAMS, "shift": (float, None)}

        def __init__(self, *, shift=None, **kw):
            super().__init__(**kw)
            self.shift = shift

    class OwnNoise(CusumDrop):
        def _own_sigma(self, values):
            return 1.0

    obs = np.random.default_rng(0).random((5, 12))
    kw = {"smooth": 9, "trim": 2, "smooth_min": 3}
    assert (WithShift(**kw).stop_index(obs) is None) == (sys.version_info >= (3, 12))
    assert WithShift(shift=0.5, **kw).stop_index(obs) is None
    assert OwnNoise(**kw).stop_index(obs) is None
    assert CusumDrop(fleet=FleetNoise(), **kw).stop_index(obs) is None
    if sys.version_info < (3, 12):
        bad = obs.copy()
        bad[1, 3] = 1.5
        done = CusumDrop(eval_n=50, **kw).stop_index(bad)[2]
        assert done.tolist() == [True, False, True, True, True]
        with pytest.raises(ValueError, match="proportions"):
            stop_index(lambda: CusumDrop(eval_n=50, **kw), bad, bad, bad,
                       np.arange(1, 13) / 12)
