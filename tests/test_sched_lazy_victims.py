"""A preempting priority base pushes a running job into its victims' heap only when the
job's key rises above its entry there; the result is the one of pushing at every key
change (each field, Tiresias and SRTF-Est, alone and under the overlay, on random traces
made to tie and on a slice of Philly, on the Python checkpoint loop)."""

import numpy as np
import pytest
from tie_traces import assert_same_fields, python_loop_calls, tie_cases

from evalstop.schedulers import build
from evalstop.schedulers.priority import PriorityScheduler
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


def _eager(self, job, key):
    """An entry for every key set: the heap the lazy one stands for."""
    version = next(self._seq)
    old = self._running.get(job.index)
    if old is None or old[0] is None or key > old[0]:
        self._key_rose = True
    self._running[job.index] = (key, version)
    if self.preempt_on_arrival:
        self._push_worst(job, key, version)


@pytest.fixture
def pushes(monkeypatch):
    """The pushes into the victims' heap so far, on the Python checkpoint loop."""
    return python_loop_calls(monkeypatch, PriorityScheduler, "_push_worst", lambda self, out: 1)


def same(monkeypatch, pushes, w, n_gpus, make, **kw):
    """Simulate eagerly, then lazily: the result, and each run's pushes."""
    n0 = len(pushes)
    with monkeypatch.context() as m:
        m.setattr(PriorityScheduler, "_set_running_key", _eager)
        ref = simulate(w, n_gpus, make(), **kw)
    n1 = len(pushes)
    res = simulate(w, n_gpus, make(), **kw)
    assert_same_fields(res, ref)
    return ref, n1 - n0, len(pushes) - n1


@pytest.mark.parametrize("base", ["tiresias", "srtf-est"])
def test_random_traces_made_to_tie_match(monkeypatch, pushes, base):
    preempted = eager = lazy = 0
    for seed, w, n_gpus, overhead, make in tie_cases(base):
        res, e, z = same(monkeypatch, pushes, w, n_gpus, make, restart_overhead_s=overhead,
                         plan_stops=bool(seed % 3), record_timeline=bool(seed % 5))
        preempted += int(res.n_preemptions.sum())
        eager, lazy = eager + e, lazy + z
    assert preempted > 50
    assert lazy < 0.8 * eager  # entries were kept, and refreshed at the top, often


def test_a_slice_of_philly_matches(monkeypatch, pushes):
    w = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    n_gpus = max(96, int(w.gpus.max()))
    for base in ("tiresias", "srtf-est"):
        for rule in (None, "evalstop:k=2", "default"):
            res, eager, lazy = same(monkeypatch, pushes, w, n_gpus,
                                    lambda rule=rule: build(base, rule))
            assert res.n_preemptions.sum() > 0 and lazy < 0.5 * eager
