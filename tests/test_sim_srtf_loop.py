"""SRTF-Est's own loop (evalstop.sim.planned) gives the checkpoint loop's result.

The loop skips the checkpoint events of SRTF-Est runs with planned stops and finds a
job's last checkpoint when the scheduler looks at it. Every field of the result (every
start, finish, stop, kept checkpoint, preemption and the GPU timeline) is compared with the
checkpoint loop of ``engine._run`` (``planned.ENABLED = False``) on random traces made
to tie (equal estimates, durations on a coarse grid, no restart overhead), on the traces
of ``test_sim_fastpath`` and on a slice of Philly. Each comparison runs twice: with the
Python loop (``EVALSTOP_JIT=0``) and with its compiled twin (``evalstop.sim.planned_jit``,
skipped without numba); and the twin's arrays are compared with the Python loop's directly.
"""

import math

import numpy as np
import pytest
from conftest import make_workload, random_workload

from evalstop.schedulers import EvalStop, SRTFEst, build, make_scheduler
from evalstop.sim import planned
from evalstop.sim.engine import simulate
from evalstop.workload import load_philly, synthetic_workload, trace_workload

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "n_preemptions", "timeline_t", "timeline_used")


@pytest.fixture(params=["python", "twin"])
def loop(request, monkeypatch):
    """Which of SRTF-Est's own loops ``simulate`` takes: the Python loop or its twin (and
    that it took that one)."""
    twin = request.param == "twin"
    if twin:
        pytest.importorskip("numba")
    monkeypatch.setenv("EVALSTOP_JIT", "1" if twin else "0")
    calls = 0
    if twin:
        from evalstop.sim import planned_jit

        kernel = planned_jit.run_kernel

        def counted(*args):
            nonlocal calls
            calls += 1
            return kernel(*args)

        monkeypatch.setattr(planned_jit, "run_kernel", counted)
    yield request.param
    assert calls > 0 if twin else calls == 0


def checkpoint_loop(monkeypatch, *args, **kw):
    with monkeypatch.context() as m:
        m.setattr(planned, "ENABLED", False)
        return simulate(*args, **kw)


def same_as_checkpoint_loop(monkeypatch, w, n_gpus, make, overhead=120.0):
    fast = simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    slow = checkpoint_loop(monkeypatch, w, n_gpus, make(), restart_overhead_s=overhead)
    for f in FIELDS:
        assert np.array_equal(getattr(fast, f), getattr(slow, f), equal_nan=True), f
    assert (fast.n_events, fast.n_eval_events) == (slow.n_events, slow.n_eval_events)
    return fast


def tie_workload(seed, n):
    # Estimates and durations from a few values on the eval grid's quarters, arrivals on
    # a 10 s grid: remaining-time keys and event times tie often, so the order in which
    # the checkpoint loop set equal keys decides victims.
    rng = np.random.default_rng(seed)
    evals = np.cumsum(rng.normal(0.01, 0.02, (n, 4)), axis=1)
    return make_workload(np.sort(rng.integers(0, 30, n)).astype(float) * 10,
                         rng.choice([20.0, 40.0, 80.0, 160.0], n), rng.integers(1, 3, n),
                         evals=evals, est=rng.choice([40.0, 60.0, 80.0, 120.0, 160.0, 240.0], n))


def test_the_loop_is_taken_for_plain_srtf_only():
    w = random_workload(0, 10)

    def fits(s):
        return planned.rule(s, w) == "remaining"

    assert fits(build("srtf-est")) and fits(build("srtf-est", "default"))
    assert not fits(build("tiresias", "evalstop:k=2"))

    class Mine(SRTFEst):
        pass

    assert not fits(Mine())
    spied = build("srtf-est")
    spied.schedule = spied.schedule  # a patched method (a test's spy) keeps the general loop
    assert not fits(spied)
    yields = build("srtf-est")
    yields.preempt_at_checkpoint = True  # yields at checkpoints: it must hear them
    assert not fits(yields)

    class Overlay(EvalStop):
        pass

    assert not fits(Overlay(make_scheduler("srtf-est"), "evalstop:k=2"))


