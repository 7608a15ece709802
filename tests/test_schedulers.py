"""Base schedulers on small cases with known answers (the simulator drives them)."""

import pytest
from conftest import make_workload, random_workload
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.schedulers import (
    EvalStop,
    LossAware,
    SJFEst,
    SRTFEst,
    Tiresias,
    build,
    make_scheduler,
)
from evalstop.schedulers.overlay import plain_base
from evalstop.sim.engine import simulate


def test_tiresias_arrival_preempts_a_demoted_job():
    # A (1 GPU, 20 evals of 1000 s) passes 3600 GPU-s at its 4th checkpoint (t=4000) and
    # drops to queue 1; B arrives at t=5000 in queue 0 and preempts it at once.
    w = make_workload([0, 5000], [20000, 100], [1, 1], n_evals=20)
    r = simulate(w, 1, build("tiresias"))
    assert r.start_s[1] == 5000 and r.n_preemptions.tolist() == [1, 0]


def test_tiresias_demoted_job_yields_at_its_checkpoint():
    # B arrives while A is still in queue 0 (A ranks first: earlier arrival); A yields
    # when it is demoted at its checkpoint at t=4000.
    w = make_workload([0, 100], [20000, 100], [1, 1], n_evals=20)
    r = simulate(w, 1, build("tiresias"))
    assert r.start_s[1] == 4000 and r.n_preemptions[0] == 1


def test_loss_aware_new_job_gets_the_gpu_at_the_next_checkpoint():
    # A has reported two losses at t=2 (its key becomes finite); B, with no loss yet,
    # ranks first, so A yields at that checkpoint.
    w = make_workload([0, 1], [4, 4], [1, 1], n_evals=4)
    r = simulate(w, 1, build("loss-aware"), restart_overhead_s=0)
    assert r.start_s[1] == 2 and r.n_preemptions.tolist() == [1, 0]


def test_loss_aware_prefers_the_faster_learner():
    # Three jobs on one GPU; C learns fastest (largest normalised loss drop) so after the
    # first checkpoints it is preferred over B's slow descent.
    fast = [1.0, 0.5, 0.25, 0.1]
    slow = [1.0, 0.99, 0.98, 0.97]
    w = make_workload([0, 0, 0], [4, 4, 4], [1, 1, 1], n_evals=4,
                      losses=[slow, slow, fast])
    r = simulate(w, 1, build("loss-aware"), restart_overhead_s=0)
    assert r.finish_s[2] < r.finish_s[1]


@pytest.mark.parametrize("name", ["fifo", "sjf-est", "srtf-est", "loss-aware", "tiresias"])
def test_names_and_fresh_instances(name):
    a, b = make_scheduler(name), make_scheduler(name)
    assert a.name == name and a is not b


def test_unknown_scheduler_and_bad_settings():
    with pytest.raises(ValueError, match="unknown scheduler 'lifo'"):
        make_scheduler("lifo")
    with pytest.raises(ValueError, match="thresholds"):
        Tiresias(thresholds_gpu_s=(10, 5))
    with pytest.raises(ValueError, match="depth"):
        LossAware(depth=0)


def test_overlay_forwards_and_names_itself():
    base = make_scheduler("sjf-est")
    over = EvalStop(base, "evalstop:k=3", job_types={"rlhf"})
    assert over.name == "sjf-est+evalstop:k=3" and over.detector_spec == "evalstop:k=3"
    evals = [[0.5, 0.4, 0.3, 0.2, 0.1]] * 2
    w = make_workload([0, 0], [10, 10], [1, 1], evals=evals, types=["rlhf", "lora"])
    r = simulate(w, 2, over)
    assert r.stopped.tolist() == [True, False]  # the LoRA job is not watched
    assert r.stop_eval[0] == 3 and r.kept_eval[0] == 0


@pytest.mark.parametrize("overhead, durations, preempted", [
    (0.0, [100, 50], True),  # 100 s left > 50 s + 0 s: preempting pays
    (120.0, [100, 50], False),  # 100 s < 50 s + 120 s
    (300.0, [300, 50], False),  # 300 s < 50 s + 300 s (a fixed 120 s margin would preempt)
    (300.0, [1000, 50], True),
])
def test_srtf_margin_is_the_runs_restart_overhead(overhead, durations, preempted):
    # README: an arriving job preempts running jobs whose estimated remaining time is
    # longer by more than the restart overhead, whatever overhead the run uses.
    w = make_workload([0, 10], durations, [1, 1])
    for sched in (build("srtf-est"), build("srtf-est", "evalstop:k=2")):
        r = simulate(w, 1, sched, restart_overhead_s=overhead)
        assert r.n_preemptions.tolist() == [int(preempted), 0]


