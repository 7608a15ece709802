"""Tiresias on the planned loop (evalstop.sim.planned with ``levels`` and ``yields``)
gives the checkpoint loop's result.

The planned loop gives a Tiresias run with planned stops an event at its end and at its
level crossings only, and makes a call after only checkpoints where the checkpoint loop's
call would act (an unsettled state) or a job checkpointed at that instant would yield.
Every field of the result is compared with the Python checkpoint loop
(``planned.ENABLED = False``, ``EVALSTOP_JIT=0``) on random traces made to tie, with low
thresholds (many crossings), on Philly slices and on a Philly slice repeated (copies share
every time); and the compared runs must cover crossings, yields at checkpoints, calls an
unsettled state asked for, and checkpoints found at the instant of a call.
"""

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_workload
from tie_traces import assert_same_fields, tie_cases

from evalstop.schedulers import EvalStop, Tiresias, build
from evalstop.sim import levels, planned, yields
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


@pytest.fixture
def seen(monkeypatch):
    """Counts of what the planned loop did: runs taken, crossings, checkpoints found at
    a call's instant, yields made there, calls an unsettled state asked for."""
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    count = Counter()

    def wrap(factory, note):
        def made(*args):
            step = factory(*args)
            return lambda *a: note(step(*a), a)
        return made

    run = planned.run
    monkeypatch.setattr(planned, "run", lambda *a: count.update(["run"]) or run(*a))
    monkeypatch.setattr(levels, "taker", wrap(levels.taker, lambda out, a: (
        count.update(["crossing"] * out) or out)))

    def index(jobs, round_of):
        track, at = yields_index(jobs, round_of)

        def at_(t, call):
            out = at(t, call)
            count["checkpointed at a call"] += len(out[0])
            return out
        return track, at_

    yields_index = yields.eval_index
    monkeypatch.setattr(yields, "eval_index", index)

    def yielder(*args):
        step = yields_yielder(*args)

        def counted(free, t, call, cid, preempted, wseq):
            before = len(preempted)
            out = step(free, t, call, cid, preempted, wseq)
            count["yield"] += len(preempted) - before
            return out
        return counted

    yields_yielder = yields.yielder
    monkeypatch.setattr(yields, "yielder", yielder)
    monkeypatch.setattr(yields, "unsettled_test", wrap(yields.unsettled_test, lambda out, a: (
        count.update(["unsettled"] * bool(out)) or out)))
    return count


def same_as_checkpoint_loop(monkeypatch, w, n_gpus, make, overhead=120.0):
    res = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    with monkeypatch.context() as m:
        m.setattr(planned, "ENABLED", False)
        ref = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    assert_same_fields(res, ref)
    assert (res.n_events, res.n_eval_events) == (ref.n_events, ref.n_eval_events)
    return res


def test_the_loop_is_taken_for_plain_tiresias_only():
    w = random_workload(0, 10)
    assert planned.rule(build("tiresias"), w) == "levels"
    assert planned.rule(build("tiresias", "default"), w) == "levels"
    assert planned.rule(build("srtf-est"), w) == "remaining"
    assert planned.rule(build("loss-aware"), w) is None

    class Mine(Tiresias):
        pass

    assert planned.rule(Mine(), w) is None
    spied = build("tiresias")
    spied.key = spied.key  # a patched method keeps the checkpoint loop
    assert planned.rule(spied, w) is None
    no_yields = build("tiresias")
    no_yields.preempt_at_checkpoint = False
    assert planned.rule(no_yields, w) is None
    late = random_workload(0, 3)
    late.arrival_s[-1] = 2.0**33  # beyond the keys' span: the checkpoint loop refuses it
    assert planned.rule(build("tiresias"), late) is None
    with pytest.raises(ValueError, match="arrival_s"):
        simulate(late, 8, build("tiresias", "evalstop:k=2"))


def test_traces_made_to_tie_match(monkeypatch, seen):
    n = 0
    for _, w, n_gpus, overhead, make in tie_cases("tiresias", n_seeds=40):
        same_as_checkpoint_loop(monkeypatch, w, n_gpus, make, overhead)
        n += 1
    assert seen["run"] >= n // 2  # (rules that pool jobs keep the checkpoint loop)
    for what in ("crossing", "yield", "checkpointed at a call", "unsettled"):
        assert seen[what] > 0, what


@pytest.mark.parametrize("overhead", [0.0, 30.0, 120.0])
def test_random_traces_with_low_thresholds_match(monkeypatch, seen, overhead):
    for seed in range(60):
        rng = np.random.default_rng(seed)
        w = random_workload(seed, int(rng.integers(2, 60)))
        th = sorted(set(rng.choice([20.0, 50.0, 100.0, 200.0, 400.0], 2).tolist()))
        n_gpus = int(rng.integers(4, 10))
        for rule in (None, "evalstop:k=2", "default"):
            same_as_checkpoint_loop(
                monkeypatch, w, n_gpus,
                lambda rule=rule, th=th: EvalStop(Tiresias(thresholds_gpu_s=th), rule)
                if rule else Tiresias(thresholds_gpu_s=th), overhead)
    assert seen["run"] == 180 and seen["crossing"] > 0 and seen["yield"] > 0


def test_philly_slices_match(monkeypatch, seen):
    table = load_philly(limit=3000)
    w = trace_workload(table, np.random.default_rng(1))
    for rule in (None, "evalstop:k=2", "default"):
        res = same_as_checkpoint_loop(monkeypatch, w, 96,
                                      lambda rule=rule: build("tiresias", rule))
        assert res.n_preemptions.sum() > 0
    # Copies of the slice at the same times: every eval of a job ties with its copy's.
    part = table.take(np.tile(np.arange(800), 3))
    part = replace(part, job_id=[f"{j}#{r}" for r in range(3) for j in part.job_id[:800]])
    copies = trace_workload(part, np.random.default_rng(2))
    same_as_checkpoint_loop(monkeypatch, copies, 96,
                            lambda: build("tiresias", "evalstop:k=2"))
    same_as_checkpoint_loop(monkeypatch, w, 96, lambda: Tiresias(
        depth=4, thresholds_gpu_s=(600.0, 7200.0)))
    for what in ("crossing", "yield", "checkpointed at a call", "unsettled"):
        assert seen[what] > 0, what