@pytest.mark.parametrize("overhead", [0.0, 30.0, 120.0])
def test_random_traces_match(monkeypatch, loop, overhead):
    restarted_at_once = 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        w = random_workload(seed, int(rng.integers(2, 60)))
        n_gpus = int(rng.integers(4, 10))
        for rule in (None, "evalstop:k=2"):
            same_as_checkpoint_loop(monkeypatch, w, n_gpus,
                                    lambda rule=rule: build("srtf-est", rule), overhead)
        # How often a job is preempted and restarted in one call (the checkpoint loop keeps
        # it running): this test must cover that case.
        s = build("srtf-est")
        schedule = s.schedule

        def spy(now, free, schedule=schedule):
            nonlocal restarted_at_once
            start, preempt = schedule(now, free)
            restarted_at_once += len({v.index for v in start} & {v.index for v in preempt})
            return start, preempt

        s.schedule = spy
        checkpoint_loop(monkeypatch, w, n_gpus, s, restart_overhead_s=overhead)
    if overhead == 0.0:  # margin 0: a victim may rank first in the queue it joins
        assert restarted_at_once > 0


def test_traces_made_to_tie_match(monkeypatch, loop):
    for seed in range(150):
        rng = np.random.default_rng(seed)
        w = tie_workload(seed, int(rng.integers(2, 50)))
        for rule in (None, "evalstop:k=2"):
            same_as_checkpoint_loop(monkeypatch, w, int(rng.integers(2, 6)),
                                    lambda rule=rule: build("srtf-est", rule),
                                    float(rng.choice([0.0, 10.0, 20.0])))


def test_an_eval_due_at_its_restart_is_processed_after_that_call(monkeypatch, loop):
    # Job A (3 s, evals at 1/3, 2/3, 1) is preempted a float's width before its second
    # eval: its progress rounds to that eval's, so with no restart overhead the eval is due
    # the instant A restarts, and the checkpoint loop processes it after the scheduling call
    # (and after X, started in it). Then H arrives and preempts one of A and X, whose keys
    # tie; the one whose key was set first goes.
    grid = np.arange(1, 4) / 3
    t1 = math.nextafter(2.0, 0.0)
    assert t1 / 3.0 >= grid[1]
    w = make_workload([0.0, t1, 3.0, 10.5], [3.0, 8.0, 300.0, 1.0], [1, 2, 1, 1], n_evals=3,
                      est=[3.0, 0.5, 3.0 * (1.0 - grid[1]), 0.1])
    res = same_as_checkpoint_loop(monkeypatch, w, 2, lambda: build("srtf-est"), 0.0)
    assert res.n_preemptions.tolist() == [1, 0, 1, 0]
    seg = (10.0, 0.0, grid[1], 3.0, 1, 0, 4, [float(g) for g in grid])
    assert planned._round(seg, 1) == 1  # after call 0 at t=10
    assert planned._round(seg[:1] + (1.0,) + seg[2:], 1) == 0  # due later: first batch


def test_a_key_set_at_a_restarts_eval_ranks_after_the_calls_starts(monkeypatch, loop):
    # As above, A (3 s, evals at 1/3, 2/3, 1) is preempted (by B) a float's width before
    # its second eval, which is due the instant A restarts at t=10. There A and Y start
    # in one call with equal keys (A first: Y, at the head, waits until V is preempted for
    # it). A's stale start entry is on top when H arrives; looked at, its key is the one
    # set at that eval, after the call, so Y's (set in the call) goes first: Y is
    # preempted, not A. (Without the ``call + 1`` of ``_round`` the loop would take A.)
    grid = np.arange(1, 4) / 3
    t1 = math.nextafter(2.0, 0.0)
    w = make_workload([0.0, 0.0, t1, 3.0, 10.5], [3.0, 1000.0, 8.0, 300.0, 1.0],
                      [1, 2, 2, 3, 1], n_evals=3,
                      est=[3.0, 1.5, 0.5, 3.0 * (1.0 - grid[1]), 0.1])
    res = same_as_checkpoint_loop(monkeypatch, w, 4, lambda: build("srtf-est"), 0.0)
    # A by B, V for Y, Y for H; the two GPUs Y leaves beyond H's one restart V at once,
    # and V yields them to Y again when A ends.
    assert res.n_preemptions.tolist() == [1, 2, 0, 1, 0]
    assert res.start_s[3] == 10.0 and res.finish_s[0] == 11.0  # A: restarted at 10 too


