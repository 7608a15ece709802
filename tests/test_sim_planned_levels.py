"""Tiresias on the planned loop (evalstop.sim.planned with ``levels`` and ``yields``)
gives the checkpoint loop's result.

The planned loop gives a Tiresias run with planned stops an event at its end and at its
level crossings only, and makes a call after only checkpoints where the checkpoint loop's
call would act (an unsettled state) or a job checkpointed at that instant would yield.
Every field of the result is compared with the Python checkpoint loop
(``planned.ENABLED = False``, ``EVALSTOP_JIT=0``) on random traces made to tie, with low
thresholds (many crossings), on Philly slices and on a Philly slice repeated (copies share
every time); and the compared runs must cover crossings, yields at checkpoints, calls an
unsettled state asked for, and checkpoints found at the instant of a call. Each
comparison also runs with the compiled twin (``evalstop.sim.planned_jit``, skipped without
numba), whose arrays are compared with the Python loop's directly too.
"""

import math
from dataclasses import replace

import numpy as np
import pytest
from conftest import random_workload
from tie_traces import FIELDS, assert_same_fields, planned_loop_runs, tie_cases

from evalstop.schedulers import EvalStop, Tiresias, build
from evalstop.sim import levels, planned, yields
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, trace_workload


@pytest.fixture(params=["python", "twin"])
def seen(request, monkeypatch):
    """Counts of what the planned loop did: runs taken, crossings, checkpoints found at
    a call's instant, yields made there, calls an unsettled state asked for; or, with the
    compiled twin (``evalstop.sim.planned_jit``, skipped without numba), its runs only."""
    count = planned_loop_runs(request, monkeypatch)
    if count.twin:
        return count

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
        at_.heap = at.heap
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


def covered(seen, *what):
    """The Python loop's runs did each of ``what`` (the twin's are not counted)."""
    for step in what if not seen.twin else ():
        assert seen[step] > 0, step


def same_as_checkpoint_loop(monkeypatch, w, n_gpus, make, overhead=120.0):
    res = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    with monkeypatch.context() as m:
        m.setattr(planned, "ENABLED", False)
        m.setenv("EVALSTOP_JIT", "0")
        ref = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    assert_same_fields(res, ref)
    assert (res.n_events, res.n_eval_events) == (ref.n_events, ref.n_eval_events)
    return res


def test_the_loop_is_taken_for_plain_tiresias_only():
    w = random_workload(0, 10)
    assert planned.rule(build("tiresias"), w) == "levels"
    assert planned.rule(build("tiresias", "default"), w) == "levels"
    assert planned.rule(build("srtf-est"), w) == "remaining"
    assert planned.rule(build("loss-aware"), w) == "loss"
    assert planned.rule(build("fifo"), w) is None

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
    covered(seen, "crossing", "yield", "checkpointed at a call", "unsettled")


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
    assert seen["run"] == 180
    covered(seen, "crossing", "yield")


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
    covered(seen, "crossing", "yield", "checkpointed at a call", "unsettled")


def twin_and_python(monkeypatch, w, n_gpus, make, **kw):
    """One run by the compiled twin (which must run) and by the Python loop."""
    from evalstop.sim import planned_jit

    calls = []
    with monkeypatch.context() as m:
        kernel = planned_jit.run_kernel
        m.setattr(planned_jit, "run_kernel", lambda *a: calls.append(a[6]) or kernel(*a))
        m.setenv("EVALSTOP_JIT", "1")
        tw = simulate(w, n_gpus, make(), **kw)
        m.setenv("EVALSTOP_JIT", "0")
        py = simulate(w, n_gpus, make(), **kw)
    assert calls == [True]  # the twin ran once, by the levels rule
    return py, tw


@pytest.mark.parametrize("record_timeline", [True, False])
def test_the_twin_gives_the_python_loops_arrays(monkeypatch, record_timeline):
    pytest.importorskip("numba")
    yielded = 0
    for seed in range(80):
        rng = np.random.default_rng(7000 + seed)
        w = random_workload(seed, int(rng.integers(2, 90)))
        th = sorted(set(rng.choice([10.0, 50.0, 200.0, 400.0], int(rng.integers(0, 4)))))
        depth = [1, 2, 2.5, 4, 32, math.inf][int(rng.integers(6))]  # (a count compared)
        n_gpus = max(int(w.gpus.max()), int(rng.integers(1, 10)))
        overhead = float(rng.choice([0.0, 30.0, 120.0]))
        for rule in (None, "evalstop:k=2", "default"):
            def make(rule=rule):
                base = Tiresias(depth=depth, thresholds_gpu_s=th)
                return EvalStop(base, rule) if rule else base
            py, tw = twin_and_python(monkeypatch, w, n_gpus, make,
                                     restart_overhead_s=overhead,
                                     record_timeline=record_timeline)
            for f in FIELDS:
                a, b = getattr(py, f), getattr(tw, f)
                assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), f
            yielded += int(py.n_preemptions.sum())
    assert yielded > 0


def test_a_twin_that_gives_up_leaves_the_run_to_the_python_loop(monkeypatch):
    # (More evals at one instant than its rows hold. That it raises as the Python loop
    # does, under this key rule too: test_sim_srtf_loop.)
    pytest.importorskip("numba")
    from evalstop.sim import planned_jit

    w = random_workload(3, 40)
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    py = simulate(w, 8, build("tiresias"))
    kernel = planned_jit.run_kernel

    def gives_up(*args):  # its arrays are not to be read
        out = kernel(*args)
        return tuple(np.zeros_like(a) for a in out[:6]) + (-2,)

    monkeypatch.setattr(planned_jit, "run_kernel", gives_up)
    monkeypatch.setenv("EVALSTOP_JIT", "1")
    gave_up = simulate(w, 8, build("tiresias"))
    for f in FIELDS:
        assert np.array_equal(getattr(py, f), getattr(gave_up, f), equal_nan=True), f
