"""The simulator: FIFO semantics as the README pins them, invariants under every scheduler."""

import numpy as np
import pytest
from conftest import make_workload, random_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.schedulers import SCHEDULERS, Scheduler, build
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


class Scripted(Scheduler):
    """A deliberately faulty scheduler: at each call, starts and preempts what ``script``
    says for that instant (job indices), to check the simulator's guards."""

    name = "scripted"

    def __init__(self, script):
        self.script, self.jobs, self.waiting = script, {}, []

    def submit(self, job, now):
        self.jobs[job.index] = job
        self.waiting.append(job)

    def schedule(self, now, free_gpus):
        start, preempt = self.script.get(now, ((), ()))
        start = [self.jobs[i] for i in start]
        preempt = [self.jobs[i] for i in preempt]
        self.waiting = [v for v in self.waiting if v not in start] + preempt
        return start, preempt

    @property
    def queue_length(self):
        return len(self.waiting)


def test_jobs_left_waiting_on_an_idle_cluster_are_an_error_after_a_preemption():
    # j0 runs from t=0; at t=10 the scheduler preempts it and starts nothing, so both jobs
    # wait on an idle cluster. j0's pending eval is still in the event heap (stale), which
    # must not hide the deadlock.
    w = make_workload([0, 10], [100, 100], [1, 1])
    with pytest.raises(RuntimeError, match="left 2 jobs waiting on an idle cluster"):
        simulate(w, 2, Scripted({0: ([0], ()), 10: ((), [0])}))


def test_starting_a_running_job_is_an_error_even_when_something_is_preempted():
    # At t=10 the scheduler preempts j1 and "starts" j0, which is already running.
    w = make_workload([0, 0, 10], [100, 100, 100], [1, 1, 1])
    with pytest.raises(RuntimeError, match="started job j0 twice"):
        simulate(w, 2, Scripted({0: ([0, 1], ()), 10: ([0], [1])}))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.sampled_from(SCHEDULERS),
       st.sampled_from([None, "evalstop:k=1", "evalstop:k=2"]),
       st.sampled_from([0.0, 7.0, 120.0]))
def test_time_and_progress_accounting(seed, n, sched, det, overhead):
    w = random_workload(seed, n)
    s = build(sched, det)
    seen = []
    on_eval = s.on_eval

    def spy(v, t):
        seen.append((v.index, len(v.evals) - 1, v.progress, v.attained_gpu_s, v.n_preemptions))
        return on_eval(v, t)

    s.on_eval = spy
    r = simulate(w, 4, s, restart_overhead_s=overhead)
    # GPU-seconds are the area under the occupancy timeline
    busy = np.sum(np.diff(r.timeline_t) * r.timeline_used[:-1])
    assert busy == pytest.approx(r.gpu_s.sum())
    # progress is kept across preemptions; each resume pays at most one restart overhead
    extra = r.gpu_s - w.gpus * w.duration_s * r.end_progress
    assert np.all(extra >= -1e-6)
    assert np.all(extra <= w.gpus * overhead * r.n_preemptions + 1e-6)
    # each eval happens when the job's progress reaches its grid point
    for i, j, progress, attained, n_pre in seen:
        work = w.gpus[i] * w.duration_s[i] * w.eval_progress[j]
        assert progress == w.eval_progress[j]
        assert work - 1e-6 <= attained <= work + w.gpus[i] * overhead * n_pre + 1e-6
    # what a job ends with: stopped at its stop eval, keeping its best eval so far
    # (earliest on ties); a finished job keeps its last
    for i in range(w.n_jobs):
        if r.stopped[i]:
            assert r.end_progress[i] == w.eval_progress[r.stop_eval[i]]
            assert r.kept_eval[i] == np.argmax(w.eval_obs[i, : r.stop_eval[i] + 1])
        else:
            assert r.end_progress[i] == 1.0 and r.kept_eval[i] == w.n_evals - 1