@pytest.mark.parametrize("name", ["srtf-est", "tiresias"])
def test_gpus_a_preemption_frees_beyond_the_heads_need_are_filled_in_the_same_call(name):
    # L (2 GPUs, long) runs alone on 2 GPUs. At t=5100 H (1 GPU), W2 (2 GPUs) and W1
    # (1 GPU) arrive, ranked in that order ahead of L (SRTF-Est: estimates 5, 7, 10
    # against L's 10,000 s; Tiresias: queue 0 against L's queue 1). H preempts L; W2 does
    # not fit the GPU left over, W1 does, and takes it in the same call, not at the next
    # event (SRTF-Est: H's end) or checkpoint (Tiresias).
    w = make_workload([0, 5100, 5100, 5100], [10000, 5, 10, 10], [2, 1, 2, 1], n_evals=20,
                      est=[10000.0, 5.0, 7.0, 10.0])
    r = simulate(w, 2, build(name), restart_overhead_s=0.0)
    assert r.n_preemptions.tolist() == [1, 0, 0, 0]
    assert r.start_s[1] == r.start_s[3] == 5100.0 and r.start_s[2] > 5100.0


def test_srtf_explicit_margin_is_kept():
    w = make_workload([0, 10], [100, 50], [1, 1])
    r = simulate(w, 1, SRTFEst(margin=10.0), restart_overhead_s=120.0)
    assert r.n_preemptions.tolist() == [1, 0]  # 100 s > 50 s + 10 s
    with pytest.raises(ValueError, match="margin"):
        SRTFEst(margin=-1.0)


def test_tiresias_is_fifo_by_arrival_within_a_demoted_queue():
    # Within a queue, arrival order decides, also for arrivals a fraction of a second apart
    # in a lower queue (a key of level * 1e15 + arrival rounded them to the same float).
    from evalstop.sim.view import JobView

    t = Tiresias()
    keys = []
    for level_gpu_s in (0.0, 5000.0, 50000.0):
        a, b = JobView(0, "a", "rlhf", "t", 1, 100.1, 10.0), JobView(1, "b", "rlhf", "t", 1, 100.15, 10.0)
        a.attained_gpu_s = b.attained_gpu_s = level_gpu_s
        assert t.key(a, 0.0) < t.key(b, 0.0)
        keys.append(t.key(b, 0.0))
    assert keys == sorted(keys)  # a lower queue always ranks behind a higher one


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40),
       st.sampled_from(["srtf-est", "loss-aware", "tiresias"]))
def test_preemptions_only_make_room_for_a_better_job(seed, n, name):
    # Every job preempted in a call was running, and ranks behind a waiting job started in
    # the same call by more than the margin (SRTF: estimated remaining time; LossAware,
    # Tiresias: their keys at the victim's last checkpoint).
    s = build(name)
    calls = []
    schedule = s.schedule

    def spy(now, free):
        running = {i: k for i, (k, _) in s._running.items()}
        waiting = {e[2].index: e[0] for e in s._front + s._wait}
        start, preempt = schedule(now, free)
        # (a key made only when a yield asks for it: from the view, still as of then)
        running.update({v.index: s.key(v, now) for v in preempt if running.get(v.index, 0) is None})
        calls.append((running, waiting, start, preempt))
        return start, preempt

    s.schedule = spy
    simulate(random_workload(seed, n), 4, s, restart_overhead_s=30.0)
    for running, waiting, start, preempt in calls:
        heads = [waiting[v.index] for v in start if v.index in waiting]
        for v in preempt:
            assert v.index in running
            assert any(running[v.index] > h + s.margin for h in heads)


class _Watched(SJFEst):
    """Records every attribute read on the instance (``vars`` reads ``__dict__`` so)."""

    def __getattribute__(self, name):
        object.__getattribute__(self, "read").append(name)
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("patch", [None, "schedule", "bound", "key", "data"])
def test_plain_base_finds_patched_methods_without_the_instance_dict(patch):
    """A method set on the instance (a spy, a bound method put back) is found; a class's
    own methods are not; and the check never reads ``__dict__``, which would make every
    later attribute read on the scheduler slower (CPython keeps them inline until then)."""
    s = _Watched.__new__(_Watched)
    object.__setattr__(s, "read", [])
    SJFEst.__init__(s)
    if patch == "schedule":
        s.schedule = lambda now, free: ([], [])
    elif patch == "bound":
        s.key = s.key
    elif patch == "key":
        s.key = staticmethod(lambda job, now: 0.0)
    elif patch == "data":
        s.submit = 3
    hooks = ("submit", "schedule", "key", "on_end")
    s.read.clear()
    found = plain_base(s, _Watched, hooks)
    assert (found is None) == (patch is not None)
    assert "__dict__" not in s.read
    assert plain_base(build("sjf-est", "evalstop:k=2"), SJFEst, hooks) is not None
