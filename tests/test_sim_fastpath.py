"""Planned stops (evalstop.sim.stops) give the event path's result, stop for stop.

The simulator finds per-job detectors' stop points before the run and, for schedulers that
ignore checkpoints, simulates only each job's end. Here every field of the result (every
start, finish, stop, kept checkpoint, preemption and the GPU timeline) is compared with
the event path, which asks the detector at every eval, on the benchmark's traces (the
paper scenario and a slice of the Philly trace) under every scheduler and several rules.
"""

import numpy as np
import pytest
from conftest import make_workload, random_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.detectors import make_detector
from evalstop.experiments.runner import hacking_jobs
from evalstop.schedulers import SCHEDULERS, EvalStop, build, make_scheduler
from evalstop.sim.engine import simulate
from evalstop.sim.stops import plan_for, stop_index
from evalstop.workload import load_philly, synthetic_workload, trace_workload

RULES = ("evalstop:k=2", "evalstop:k=1", "evalstop:k=3", "default", "noise-drop",
         "patience", "stopat", "loss-plateau", "slope")
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


@pytest.mark.parametrize("sched", SCHEDULERS)
def test_every_scheduler_and_rule_matches_the_event_path(traces, sched):
    for w, n_gpus in traces:
        for rule in (None, *RULES):
            res = both_paths(w, n_gpus, lambda rule=rule: build(sched, rule))
            if rule == "evalstop:k=2":
                assert res.stopped.any()  # the comparison covers real stops


def test_job_types_oracle_and_min_mode_match(traces):
    w, n_gpus = traces[1]
    for sched in ("fifo", "srtf-est", "tiresias"):
        both_paths(w, n_gpus, lambda: build(sched, "evalstop:k=2", job_types=["rlhf"]))
        both_paths(w, n_gpus, lambda: build(sched, "default", only_jobs=hacking_jobs(w)))
        both_paths(w, n_gpus, lambda: EvalStop(make_scheduler(sched), "evalstop:k=2",
                                               mode="min"))


def test_non_finite_evals_fall_back_to_the_detector_objects():
    w = random_workload(3, 60)
    w.eval_obs[::7, 2] = np.nan
    w.eval_obs[::11, 4] = np.inf
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


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([
    "default", "cusum-drop", "cusum-drop:trim=-1,smooth=4", "cusum-drop:smooth=1,trim=0",
    "cusum-drop:smooth=6,trim=1,min_evals=1", "cusum-known:sigma=0.02"]),
       st.sampled_from(["max", "min"]), st.sampled_from(["noisy", "steps"]))
def test_vectorised_cusum_drop_is_the_rule(seed, spec, mode, kind):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    if kind == "noisy":  # rises then falls, with noise
        peak = rng.uniform(0.2, 1.2, (50, 1))
        x = np.linspace(0, 1, m)[None, :]
        obs = np.where(x < peak, x, 2 * peak - x) + rng.normal(0, 0.03, (50, m))
    else:  # quantised scores: ties, constant stretches, a zero noise scale
        obs = np.cumsum(rng.integers(-1, 2, (50, m)), axis=1).astype(float)
    obs[rng.random(50) < 0.05, rng.integers(0, m)] = np.nan
    z = np.zeros_like(obs)
    grid = np.arange(1, m + 1) / m
    fast = stop_index(lambda: make_detector(spec, mode=mode), obs, z, z, grid)
    for i in range(50):
        det = make_detector(spec, mode=mode)
        end, kept, stopped = m - 1, m - 1, False
        for j in range(m):
            d = det.update_stop(j + 1, obs[i, j], 0.0, 0.0, grid[j])
            if d is not None:
                end, kept, stopped = j, d.best_step - 1, True
                break
        assert (fast.end_eval[i], fast.kept_eval[i], fast.stopped[i]) == (end, kept, stopped)
