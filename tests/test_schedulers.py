"""Base schedulers on small cases with known answers (the simulator drives them)."""

import pytest
from conftest import make_workload

from evalstop.schedulers import EvalStop, LossAware, Tiresias, build, make_scheduler
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
