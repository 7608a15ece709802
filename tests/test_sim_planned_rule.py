"""Which schedulers the planned loop takes (``planned.rule``): a plain base, alone or under
the plain overlay, with the flags its rule is written for; a subclass, a patched method,
a flag set otherwise on the instance or an overlay subclass keeps the checkpoint loop. And
which twin ``simulate`` asks the switch for (``engine.twin_use``)."""

import numpy as np
import pytest
from tie_traces import tie_workload

from evalstop.schedulers import EvalStop, LossAware, SJFEst, Tiresias, build, make_scheduler
from evalstop.sim import engine, planned
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


@pytest.mark.parametrize("name,cls,rule,asked", [
    ("sjf-est", SJFEst, "fixed", True),  # asked at evals: its rule is written without it
    ("loss-aware", LossAware, "loss", False),  # not asked: it could not yield there
])
def test_the_loop_is_taken_for_the_plain_base_only(name, cls, rule, asked):
    w = trace_workload(load_philly(limit=50), np.random.default_rng(1))
    assert planned.rule(build(name), w) == planned.rule(build(name, "default"), w) == rule

    class Mine(cls):
        pass

    spied = build(name, "evalstop:k=2")
    spied.base._fill = spied.base._fill  # a patched method (a test's spy)
    keyed = build(name)
    keyed.key = keyed.key
    preempting = cls()
    preempting.preempt_on_arrival = True  # set on the instance: the head would preempt
    flagged = build(name)
    flagged.reschedule_on_eval = asked

    class Overlay(EvalStop):
        pass

    for sched in (Mine(), spied, keyed, preempting, flagged,
                  Overlay(make_scheduler(name), "evalstop:k=2")):
        assert planned.rule(sched, w) is None


@pytest.mark.parametrize("make,rule", [
    (lambda: build("fifo", "evalstop:k=2"), None),
    (lambda: build("sjf-est"), "fixed"),
    (lambda: build("sjf-est", "default"), "fixed"),
    (lambda: build("srtf-est", "evalstop:k=2"), "remaining"),
    (lambda: build("loss-aware", "default"), "loss"),
    (lambda: build("tiresias"), "levels"),
    (lambda: Tiresias(depth=1), "levels"),
])
def test_twin_use_names_what_simulate_asks_for(monkeypatch, make, rule):
    """``engine.twin_use`` (what a task declares to ``jit.expect``) is the twin that
    ``simulate`` asks the switch for, with the same work, or None when it asks for none."""
    from evalstop import jit

    w = tie_workload(np.random.default_rng(3), 20, 4)
    asked = []
    twin = jit.twin
    monkeypatch.setattr(jit, "twin", lambda *a: asked.append(a) or twin(*a))
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    got = engine.twin_use(w, make())
    simulate(w, 6, make())
    asked = [(*a, 0)[:3] for a in asked if a[0] in planned.TWINS.values()]
    assert asked == ([] if rule is None else [got])
    if rule is not None:
        assert got == (planned.TWINS[rule], w.n_jobs, 0)
    assert engine.twin_use(w, make(), plan_stops=False) is None


def test_twin_use_is_none_without_a_plan_or_for_a_subclass():
    w = tie_workload(np.random.default_rng(3), 20, 4)
    fleet = build("loss-aware", "default")
    fleet.per_job = False  # as a rule that pools jobs declares: no plan

    class Mine(SJFEst):
        pass

    spied = build("tiresias")
    spied.schedule = spied.schedule
    for sched in (fleet, Mine(), spied):
        assert engine.twin_use(w, sched) is None
