"""LossAware on the planned loop (evalstop.sim.planned with the ``loss`` key rule,
``sim.loss_drops``) gives the checkpoint loop's result.

LossAware yields at checkpoints only, to a waiting head that its GPUs, with the free ones,
let in; so the planned loop makes a call after only checkpoints at the next eval of a job
big enough for that (or of any job, when a fill would act), and reads the smaller jobs'
checkpoints of a call only after a first yield. Every field of the result is compared
with the Python checkpoint loop (``engine._run`` with the same plan) on random traces made
to tie (depth 1 to unbounded, margins, alone and under every overlay that plans) and on
Philly slices, with the Python loop and with its compiled twin (``sim.planned_jit``,
skipped without numba); the Python runs must cover yields, the smaller jobs' checkpoints
read after a first yield, and calls where a fill would act.
"""

import math

import numpy as np
import pytest
from tie_traces import planned_loop_runs, same_as_checkpoint_loop, tie_cases

from evalstop.schedulers import LossAware, build
from evalstop.sim import planned, yields
from evalstop.sim.view import JobView
from evalstop.workload import load_philly, trace_workload


@pytest.fixture(params=["python", "twin"])
def seen(request, monkeypatch):
    """Counts of what the loop did: its runs; with the Python loop also its yields, reads
    of the smaller jobs' checkpoints after a first yield, and calls asked at the very next
    eval (a fill would act)."""
    count = planned_loop_runs(request, monkeypatch)
    if count.twin:
        return count
    loop = planned._loop
    monkeypatch.setattr(planned, "_loop", lambda *a: count.update(["run"]) or loop(*a))
    indexes = yields.class_indexes

    def counted(jobs, round_of):
        track, hits, next_time, cls = indexes(jobs, round_of)

        def hits_(t, call, lo, hi):
            count["smaller after a yield"] += hi < cls[-1] + 1
            return hits(t, call, lo, hi)

        def next_time_(t, call, min_gpus, exact):
            count["next eval (a fill would act)"] += exact
            return next_time(t, call, min_gpus, exact)
        return track, hits_, next_time_, cls

    monkeypatch.setattr(yields, "class_indexes", counted)
    return count


def same(seen, w, n_gpus, make, overhead=120.0):
    before = seen["run"]
    res, _ = same_as_checkpoint_loop(w, n_gpus, make, overhead)
    assert seen["run"] == before + 1  # the planned loop ran (once)
    seen["yield"] += int(res.n_preemptions.sum())
    return res


def test_random_traces_made_to_tie_match(seen):
    for _, w, n_gpus, overhead, make in tie_cases("loss-aware", 60):
        same(seen, w, n_gpus, make, overhead)
    assert seen["yield"] > 1000
    if not seen.twin:
        assert seen["smaller after a yield"] > 50
        assert seen["next eval (a fill would act)"] > 50


def test_slices_of_philly_match(seen):
    for limit, gpus in ((800, 96), (3000, 64)):
        w = trace_workload(load_philly(limit=limit), np.random.default_rng(1))
        n_gpus = max(gpus, int(w.gpus.max()))
        for rule in (None, "evalstop:k=2", "default"):
            same(seen, w, n_gpus, lambda rule=rule: build("loss-aware", rule))
        same(seen, w, n_gpus, lambda: LossAware(depth=1, margin=0.05), overhead=0.0)
    assert seen["yield"] > 500 and (seen.twin or seen["smaller after a yield"] > 0)


def test_the_compiled_loss_key_is_the_key():
    numba = pytest.importorskip("numba")
    from evalstop.sim.planned_jit import _loss_key

    every = numba.njit(lambda L: [_loss_key(L, i, k) for i in range(L.shape[0])
                                  for k in range(L.shape[1])])
    rng = np.random.default_rng(0)
    loss = rng.choice([0.0, -0.0, 1.0, 2.5, -3.0, 1e-310, 1e308, -1e308, np.inf, -np.inf,
                       np.nan], (300, 5))
    got = iter(every(loss))
    s = LossAware()
    for i in range(loss.shape[0]):
        v = JobView(i, "j", "rlhf", "t", 1, 0.0, 1.0)
        for k in range(loss.shape[1]):
            v.losses = loss[i, :k + 1].tolist()
            want, key = s.key(v, 0.0), next(got)
            assert key == want or (math.isnan(want) and math.isnan(key))
            assert math.copysign(1.0, key) == math.copysign(1.0, want)
