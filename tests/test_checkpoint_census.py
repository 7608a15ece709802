"""benchmarks/checkpoint_census.py: it watches the run without changing it, and its counts
add up (every eval of a running job counted once; yields are checkpoints that could
yield)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_benchmark
from tie_traces import assert_same_fields, tie_workload

from evalstop.schedulers import build
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload

cc = load_benchmark("checkpoint_census")


def _cases():
    table = load_philly()
    philly = trace_workload(table.take(np.arange(1500)), np.random.default_rng(0))
    yield "philly", philly, 64
    for seed in range(6):
        rng = np.random.default_rng(seed)
        yield f"ties{seed}", tie_workload(rng, 30, 5), 4


@pytest.mark.parametrize("sched", ["tiresias", "loss-aware"])
@pytest.mark.parametrize("rule", ["evalstop:k=2", "default"])
def test_the_census_changes_nothing_and_adds_up(monkeypatch, sched, rule):
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    for name, w, n_gpus in _cases():
        count, res = cc.census(w, n_gpus, sched, rule, restart_overhead_s=30.0)
        ref = simulate(w, n_gpus, build(sched, rule), restart_overhead_s=30.0)
        assert_same_fields(res, ref)
        assert count["checkpoints"] == ref.n_eval_events, name
        assert count["yielded"] <= count["could yield"] <= count["above head"] \
            <= count["checkpoints"], (name, count)
        assert count["key changed"] <= count["checkpoints"]
        assert count["at an arrival or end"] <= count["checkpoints"]
        if sched == "loss-aware":  # it preempts only at checkpoints
            assert count["yielded"] == int(ref.n_preemptions.sum()), name


def _tiny():
    return trace_workload(load_philly().take(np.arange(10)), np.random.default_rng(0))


def test_a_base_that_never_yields_at_checkpoints_is_refused():
    with pytest.raises(SystemExit, match="srtf-est"):
        cc.census(_tiny(), 64, "srtf-est", None)


@pytest.mark.parametrize("sched, rule", [("foo", "evalstop:k=2"), ("tiresias", "nosuch")])
def test_unknown_names_are_one_line_errors(sched, rule):
    with pytest.raises(SystemExit, match="unknown"):
        cc.census(_tiny(), 64, sched, rule)
