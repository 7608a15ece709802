"""A priority base's answer to a call after only checkpoints (``quiet_calls``) is the
full call's: every field of the result is the same with it on and off, for LossAware,
Tiresias and SRTF-Est, alone and under the overlay, on the planned and the event path,
on random traces made to tie and on a slice of Philly; and the quick answer is taken."""

import numpy as np
import pytest
from tie_traces import assert_same_fields, python_loop_calls, tie_cases

from evalstop.schedulers import build
from evalstop.schedulers.priority import PriorityScheduler
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


@pytest.fixture
def quick_answers(monkeypatch):
    """The calls answered quickly so far, and the Python checkpoint loop for every base."""
    return python_loop_calls(monkeypatch, PriorityScheduler, "_acts", lambda self, out: not out)


def same(monkeypatch, w, n_gpus, make, **kw):
    with monkeypatch.context() as m:
        m.setattr(PriorityScheduler, "quiet_calls", False)
        ref = simulate(w, n_gpus, make(), **kw)
    res = simulate(w, n_gpus, make(), **kw)
    assert_same_fields(res, ref)
    assert (res.n_events, res.n_eval_events) == (ref.n_events, ref.n_eval_events)
    return ref


@pytest.mark.parametrize("base", ["loss-aware", "tiresias", "srtf-est"])
def test_random_traces_made_to_tie_match(monkeypatch, quick_answers, base):
    preempted = 0
    for seed, w, n_gpus, overhead, make in tie_cases(base):
        res = same(monkeypatch, w, n_gpus, make, restart_overhead_s=overhead,
                   plan_stops=bool(seed % 3), record_timeline=bool(seed % 5))
        preempted += int(res.n_preemptions.sum())
    assert preempted > 50
    if base != "srtf-est":  # (it is not asked at checkpoints)
        assert sum(quick_answers) > 100 and not all(quick_answers)


def test_a_slice_of_philly_matches(monkeypatch, quick_answers):
    w = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    n_gpus = max(96, int(w.gpus.max()))
    for base in ("loss-aware", "tiresias"):
        for rule in (None, "evalstop:k=2", "default"):
            res = same(monkeypatch, w, n_gpus, lambda rule=rule: build(base, rule))
            assert res.n_preemptions.sum() > 0
    assert sum(quick_answers) > 1000
