"""EvalStop on Ray Tune: the scheduler overlay (over FIFO and ASHA) and the stopper, on a
local Ray started by the test on loopback (2 CPUs). Never runs ``ray stop``.

Trials run ``scripted_trainable``: "peak" curves rise to iteration 3 and decline at 4 and
5 (``evalstop:k=2`` stops them at iteration 5, best iteration 3); "up" curves rise to the
end (10 iterations, never stopped).
"""

from __future__ import annotations

import json
import os
import types

import numpy as np
import pytest

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

ray = pytest.importorskip("ray")
tune = pytest.importorskip("ray.tune")

from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

from evalstop.detectors import DEFAULT_SPEC
from evalstop.integrations.ray_tune import (
    EvalStopScheduler,
    EvalStopStopper,
    scripted_trainable,
)

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6, 0.7, 0.8, 0.9, 1.0]
UP = [0.1 * i for i in range(1, 11)]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=80 * 1024 * 1024,
        log_to_driver=False,
    )
    yield
    ray.shutdown()


def _fit(tmp_path, scripts, *, scheduler=None, stop=None, name="exp"):
    tuner = tune.Tuner(
        scripted_trainable,
        param_space={"script": tune.grid_search(scripts)},
        tune_config=tune.TuneConfig(
            metric="score", mode="max", scheduler=scheduler, max_concurrent_trials=2,
            reuse_actors=True,
        ),
        run_config=tune.RunConfig(
            storage_path=str(tmp_path), name=name, verbose=0, stop=stop,
            checkpoint_config=tune.CheckpointConfig(num_to_keep=None),
        ),
    )
    results = tuner.fit()
    assert not results.errors
    # Grid order is trial order; key each result by the curve it ran.
    return sorted(results, key=lambda r: r.metrics["trial_id"])


def _iteration_of(ckpt):
    with ckpt.as_directory() as d, open(os.path.join(d, "state.json")) as fh:
        return json.load(fh)["iteration"]


def test_fifo_overlay_stops_decliners_and_frees_slots(local_ray, tmp_path):
    # Trial 1 is slow and healthy: trial 2 can only start early in the slot trial 0 freed.
    # (8 s for trial 1: with 4 s, a loaded machine once took that long to start trial 2.)
    scripts = [
        {"curve": PEAK, "sleep": 0.1},
        {"curve": UP, "sleep": 0.8},
        {"curve": PEAK, "sleep": 0.1},
        {"curve": PEAK, "sleep": 0.1},
        {"curve": UP, "sleep": 0.05},
        {"curve": PEAK, "sleep": 0.1},
        {"curve": UP, "sleep": 0.05},
        {"curve": PEAK, "sleep": 0.1},
    ]
    sched = EvalStopScheduler(FIFOScheduler(), detector="evalstop:k=2")
    results = _fit(tmp_path, scripts, scheduler=sched)
    decisions = sched.decisions()
    assert len(results) == 8
    for script, r in zip(scripts, results):
        d = decisions[r.metrics["trial_id"]]
        ckpt = sched.best_checkpoint(r)
        if script["curve"] is PEAK:
            assert r.metrics["training_iteration"] == 5
            assert (d["stopped"], d["stop_step"], d["best_step"]) == (True, 5, 3)
            assert _iteration_of(ckpt) == 3
        else:
            assert r.metrics["training_iteration"] == 10
            assert (d["stopped"], d["best_step"]) == (False, 10)
            assert _iteration_of(ckpt) == 10

    spans = [(r.metrics["wall_start"], r.metrics["wall_now"]) for r in results]
    # Freed slot: trial 2 starts after trial 0 stopped, while trial 1 still runs.
    assert spans[0][1] <= spans[2][0] < spans[1][1]
    # Never more than max_concurrent_trials at once.
    for t, _ in spans:
        assert sum(1 for a, b in spans if a <= t < b) <= 2