def test_benchmark_traces_match(monkeypatch, loop):
    paper = synthetic_workload(np.random.default_rng(0), n_jobs=300, n_gpus=64)
    philly = trace_workload(load_philly(limit=2000), np.random.default_rng(1))
    for w, n_gpus in ((paper, 64), (philly, 96)):
        for rule in (None, "evalstop:k=2", "default"):
            res = same_as_checkpoint_loop(monkeypatch, w, n_gpus,
                                          lambda rule=rule: build("srtf-est", rule))
        assert res.n_preemptions.sum() > 0
    for rule in ("evalstop:k=2",):
        same_as_checkpoint_loop(monkeypatch, philly, 96,
                                lambda: build("srtf-est", rule, job_types=["rlhf"]))
        same_as_checkpoint_loop(monkeypatch, philly, 96, lambda: SRTFEst(margin=0.0))


def both_loops(monkeypatch, w, n_gpus, make, **kw):
    """The Python loop's result and the twin's, for one run."""
    from evalstop.sim import planned_jit

    calls = []
    with monkeypatch.context() as m:
        kernel = planned_jit.run_kernel
        m.setattr(planned_jit, "run_kernel", lambda *a: calls.append(1) or kernel(*a))
        m.setenv("EVALSTOP_JIT", "0")
        py = simulate(w, n_gpus, make(), **kw)
        m.setenv("EVALSTOP_JIT", "1")
        tw = simulate(w, n_gpus, make(), **kw)
    assert len(calls) == 1  # the twin ran, the second time only
    return py, tw


@pytest.mark.parametrize("record_timeline", [True, False])
def test_the_twin_gives_the_python_loops_arrays(monkeypatch, record_timeline):
    pytest.importorskip("numba")
    from evalstop.sim import planned_jit  # noqa: F401  (the twin itself imports)

    preempted = 0
    for seed in range(60):
        rng = np.random.default_rng(1000 + seed)
        n = int(rng.integers(2, 80))
        w = tie_workload(seed, n) if seed % 2 else random_workload(seed, n)
        depth = [1, 2, 2.5, 4, 32, math.inf][int(rng.integers(6))]  # (a count compared)
        margin = float(rng.choice([0.0, 5.0, 40.0]))
        overhead = float(rng.choice([0.0, 10.0, 120.0]))
        for make in (lambda: SRTFEst(depth=depth, margin=margin),
                     lambda: build("srtf-est", "evalstop:k=2")):
            py, tw = both_loops(monkeypatch, w, int(rng.integers(4, 10)), make,
                                restart_overhead_s=overhead, record_timeline=record_timeline)
            for f in FIELDS:
                a, b = getattr(py, f), getattr(tw, f)
                assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), f
            preempted += int(py.n_preemptions.sum())
    assert preempted > 0


@pytest.mark.parametrize("spec", [("srtf-est",), ("tiresias", "evalstop:k=2"),
                                  ("sjf-est", "default")])
def test_the_twin_raises_as_the_python_loop_does(monkeypatch, spec):
    # A job bigger than the cluster (simulate refuses it; the loop is called directly) is
    # left waiting on an idle cluster: both loops stop with the same error, under every
    # key rule.
    pytest.importorskip("numba")
    from evalstop.sim.stops import plan_for

    w = make_workload([0.0, 1.0], [10.0, 10.0], [1, 3])
    errors = []
    for flag in ("0", "1"):
        monkeypatch.setenv("EVALSTOP_JIT", flag)
        s = build(*spec)
        s.bind(n_gpus=2, restart_overhead_s=0.0)
        with pytest.raises(RuntimeError, match="left 1 jobs waiting") as err:
            planned.run(w, 2, s, 0.0, True, plan_for(w, s), 0.0)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
