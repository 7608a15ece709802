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
from tie_traces import assert_same_fields, tie_cases

from evalstop.schedulers import EvalStop, SJFEst, build, make_scheduler
from evalstop.sim import engine, planned
from evalstop.sim.engine import simulate
from evalstop.sim.stops import plan_for
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


def checkpoint_loop(w, n_gpus, sched, overhead):
    """``engine._run`` with the plan (``simulate`` would take the planned loop)."""
    sched.bind(n_gpus=n_gpus, restart_overhead_s=overhead)
    return engine._run(w, n_gpus, sched, overhead, True, plan_for(w, sched), 0.0)


def same(runs, w, n_gpus, make, overhead=120.0):
    before = len(runs)
    res = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    assert runs[before:] == [2]  # the planned loop ran, by the fixed key rule
    ref = checkpoint_loop(w, n_gpus, make(), overhead)
    assert_same_fields(res, ref)
    assert (res.n_events, res.n_eval_events) == (ref.n_events, ref.n_eval_events)
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


def test_the_loop_is_taken_for_plain_sjf_only():
    w = trace_workload(load_philly(limit=50), np.random.default_rng(1))
    assert planned.rule(build("sjf-est"), w) == planned.rule(build("sjf-est", "default"), w)
    assert planned.rule(build("sjf-est"), w) == "fixed"

    class Mine(SJFEst):
        pass

    spied = build("sjf-est", "evalstop:k=2")
    spied.base._fill = spied.base._fill  # a patched method (a test's spy)
    preempting = SJFEst()
    preempting.preempt_on_arrival = True  # set on the instance: it must be asked at evals
    asked = build("sjf-est")
    asked.reschedule_on_eval = True

    class Overlay(EvalStop):
        pass

    for sched in (Mine(), spied, preempting, asked,
                  Overlay(make_scheduler("sjf-est"), "evalstop:k=2")):
        assert planned.rule(sched, w) is None
