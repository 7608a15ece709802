"""SJF-Est on the planned loop (evalstop.sim.planned with the ``fixed`` key rule) gives the
checkpoint loop's result.

SJF-Est never preempts and its key is the estimate, so the planned loop gives a run one
event, its end, and a call only fills. Every field of the result is compared with the
Python checkpoint loop (``engine._run`` with the same plan) on random traces made to tie
(depth 1 to unbounded, alone and under every overlay that plans), on a Philly slice and on
a trace whose queue outgrows the depth; each with the Python loop and with the compiled
twin (``evalstop.sim.planned_jit``, skipped without numba), which must have run.
"""

import numpy as np
import pytest
from tie_traces import same_as_checkpoint_loop, tie_cases

from evalstop.schedulers import SJFEst, build
from evalstop.sim import planned
from evalstop.workload import load_philly, trace_workload


@pytest.fixture(params=["python", "twin"])
def runs(request, monkeypatch):
    """The planned loop's runs (Python, or the twin's kernel calls): counted, to check
    that the comparison ran the loop it names."""
    calls = []
    if request.param == "twin":
        pytest.importorskip("numba")
        from evalstop.sim import planned_jit

        monkeypatch.setenv("EVALSTOP_JIT", "1")
        kernel = planned_jit.run_kernel
        monkeypatch.setattr(planned_jit, "run_kernel", lambda *a: calls.append(a[6]) or kernel(*a))
    else:
        monkeypatch.setenv("EVALSTOP_JIT", "0")
        loop = planned._loop
        monkeypatch.setattr(planned, "_loop", lambda *a: calls.append(2) or loop(*a))
    return calls


def same(runs, w, n_gpus, make, overhead=120.0):
    before = len(runs)
    res, _ = same_as_checkpoint_loop(w, n_gpus, make, overhead)
    assert runs[before:] == [2]  # the planned loop ran (once), by the fixed key rule
    return res


def test_random_traces_made_to_tie_match(runs):
    stopped = 0
    for _, w, n_gpus, overhead, make in tie_cases("sjf-est"):
        stopped += int(same(runs, w, n_gpus, make, overhead).stopped.sum())
    assert stopped > 50  # the comparison covers stops


def test_a_slice_of_philly_matches(runs):
    w = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    n_gpus = max(96, int(w.gpus.max()))
    for rule in (None, "evalstop:k=2", "default"):
        same(runs, w, n_gpus, lambda rule=rule: build("sjf-est", rule))
    same(runs, w, n_gpus, lambda: SJFEst(depth=1))
    # Few GPUs: a long queue, which a fill walks only ``depth`` deep.
    res = same(runs, w, int(w.gpus.max()), lambda: SJFEst(depth=3))
    assert (res.start_s > w.arrival_s).mean() > 0.5
