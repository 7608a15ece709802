"""The compiled checkpoint loop (evalstop.sim.priority_jit) gives the checkpoint loop's result.

Every field of the result (every start, finish, stop, kept checkpoint, preemption, the
GPU-seconds and the GPU timeline) is compared with ``engine._run``'s (``EVALSTOP_JIT=0``,
SRTF-Est's own loop off) for LossAware, Tiresias, SRTF-Est and SJF-Est, alone and under the
overlay (k-decline, the default, the oracle, job types, min mode, rows the rule's
objects plan), on random traces made to tie (equal arrivals and durations, estimates and
losses on a grid, thresholds reached within runs, restart overhead 0 and more, depth 1
to unbounded, few and many GPUs) and on a slice of Philly. LossAware reaches the twin
through ``simulate`` (``EVALSTOP_JIT=1``); SRTF-Est, Tiresias and SJF-Est, whose default is
the planned loop, through ``priority_twin.run``.
"""

import math

import numpy as np
import pytest
from conftest import make_workload
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tie_traces import bases, overlays, tie_workload

from evalstop.experiments.runner import hacking_jobs
from evalstop.schedulers import EvalStop, LossAware, SJFEst, SRTFEst, Tiresias, build
from evalstop.sim import engine, planned, priority_twin
from evalstop.sim.engine import simulate
from evalstop.sim.stops import plan_for
from evalstop.sim.view import JobView
from evalstop.workload import load_philly, trace_workload

pytest.importorskip("numba")

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "n_preemptions", "timeline_t", "timeline_used")


@pytest.fixture
def kernel_calls(monkeypatch):
    """The calls to the twin's kernel so far, a 1 for each."""
    from evalstop.sim import priority_jit

    calls = []
    kernel = priority_jit.run_kernel
    monkeypatch.setattr(priority_jit, "run_kernel", lambda *a: calls.append(1) or kernel(*a))
    return calls


def checkpoint_loop(monkeypatch, w, n_gpus, sched, *, restart_overhead_s=120.0,
                    record_timeline=True):
    """``engine._run``'s result with the plan, even for a scheduler that needs no
    checkpoints (whose ``simulate`` runs ``sim.ends``)."""
    with monkeypatch.context() as m:
        m.setenv("EVALSTOP_JIT", "0")
        m.setattr(planned, "ENABLED", False)
        if sched.needs_checkpoints:
            return simulate(w, n_gpus, sched, restart_overhead_s=restart_overhead_s,
                            record_timeline=record_timeline)
        sched.bind(n_gpus=n_gpus, restart_overhead_s=restart_overhead_s)
        return engine._run(w, n_gpus, sched, restart_overhead_s, record_timeline,
                           plan_for(w, sched), 0.0)


def twin_loop(monkeypatch, w, n_gpus, sched, *, restart_overhead_s=120.0,
              record_timeline=True):
    from evalstop.sim import priority_jit

    with monkeypatch.context() as m:
        m.setenv("EVALSTOP_JIT", "1")
        if planned.rule(sched, w) is None:
            return simulate(w, n_gpus, sched, restart_overhead_s=restart_overhead_s,
                            record_timeline=record_timeline)
        sched.bind(n_gpus=n_gpus, restart_overhead_s=restart_overhead_s)
        return priority_twin.run(priority_jit, w, n_gpus, sched, restart_overhead_s,
                                 record_timeline, plan_for(w, sched), 0.0)


RESTARTED_AT_ONCE = []


def spied(sched):
    """``sched`` with its base's ``schedule`` counting jobs preempted and restarted in one
    call (the checkpoint loop keeps them running) into ``RESTARTED_AT_ONCE``."""
    base = getattr(sched, "base", sched)
    schedule = base.schedule

    def spy(now, free):
        start, preempt = schedule(now, free)
        RESTARTED_AT_ONCE.append(len({v.index for v in start} & {v.index for v in preempt}))
        return start, preempt

    base.schedule = spy
    return sched


def same(monkeypatch, kernel_calls, w, n_gpus, make, **kw):
    before = len(kernel_calls)
    tw = twin_loop(monkeypatch, w, n_gpus, make(), **kw)
    assert kernel_calls[before:] == [1]  # the twin ran
    ref = checkpoint_loop(monkeypatch, w, n_gpus, spied(make()), **kw)
    assert len(kernel_calls) == before + 1  # and the reference did not take it
    for f in FIELDS:
        a, b = getattr(tw, f), getattr(ref, f)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), f
    assert (tw.n_events, tw.n_eval_events) == (ref.n_events, ref.n_eval_events)
    assert tw.scheduler == ref.scheduler
    return ref


BASES = ["loss-aware", "tiresias", "srtf-est", "sjf-est"]