def test_stop_reason_in_trial_result_and_console(local_ray, tmp_path, caplog):
    sched = EvalStopScheduler(FIFOScheduler(), detector="evalstop:k=2")
    with caplog.at_level("WARNING", logger="evalstop.integrations.ray_tune"):
        peak, up = _fit(tmp_path, [{"curve": PEAK}, {"curve": UP}], scheduler=sched)
    reason = sched.decisions()[peak.metrics["trial_id"]]["reason"]
    assert reason  # the rule's own words
    assert peak.metrics["evalstop_stopped"] is True
    assert peak.metrics["evalstop_reason"] == reason
    assert (peak.metrics["evalstop_stop_step"], peak.metrics["evalstop_best_step"]) == (5, 3)
    assert not any(k.startswith("evalstop_") for k in up.metrics)
    said = [r.getMessage() for r in caplog.records if "stopping trial" in r.getMessage()]
    assert len(said) == 1 and peak.metrics["trial_id"] in said[0] and reason in said[0]
    assert f"{peak.metrics['trial_id']} at 5 (best 3): {reason}" in sched.debug_string()


def test_asha_overlay_forwards_to_base(local_ray, tmp_path):
    asha = ASHAScheduler(time_attr="training_iteration", max_t=10, grace_period=8,
                         reduction_factor=4)
    sched = EvalStopScheduler(asha, detector="evalstop:k=2")
    scripts = [{"curve": c, "sleep": 0.02} for c in (PEAK, UP, PEAK, UP)]
    results = _fit(tmp_path, scripts, scheduler=sched, name="asha")
    assert asha.metric == "score"  # search properties reached the base
    # ASHA files each added trial under a bracket and drops it on completion: an empty
    # table means on_trial_add, on_trial_result and on_trial_complete all reached it.
    assert asha._trial_info == {}
    assert asha._num_stopped >= 2  # the healthy trials, stopped by ASHA itself at max_t
    assert "AsyncHyperBand" in sched.debug_string()
    decisions = sched.decisions()
    for script, r in zip(scripts, results):
        d = decisions[r.metrics["trial_id"]]
        if script["curve"] is PEAK:
            assert (r.metrics["training_iteration"], d["stop_step"], d["best_step"]) == (5, 5, 3)
        else:
            # EvalStop does not stop healthy trials; ASHA may cut one at its rung (8).
            assert not d["stopped"] and r.metrics["training_iteration"] in (8, 10)


def test_stopper_gives_the_same_stops(local_ray, tmp_path):
    stopper = EvalStopStopper("score", mode="max", detector="evalstop:k=2")
    scripts = [{"curve": c, "sleep": 0.02} for c in (PEAK, UP, PEAK, UP)]
    results = _fit(tmp_path, scripts, stop=stopper, name="stopper")
    for script, r in zip(scripts, results):
        expected = 5 if script["curve"] is PEAK else 10
        assert r.metrics["training_iteration"] == expected
        assert _iteration_of(stopper.best_checkpoint(r)) == (3 if expected == 5 else 10)


def _feed(sched, trial_id, scores, first=1):
    out = []
    trial = types.SimpleNamespace(trial_id=trial_id)
    for i, s in enumerate(scores, first):
        out.append(sched.on_trial_result(None, trial, {"training_iteration": i, "score": s}))
    return out


def test_save_restore_keeps_streaks(tmp_path):
    sched = EvalStopScheduler(metric="score", mode="max", detector="evalstop:k=2")
    sched.set_search_properties(None, None)
    assert _feed(sched, "a", [0.1, 0.5, 0.4]) == [TrialScheduler.CONTINUE] * 3
    path = str(tmp_path / "sched.json")
    sched.save(path)
    again = EvalStopScheduler(metric="score", mode="max", detector="evalstop:k=2")
    again.restore(path)
    assert _feed(again, "a", [0.3], first=4) == [TrialScheduler.STOP]
    assert again.decisions()["a"] == {
        "stopped": True, "stop_step": 4, "best_step": 2, "best_score": 0.5,
        "reason": "2 consecutive declines",
    }


def test_metric_and_mode_are_required():
    with pytest.raises(ValueError, match="needs a metric and a mode"):
        EvalStopScheduler().set_search_properties(None, None)
    sched = EvalStopScheduler(metric="score")
    assert sched.set_search_properties(None, "min") is True


def test_min_mode_and_missing_metric():
    # strict=False: a result without the metric is skipped (strict raises, see
    # test_integration_ray_resume.py).
    sched = EvalStopScheduler(metric="loss", mode="min", detector="evalstop:k=1", strict=False)
    trial = types.SimpleNamespace(trial_id="t")
    assert sched.on_trial_result(None, trial, {"training_iteration": 1}) == "CONTINUE"
    assert _feed_loss(sched, [1.0, 0.5, 0.7]) == ["CONTINUE", "CONTINUE", "STOP"]


