"""A priority base keeps the wait-queue entries a fill skipped in a sorted front, so the
next fill reads them without popping and pushing back; the result is the one of a queue
that is a heap alone (each field, every base, alone and under the overlay, on random
traces made to tie and on a slice of Philly, on the Python checkpoint loop), and the
front stays what it stands for: sorted, at most ``depth`` long, before the heap."""

import heapq

import numpy as np
import pytest
from tie_traces import assert_same_fields, python_loop_calls, tie_cases

from evalstop.schedulers import build
from evalstop.schedulers.priority import PriorityScheduler
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


def _heap_enqueue(self, entry):
    heapq.heappush(self._wait, entry)
    self._qver += 1


def _heap_fill(self, now, free_gpus, start):
    """The fill of a heap alone: every entry looked at is popped, the skipped pushed back."""
    if free_gpus <= 0 or not self._wait:
        self._fill_noop = (self._qver, free_gpus)
        return free_gpus
    skipped, looked = [], 0
    while self._wait and looked < self.depth and free_gpus > 0:
        entry = heapq.heappop(self._wait)
        looked += 1
        if entry[2].gpus <= free_gpus:
            free_gpus -= entry[2].gpus
            self._started(entry[2], entry[0], start)
        else:
            skipped.append(entry)
    if len(skipped) == looked or not self._wait or free_gpus <= 0:
        self._fill_noop = (self._qver, free_gpus)
    for entry in skipped:
        heapq.heappush(self._wait, entry)
    return free_gpus


def _front_length(s, out):
    front, wait = s._front, s._wait
    assert front == sorted(front) and len(front) <= s.depth
    assert not (front and wait) or front[-1] < min(wait)
    return len(front)


@pytest.fixture
def fronts(monkeypatch):
    """The front's length after each fill so far (checked), on the Python checkpoint loop."""
    return python_loop_calls(monkeypatch, PriorityScheduler, "_fill", _front_length)


def same(monkeypatch, w, n_gpus, make, **kw):
    with monkeypatch.context() as m:
        m.setattr(PriorityScheduler, "_enqueue", _heap_enqueue)
        m.setattr(PriorityScheduler, "_fill", _heap_fill)
        ref = simulate(w, n_gpus, make(), **kw)
    res = simulate(w, n_gpus, make(), **kw)
    assert_same_fields(res, ref)
    return res


@pytest.mark.parametrize("base", ["sjf-est", "srtf-est", "loss-aware", "tiresias"])
def test_random_traces_made_to_tie_match(monkeypatch, fronts, base):
    for seed, w, n_gpus, overhead, make in tie_cases(base):
        same(monkeypatch, w, n_gpus, make, restart_overhead_s=overhead,
             plan_stops=bool(seed % 3), record_timeline=bool(seed % 5))
    assert sum(1 for n in fronts if n) > 100  # fills left skipped entries in the front


def test_a_slice_of_philly_matches(monkeypatch, fronts):
    w = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    n_gpus = max(64, int(w.gpus.max()))
    for base in ("sjf-est", "srtf-est", "loss-aware", "tiresias"):
        for rule in (None, "evalstop:k=2"):
            same(monkeypatch, w, n_gpus, lambda b=base, r=rule: build(b, r))
    assert max(fronts) == 32  # the default depth, reached