@pytest.mark.parametrize("base", BASES)
def test_random_traces_made_to_tie_match(monkeypatch, kernel_calls, base):
    preempted = stopped = 0
    RESTARTED_AT_ONCE.clear()
    for seed in range(40):
        rng = np.random.default_rng(seed)
        w = tie_workload(rng, int(rng.integers(2, 40)), int(rng.integers(2, 7)))
        if seed % 4 == 3:
            w.eval_obs[rng.random(w.n_jobs) < 0.3, 1] = np.nan  # rows the objects plan
        n_gpus = int(rng.choice([3, 4, 6, 64]))
        overhead = float(rng.choice([0.0, 10.0, 120.0]))
        for make in overlays(bases(rng)[base], w):
            res = same(monkeypatch, kernel_calls, w, n_gpus, make,
                       restart_overhead_s=overhead, record_timeline=bool(seed % 5))
            preempted += int(res.n_preemptions.sum())
            stopped += int(res.stopped.sum())
    assert stopped > 50  # the comparison covers stops
    if base == "sjf-est":  # which never preempts
        assert preempted == 0
        return
    assert preempted > 50  # and preemptions
    if base != "srtf-est":  # (SRTF-Est's case, rarer, is the test below)
        assert sum(RESTARTED_AT_ONCE) > 0  # and jobs preempted and restarted in one call


@pytest.mark.parametrize("overhead", [0.0, 30.0])
def test_a_victim_restarted_in_its_call_keeps_running(monkeypatch, kernel_calls, overhead):
    # A (1 GPU) and B (3 GPUs) tie on key; H (3 GPUs) arrives and preempts both, A first
    # (its key was set first). H starts, and A, at the head of the queue by its earlier
    # seq, fits the GPU left over: preempted and restarted in one call, it runs on.
    w = make_workload([0.0, 0.0, 1.0], [1000.0, 1000.0, 50.0], [1, 3, 3],
                      est=[100.0, 100.0, 10.0])
    RESTARTED_AT_ONCE.clear()
    res = same(monkeypatch, kernel_calls, w, 4, lambda: SRTFEst(margin=0.0),
               restart_overhead_s=overhead)
    assert sum(RESTARTED_AT_ONCE) == 1
    assert res.n_preemptions.tolist() == [0, 1, 0] and res.start_s.tolist() == [0.0, 0.0, 1.0]


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.sampled_from(BASES))
def test_any_seed_matches(monkeypatch, kernel_calls, seed, base):
    rng = np.random.default_rng(seed)
    w = tie_workload(rng, int(rng.integers(1, 30)), int(rng.integers(1, 6)))
    make = bases(rng)[base]
    rule = [None, "evalstop:k=2", "default"][int(rng.integers(3))]
    same(monkeypatch, kernel_calls, w, int(rng.integers(3, 8)),
         (lambda: make()) if rule is None else (lambda: EvalStop(make(), rule)),
         restart_overhead_s=float(rng.choice([0.0, 30.0])))


def test_a_slice_of_philly_matches(monkeypatch, kernel_calls):
    w = trace_workload(load_philly(limit=800), np.random.default_rng(1))
    n_gpus = max(96, int(w.gpus.max()))
    oracle = hacking_jobs(w)
    for base in BASES:
        for rule in (None, "evalstop:k=2", "default"):
            res = same(monkeypatch, kernel_calls, w, n_gpus, lambda rule=rule: build(base, rule))
            assert (res.n_preemptions.sum() > 0) == (base != "sjf-est")
        same(monkeypatch, kernel_calls, w, n_gpus,
             lambda: build(base, "default", only_jobs=oracle))
        same(monkeypatch, kernel_calls, w, n_gpus,
             lambda: build(base, "evalstop:k=2", job_types=["rlhf"]))
    same(monkeypatch, kernel_calls, w, n_gpus, lambda: Tiresias(depth=1),
         restart_overhead_s=0.0)
    same(monkeypatch, kernel_calls, w, n_gpus, lambda: SJFEst(depth=1))


def test_the_compiled_loss_drop_is_the_key():
    from numba import njit

    from evalstop.sim.priority_jit import _loss_drop

    every = njit(lambda L: [_loss_drop(L, i, c) for i in range(L.shape[0])
                            for c in range(L.shape[1] + 1)])
    rng = np.random.default_rng(0)
    loss = rng.choice([0.0, -0.0, 1.0, 2.5, -3.0, 1e-310, 1e308, -1e308, np.inf, -np.inf,
                       np.nan], (300, 5))
    got = iter(every(loss))
    s = LossAware()
    for i in range(loss.shape[0]):
        v = JobView(i, "j", "rlhf", "t", 1, 0.0, 1.0)
        for c in range(loss.shape[1] + 1):
            v.losses = loss[i, :c].tolist()
            want, key = s.key(v, 0.0), next(got)
            assert key == want or (math.isnan(want) and math.isnan(key))
            assert math.copysign(1.0, key) == math.copysign(1.0, want)


