"""benchmarks/index_census.py: it watches the planned loop without changing the run, puts
back what it wraps, and its counts hang together."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import load_benchmark
from tie_traces import assert_same_fields, tie_workload

from evalstop.schedulers import build
from evalstop.sim import yields
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload

ic = load_benchmark("index_census")


def _philly(n):
    return trace_workload(load_philly().take(np.arange(n)), np.random.default_rng(0))


@pytest.mark.parametrize("sched", ["tiresias", "loss-aware"])
@pytest.mark.parametrize("rule", ["evalstop:k=2", "default"])
def test_the_census_changes_nothing_and_hangs_together(monkeypatch, sched, rule):
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    cases = [("philly", _philly(1500), 64)] + [
        (f"ties{seed}", tie_workload(np.random.default_rng(seed), 30, 5), 4)
        for seed in range(4)]
    wrapped = yields.eval_index, yields.yielder
    for name, w, n_gpus in cases:
        count, res = ic.census(w, n_gpus, sched, rule, restart_overhead_s=30.0)
        assert (yields.eval_index, yields.yielder) == wrapped, name
        assert os.environ["EVALSTOP_JIT"] == "0"
        assert_same_fields(res, simulate(w, n_gpus, build(sched, rule),
                                         restart_overhead_s=30.0))
        assert count["stale"] <= count["passed"], (name, count)
        assert count["mean live"] <= count["mean size"], (name, count)
        assert count["hits"] <= res.n_eval_events, (name, count)
        assert count["most hits"] <= count["hits"], (name, count)
        assert (count["most hits"] > 0) == (count["hits"] > 0), (name, count)
        if name == "philly":
            assert count["yield tests"] > 0 and count["queries"] > 0, count
            assert count["mean live"] > 0


def test_the_twin_switch_is_put_back(monkeypatch):
    monkeypatch.delenv("EVALSTOP_JIT", raising=False)
    ic.census(_philly(50), 64, "tiresias", "evalstop:k=2")
    assert "EVALSTOP_JIT" not in os.environ


@pytest.mark.parametrize("sched", ["srtf-est", "sjf-est", "fifo"])
def test_a_run_without_an_eval_index_is_refused(sched):
    with pytest.raises(SystemExit, match="not a run of the planned loop"):
        ic.census(_philly(10), 64, sched, "evalstop:k=2")


@pytest.mark.parametrize("sched, rule", [("foo", "evalstop:k=2"), ("tiresias", "nosuch")])
def test_unknown_names_are_one_line_errors(sched, rule):
    with pytest.raises(SystemExit, match="unknown"):
        ic.census(_philly(10), 64, sched, rule)


def test_scale_repeats_the_trace_on_as_many_gpus_times():
    ap = ic.argparse.ArgumentParser()
    ic.add_census_args(ap, ic.CONFIGS)
    args = ap.parse_args(["--limit", "40", "--scale", "3", "--gpus", "16"])
    w = ic.census_workload(ap, args)
    assert w.n_jobs == 120 and args.gpus == 48
    once = _philly(40).arrival_s
    assert np.array_equal(np.sort(w.arrival_s), np.repeat(np.sort(once), 3))


def test_scale_below_one_is_a_one_line_error(capsys):
    ap = ic.argparse.ArgumentParser(prog="index_census")
    ic.add_census_args(ap, ic.CONFIGS)
    args = ap.parse_args(["--scale", "0"])
    with pytest.raises(SystemExit):
        ic.census_workload(ap, args)
    assert "--scale must be >= 1" in capsys.readouterr().err