def _feed_loss(sched, losses):
    trial = types.SimpleNamespace(trial_id="t")
    return [sched.on_trial_result(None, trial, {"training_iteration": i + 2, "loss": v})
            for i, v in enumerate(losses)]


def test_max_t_passes_progress():
    # stopat:p=0.5 reads progress only: with max_t=10 it stops at iteration 5; without
    # max_t it could never run, and says so when built.
    sched = EvalStopScheduler(metric="score", mode="max", detector="stopat:p=0.5", max_t=10)
    assert _feed(sched, "t", UP).index(TrialScheduler.STOP) + 1 == 5
    stopper = EvalStopStopper("score", detector="stopat:p=0.5", max_t=10)
    assert [stopper("t", {"training_iteration": i, "score": s})
            for i, s in enumerate(UP, 1)].index(True) + 1 == 5
    for make in (lambda: EvalStopScheduler(detector="stopat:p=0.5"),
                 lambda: EvalStopStopper("score", detector="stopat:p=0.5")):
        with pytest.raises(ValueError, match="needs the job's progress .*: pass max_t"):
            make()
    # Any time_attr, in its own units; past max_t the trial is at its end, not beyond.
    timed = EvalStopStopper("score", detector="stopat:p=0.5", time_attr="time_total_s",
                            max_t=2.0)
    assert [timed("t", {"time_total_s": t, "score": 0.5}) for t in (0.4, 0.9, 1.0)] \
        == [False, False, True]
    trials = timed._trials
    assert [trials.progress(t) for t in (0, -1.0, 0.5, 2.0, 7.5)] == [None, None, 0.25, 1.0, 1.0]


def _wandering_rise(n):
    # A long run that rises slowly under an AR(1) level wander (phi 0.95): the default
    # rule takes its early wobble for a fall (seed chosen so that it does).
    rng = np.random.default_rng(3)
    level, wander = 0.3 + 0.4 * (1 - np.exp(-np.arange(n) / 80)), 0.0
    out = []
    for x in level:
        wander = 0.95 * wander + rng.normal(0, 0.01)
        out.append(x + wander)
    return list(np.array(out) + rng.normal(0, 0.02, n))


def test_max_t_feeds_plong():
    # plong=50 spares a run that progress says will be long, and only then: without
    # max_t, or with a max_t that makes the run short, the stop at iteration 5 stands.
    spec = f"{DEFAULT_SPEC},plong=50"
    curve = _wandering_rise(200)[:30]
    first_stop = {}
    for max_t in (None, 20, 200):
        sched = EvalStopScheduler(metric="score", mode="max", detector=spec, max_t=max_t)
        out = _feed(sched, "t", curve)
        first_stop[max_t] = out.index("STOP") + 1 if "STOP" in out else None
    assert first_stop == {None: 5, 20: 5, 200: None}


def test_max_t_survives_from_experiment(tmp_path):
    storage = types.SimpleNamespace(experiment_driver_staging_path=str(tmp_path))
    sched = EvalStopScheduler(metric="score", mode="max", detector="stopat:p=0.5", max_t=8)
    trial = types.SimpleNamespace(trial_id="t", storage=storage)
    sched.on_trial_add(None, trial)
    _feed(sched, "t", UP[:2])
    again = EvalStopScheduler.from_experiment(str(tmp_path))
    assert again._trials.max_t == 8.0
    assert _feed(again, "t", UP[2:4], first=3) == ["CONTINUE", "STOP"]


@pytest.mark.parametrize("max_t", [0, -5, float("nan"), float("inf"), "100", True])
def test_bad_max_t(max_t):
    for make in (lambda: EvalStopScheduler(max_t=max_t),
                 lambda: EvalStopStopper("score", max_t=max_t)):
        with pytest.raises(ValueError, match="max_t must be a positive number"):
            make()


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: EvalStopScheduler(mode="up"), "mode must be 'max' or 'min'"),
        (lambda: EvalStopScheduler(detector="nope"), "unknown detector 'nope'"),
        (lambda: EvalStopScheduler(base_scheduler="fifo"), "base_scheduler must be"),
        (lambda: EvalStopStopper(""), "metric must be"),
        (lambda: EvalStopStopper("score", mode="up"), "mode must be 'max' or 'min'"),
    ],
)
def test_bad_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()