def test_only_plain_fresh_bases_with_a_plan_take_the_twin(monkeypatch, kernel_calls):
    w = tie_workload(np.random.default_rng(5), 20, 4)
    monkeypatch.setenv("EVALSTOP_JIT", "1")

    class Mine(Tiresias):
        pass

    class MySJF(SJFEst):
        pass

    spied, spied_sjf = build("loss-aware", "evalstop:k=2"), build("sjf-est", "default")
    spied.base._fill = spied.base._fill  # a patched method (a test's spy)
    spied_sjf.base.twin_key = spied_sjf.base.twin_key
    used, used_sjf = build("tiresias"), build("sjf-est")
    used._running[99] = (0.0, 0)  # not a fresh scheduler
    used_sjf._wait.append((0.0, 0, None))
    for sched in (spied, spied_sjf, used, used_sjf, Mine(), MySJF()):
        assert priority_twin.plain(sched) is None
    fleet, fleet_sjf = build("loss-aware", "default"), build("sjf-est", "default")
    fleet.per_job = fleet_sjf.per_job = False  # as a rule that pools jobs declares: no plan
    # Bases set on the instance to hear evals without preempting: the loop of job ends
    # (``sim.ends``) runs them, with no call at an eval, so the twin must not.
    asked = build("sjf-est", "evalstop:k=2")
    asked.reschedule_on_eval = asked.base.reschedule_on_eval = True
    mute = build("loss-aware")
    mute.preempt_at_checkpoint = False
    for sched in (Mine(), spied, fleet, MySJF(), spied_sjf, fleet_sjf, asked, mute,
                  build("srtf-est"), build("fifo", "default")):
        simulate(w, 6, sched)
    assert kernel_calls == []  # SRTF-Est took the planned loop, FIFO its ends
    for name in ("tiresias", "loss-aware", "sjf-est"):
        sched = build(name, "evalstop:k=2")
        assert priority_twin.plain(sched) is sched.base
        simulate(w, 6, sched)
    assert kernel_calls == [1]  # (Tiresias and SJF-Est took the planned loop)


SRTF_JIT, PRIO = planned.TWIN, "evalstop.sim.priority_jit"


@pytest.mark.parametrize("make,use", [
    (lambda: build("fifo", "evalstop:k=2"), None),
    (lambda: build("sjf-est"), planned.TWINS["fixed"]),
    (lambda: build("sjf-est", "default"), planned.TWINS["fixed"]),
    (lambda: build("srtf-est", "evalstop:k=2"), SRTF_JIT),
    (lambda: build("loss-aware", "default"), PRIO),
    (lambda: build("tiresias"), planned.TWIN_LEVELS),
    (lambda: Tiresias(depth=1), planned.TWIN_LEVELS),
])
def test_twin_use_names_what_simulate_asks_for(monkeypatch, make, use):
    """``engine.twin_use`` (what a task declares to ``jit.expect``) is the loop's twin that
    ``simulate`` asks the switch for, with the same work, or None when it asks for none."""
    from evalstop import jit

    w = tie_workload(np.random.default_rng(3), 20, 4)
    asked = []
    twin = jit.twin
    monkeypatch.setattr(jit, "twin", lambda *a: asked.append(a) or twin(*a))
    monkeypatch.setenv("EVALSTOP_JIT", "1")
    got = engine.twin_use(w, make())
    simulate(w, 6, make())
    names = (*planned.TWINS.values(), PRIO)
    asked = [(*a, 0)[:3] for a in asked if a[0] in names]
    assert asked == ([] if use is None else [got])
    if use is not None:
        assert got == (use, w.n_jobs, w.n_evals if use == PRIO else 0)
    assert engine.twin_use(w, make(), plan_stops=False) is None


def test_twin_use_is_none_without_a_plan_or_for_a_subclass():
    w = tie_workload(np.random.default_rng(3), 20, 4)
    fleet = build("sjf-est", "default")
    fleet.per_job = False

    class Mine(SJFEst):
        pass

    spied = build("tiresias")
    spied.schedule = spied.schedule
    for sched in (fleet, Mine(), spied):
        assert engine.twin_use(w, sched) is None


@pytest.mark.parametrize("base", ["tiresias", "sjf-est"])
def test_the_twin_raises_as_the_checkpoint_loop_does(monkeypatch, base):
    # A job bigger than the cluster (simulate refuses it; the loops are called directly)
    # is left waiting on an idle cluster: the loops stop with the same error.
    from evalstop.sim import ends, priority_jit

    w = make_workload([0.0, 1.0], [10.0, 10.0], [1, 3])
    errors = []
    runs = [lambda s: engine._run(w, 2, s, 0.0, True, plan_for(w, s), 0.0),
            lambda s: priority_twin.run(priority_jit, w, 2, s, 0.0, True, plan_for(w, s),
                                        0.0)]
    if base == "sjf-est":
        runs.append(lambda s: ends.run_ends(w, 2, s, plan_for(w, s), True, 0.0))
    for run in runs:
        s = build(base, "evalstop:k=2")
        s.bind(n_gpus=2, restart_overhead_s=0.0)
        with pytest.raises(RuntimeError, match="left 1 jobs waiting") as err:
            run(s)
        errors.append(str(err.value))
    assert len(set(errors)) == 1
