"""Which schedulers the planned loop takes (``planned.rule``): a plain base, alone or under
the plain overlay, with the flags its rule is written for; a subclass, a patched method,
a flag set otherwise on the instance or an overlay subclass keeps the checkpoint loop."""

import numpy as np
import pytest

from evalstop.schedulers import EvalStop, LossAware, SJFEst, build, make_scheduler
from evalstop.sim import planned
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
