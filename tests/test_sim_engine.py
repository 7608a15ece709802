"""The simulator: FIFO semantics pinned in DESIGN.md, invariants under every scheduler."""

import numpy as np
import pytest
from conftest import make_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.schedulers import SCHEDULERS, build
from evalstop.sim.engine import simulate


def test_fifo_strict_order_no_backfill():
    # j2 (4 GPUs) waits for both earlier jobs; j3 (1 GPU) could fit earlier but may not pass it.
    w = make_workload([0, 0, 5, 10], [10, 20, 5, 3], [2, 2, 4, 1])
    r = simulate(w, 4, build("fifo"))
    assert r.start_s.tolist() == [0, 0, 20, 25]
    assert r.finish_s.tolist() == [10, 20, 25, 28]
    assert r.jct_s.tolist() == [10, 20, 20, 18]
    assert not r.stopped.any() and r.n_preemptions.sum() == 0


def test_completions_free_gpus_before_arrivals_at_one_instant():
    # j0 ends at t=10 exactly when j1 and j2 arrive: both start at once, in file order.
    w = make_workload([0, 10, 10], [10, 5, 5], [2, 1, 1])
    r = simulate(w, 2, build("fifo"))
    assert r.start_s.tolist() == [0, 10, 10]


def test_ties_keep_input_order():
    w = make_workload([0, 0, 0], [4, 4, 4], [1, 1, 1])
    r = simulate(w, 1, build("fifo"))
    assert r.start_s.tolist() == [0, 4, 8]


def test_job_wider_than_cluster_is_an_input_error():
    w = make_workload([0], [10], [8])
    with pytest.raises(ValueError, match="asks for 8 GPUs but the cluster has 4"):
        simulate(w, 4, build("fifo"))


def test_stop_frees_gpus_at_once_and_keeps_best_checkpoint():
    # j0 peaks at eval 2 and declines twice: stopped at eval 4 of 5 (t = 80), not at t = 100.
    evals = [[0.1, 0.3, 0.2, 0.1, 0.0], [0.1, 0.2, 0.3, 0.4, 0.5]]
    w = make_workload([0, 1], [100, 10], [4, 4], evals=evals)
    r = simulate(w, 4, build("fifo", "evalstop:k=2"))
    assert r.stopped.tolist() == [True, False]
    assert r.stop_eval[0] == 3 and r.kept_eval[0] == 1 and r.kept_eval[1] == 4
    assert r.finish_s[0] == pytest.approx(80) and r.start_s[1] == pytest.approx(80)
    assert r.end_progress.tolist() == [0.8, 1.0]
    assert r.gpu_s[0] == pytest.approx(320)


def test_srtf_preempts_and_pays_restart_overhead():
    w = make_workload([0, 10], [1000, 50], [1, 1])
    r = simulate(w, 1, build("srtf-est"), restart_overhead_s=120)
    assert r.n_preemptions.tolist() == [1, 0]
    assert r.start_s[1] == 10 and r.finish_s[1] == 60
    # j0 ran 10 s, waited 50 s, then 120 s of overhead and its remaining 990 s.
    assert r.finish_s[0] == pytest.approx(60 + 120 + 990)
    assert r.gpu_s[0] == pytest.approx(10 + 120 + 990)


def test_srtf_margin_avoids_preemption_that_does_not_pay():
    w = make_workload([0, 10], [100, 50], [1, 1])
    r = simulate(w, 1, build("srtf-est"), restart_overhead_s=120)
    assert r.n_preemptions.sum() == 0 and r.start_s[1] == 100


def test_sjf_orders_by_estimate_not_truth():
    w = make_workload([0, 1, 1], [10, 100, 5], [1, 1, 1], est=[10, 1, 500])
    r = simulate(w, 1, build("sjf-est"))
    assert r.start_s.tolist() == [0, 10, 110]


def random_workload(seed, n):
    rng = np.random.default_rng(seed)
    evals = np.cumsum(rng.normal(0.01, 0.02, (n, 6)), axis=1)
    return make_workload(
        np.sort(rng.integers(0, 200, n)).astype(float),
        rng.integers(1, 100, n).astype(float),
        rng.integers(1, 5, n),
        evals=evals,
        est=rng.integers(1, 100, n).astype(float),
        losses=np.cumsum(-rng.random((n, 6)), axis=1) + 10,
        types=rng.choice(["lora", "dpo", "rlhf"], n),
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.sampled_from(SCHEDULERS),
       st.sampled_from([None, "evalstop:k=1", "evalstop:k=2", "stopat:p=0.5"]))
def test_invariants(seed, n, sched, det):
    w = random_workload(seed, n)
    r = simulate(w, 4, build(sched, det))
    # capacity is never exceeded, and the timeline ends with an idle cluster
    assert r.timeline_used.max() <= 4 and r.timeline_used.min() >= 0
    assert r.timeline_used[-1] == 0
    # every job either finishes or is stopped, after it arrived and started
    assert np.all(np.isfinite(r.finish_s)) and np.all(r.start_s >= w.arrival_s)
    assert np.all(r.finish_s > r.start_s)
    assert np.all(r.end_progress[~r.stopped] == 1.0)
    assert np.all(r.stop_eval[r.stopped] >= 0) and np.all(r.stop_eval[~r.stopped] == -1)
    if det is None:
        assert not r.stopped.any()
    # GPU time: at least the work done on the requested GPUs
    done = w.gpus * w.duration_s * r.end_progress
    assert np.all(r.gpu_s >= done - 1e-6)
    # the same inputs give the same run
    r2 = simulate(w, 4, build(sched, det))
    for f in ("start_s", "finish_s", "stopped", "kept_eval", "gpu_s", "timeline_t"):
        assert np.array_equal(getattr(r, f), getattr(r2, f))


def test_capacity_from_timeline_matches_gpu_seconds():
    w = random_workload(3, 60)
    r = simulate(w, 4, build("srtf-est", "evalstop:k=2"))
    busy = np.sum(np.diff(r.timeline_t) * r.timeline_used[:-1])
    assert busy == pytest.approx(r.gpu_s.sum())
