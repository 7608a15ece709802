"""Per-run metrics on hand-built workloads and results with answers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalstop.metrics import (
    cluster_metrics,
    decision_metrics,
    detection_delay,
    jct_metrics,
    quality_metrics,
    quality_ratio,
    run_metrics,
    stop_cost_metrics,
    waste_metrics,
    wasted_gpu_h,
)
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload

GRID = np.array([0.2, 0.4, 0.6, 0.8, 1.0])


def make_case(types, hacking, true, peak, gpus, dur, arrival, finish, stopped, stop_eval,
              kept_eval, end_progress, n_gpus=32):
    n = len(types)
    true = np.asarray(true, float)
    wl = Workload(
        job_id=[f"j{i}" for i in range(n)], type=np.array(types), tenant=np.array(["t"] * n),
        gpus=np.asarray(gpus, np.int64), arrival_s=np.asarray(arrival, float),
        duration_s=np.asarray(dur, float), est_duration_s=np.asarray(dur, float),
        eval_progress=GRID, eval_obs=true.copy(), eval_true=true, proxy=np.tile(GRID, (n, 1)),
        loss=np.tile(1.0 - 0.5 * GRID, (n, 1)), hacking=np.asarray(hacking, bool),
        peak_progress=np.asarray(peak, float))
    wl.validate()
    finish = np.asarray(finish, float)
    gpu_s = np.asarray(gpus, float) * np.asarray(dur, float) * np.asarray(end_progress, float)
    res = SimResult(
        start_s=np.asarray(arrival, float), finish_s=finish, stopped=np.asarray(stopped, bool),
        stop_eval=np.asarray(stop_eval, np.int64), kept_eval=np.asarray(kept_eval, np.int64),
        end_progress=np.asarray(end_progress, float), gpu_s=gpu_s,
        n_preemptions=np.zeros(n, np.int64), timeline_t=np.array([0.0]),
        timeline_used=np.array([0]), n_gpus=n_gpus, scheduler="test", detector=None)
    return wl, res


@pytest.fixture
def case():
    """Six jobs, one of each kind of decision:

    0 rlhf hacking, peak at eval 2 (p=0.6), stopped at eval 3 (p=0.8), kept eval 2: TP
    1 rlhf hacking, peak at eval 1 (p=0.4), ran to the end: FN
    2 rlhf healthy, stopped at eval 1: FP (an RLHF one)
    3 lora, ran to the end: TN
    4 dpo, stopped at eval 2: FP (a non-RLHF one)
    5 rlhf healthy, ran to the end: TN
    """
    up = [0.3, 0.4, 0.5, 0.6, 0.7]
    return make_case(
        types=["rlhf", "rlhf", "rlhf", "lora", "dpo", "rlhf"],
        hacking=[True, True, False, False, False, False],
        true=[[0.5, 0.7, 0.8, 0.6, 0.4], [0.4, 0.6, 0.5, 0.45, 0.3], up, up, up, up],
        peak=[0.6, 0.4, 1.0, 1.0, 1.0, 1.0],
        gpus=[8, 16, 8, 1, 4, 8],
        dur=[3600, 7200, 3600, 1800, 3600, 3600],
        arrival=[0, 10, 20, 30, 40, 50],
        finish=[3000, 8000, 1500, 2000, 2400, 5000],
        stopped=[True, False, True, False, True, False],
        stop_eval=[3, -1, 1, -1, 2, -1],
        kept_eval=[2, 4, 1, 4, 2, 4],
        end_progress=[0.8, 1.0, 0.4, 1.0, 0.6, 1.0],
    )


def test_decisions_count_against_hidden_labels(case):
    d = decision_metrics(*case)
    assert (d["tp"], d["fp"], d["fn"], d["tn"]) == (1, 2, 1, 2)
    assert d["precision"] == pytest.approx(1 / 3)
    assert d["recall"] == pytest.approx(1 / 2)
    # FPR, both denominators: 2 of the 4 non-hacking jobs; 1 of the 2 healthy RLHF jobs.
    assert d["fpr"] == pytest.approx(2 / 4)
    assert d["fpr_rlhf"] == pytest.approx(1 / 2)
    assert (d["fp_lora"], d["fp_dpo"], d["fp_rlhf"]) == (0, 1, 1)
    assert (d["n_jobs"], d["n_hacking"], d["n_stopped"]) == (6, 2, 3)


def test_detection_delay_counts_evals_after_the_true_peak_for_tps_only(case):
    delay = detection_delay(*case)
    assert delay[0] == 1  # stopped at eval 3, true peak at eval 2
    assert np.isnan(delay[1:]).all()  # FN, FP and TN have no delay
    d = decision_metrics(*case)
    assert d["delay_mean_evals"] == 1 and d["delay_p50_evals"] == 1 and d["early_stops"] == 0


def test_waste_is_gpu_time_after_the_true_peak(case):
    w = wasted_gpu_h(*case)
    # job 0: 8 GPUs x 1 h x (0.8 - 0.6); job 1: 16 GPUs x 2 h x (1.0 - 0.4); others peak at 1.0
    np.testing.assert_allclose(w, [1.6, 19.2, 0, 0, 0, 0])
    m = waste_metrics(*case)
    assert m["waste_gpu_h"] == pytest.approx(20.8)
    assert m["waste_hacking_gpu_h"] == pytest.approx(20.8)


def test_quality_is_kept_checkpoint_against_the_best(case):
    q = quality_ratio(*case)
    np.testing.assert_allclose(q, [1.0, 0.5, 0.4 / 0.7, 1.0, 0.5 / 0.7, 1.0])
    m = quality_metrics(*case)
    assert m["quality_mean"] == pytest.approx(np.mean(q))
    assert m["quality_hacking_mean"] == pytest.approx(0.75)


def test_jct_overall_and_per_type(case):
    m = jct_metrics(*case)
    jct = np.array([3000, 7990, 1480, 1970, 2360, 4950], float)
    assert m["jct_mean_s"] == pytest.approx(jct.mean())
    assert m["jct_p50_s"] == pytest.approx(np.percentile(jct, 50))
    assert m["jct_p95_s"] == pytest.approx(np.percentile(jct, 95))
    assert m["jct_rlhf_mean_s"] == pytest.approx(np.mean(jct[[0, 1, 2, 5]]))
    assert m["jct_lora_mean_s"] == 1970 and m["jct_dpo_mean_s"] == 2360
    assert m["n_unfinished"] == 0


def test_cluster_makespan_and_utilisation(case):
    wl, res = case
    m = cluster_metrics(wl, res)
    assert m["makespan_s"] == 8000  # first arrival 0, last finish 8000
    assert m["gpu_h"] == pytest.approx(res.gpu_s.sum() / 3600)
    assert m["utilisation"] == pytest.approx(res.gpu_s.sum() / (32 * 8000))


def test_run_metrics_is_flat_numbers(case):
    m = run_metrics(*case)
    assert {"jct_mean_s", "waste_gpu_h", "quality_mean", "precision", "fpr_rlhf",
            "utilisation", "harmful_rate", "regret_healthy_mean", "regret_hacking_mean",
            "compute_saved"} <= set(m)
    assert all(isinstance(v, (int, float)) for v in m.values())


def _all_run(n=3, hacking=(False, False, False), types=("lora", "dpo", "lora"), stopped=None):
    up = [0.3, 0.4, 0.5, 0.6, 0.7]
    stopped = stopped or [False] * n
    return make_case(types=list(types), hacking=list(hacking), true=[up] * n, peak=[1.0] * n,
                     gpus=[1] * n, dur=[100] * n, arrival=[0] * n, finish=[100] * n,
                     stopped=stopped, stop_eval=[1 if s else -1 for s in stopped],
                     kept_eval=[1 if s else 4 for s in stopped],
                     end_progress=[0.4 if s else 1.0 for s in stopped])


def test_undefined_ratios_are_nan_not_zero():
    # No stops, no hacking jobs, no RLHF jobs: precision, recall, fpr_rlhf, delay undefined.
    d = decision_metrics(*_all_run())
    assert math.isnan(d["precision"]) and math.isnan(d["recall"])
    assert math.isnan(d["fpr_rlhf"]) and math.isnan(d["delay_mean_evals"])
    assert d["fpr"] == 0.0  # defined: 0 of 3 non-hacking jobs stopped
    # Only hacking jobs: FPR has no denominator.
    d = decision_metrics(*_all_run(hacking=(True,) * 3, types=("rlhf",) * 3,
                                   stopped=[True, False, False]))
    assert math.isnan(d["fpr"]) and d["recall"] == pytest.approx(1 / 3) and d["precision"] == 1


def test_quality_undefined_for_non_positive_best_or_no_checkpoint():
    wl, res = _all_run()
    wl.eval_true[0] = [-0.2, -0.1, -0.3, -0.4, -0.5]  # best is not > 0
    res.kept_eval[1] = -1  # no checkpoint delivered
    q = quality_ratio(wl, res)
    assert math.isnan(q[0]) and math.isnan(q[1]) and q[2] == 1.0
    assert quality_metrics(wl, res)["quality_mean"] == 1.0  # NaNs left out of the mean


def test_unfinished_jobs_are_counted_and_left_out_of_jct():
    wl, res = _all_run()
    res.finish_s[2] = np.nan
    m = jct_metrics(wl, res)
    assert m["n_unfinished"] == 1 and m["jct_mean_s"] == 100


def test_mismatched_lengths_name_the_array(case):
    wl, res = case
    res.stopped = res.stopped[:3]
    with pytest.raises(ValueError, match="stopped"):
        decision_metrics(wl, res)


def test_kept_eval_past_the_grid_is_an_error(case):
    wl, res = case
    res.kept_eval[0] = 5
    with pytest.raises(ValueError, match="kept_eval 5"):
        quality_ratio(wl, res)


def test_stop_cost_worked_by_hand(case):
    # Gains (first eval to true peak): job 0 0.3, job 1 0.2, jobs 2-5 0.4.
    # 0 hacking, stopped at eval 3 keeping eval 2 (0.8) where the end is 0.4:
    #   regret (0.4 - 0.8) / 0.3 = -4/3, 1 of 5 intervals saved
    # 1 hacking, ran on: regret 0
    # 2 healthy RLHF, stopped at eval 1 keeping 0.4, end 0.7: regret 0.3/0.4 = 0.75, harmful,
    #   3 intervals saved
    # 3, 5 ran on: regret 0
    # 4 DPO, stopped at eval 2 keeping 0.5, end 0.7: regret 0.5, harmful, 2 saved
    m = stop_cost_metrics(*case)
    assert m["harmful"] == 2
    assert m["harmful_rate"] == pytest.approx(2 / 4)
    assert m["regret_healthy_mean"] == pytest.approx((0.75 + 0.5) / 4)
    assert m["regret_hacking_mean"] == pytest.approx((-4 / 3 + 0) / 2)
    assert m["compute_saved"] == pytest.approx((1 + 3 + 2) / 30)
    assert {k: run_metrics(*case)[k] for k in m} == m


def test_tenant_view_of_harm_worked_by_hand(case):
    # From the observed evals (here = true), smoothed over +-1 eval (5 evals: ceil(2.5% x 5)),
    # end = the last eval (ceil(10% x 5) = 1). The healthy curve 0.3..0.7 has levels 0.35,
    # 0.4, 0.5, 0.6, 0.65, gain 0.3. Job 2 keeps eval 1 (level 0.4): loss (0.7 - 0.4) / 0.3;
    # job 4 keeps eval 2 (0.5): loss 0.2 / 0.3; both > 5%, both non-hacking -> 2 of 4.
    m = stop_cost_metrics(*case)
    assert m["tenant_harmful"] == 2 and m["tenant_harmful_rate"] == pytest.approx(2 / 4)
    wl, res = case
    wl.eval_obs[4] = [0.3, 0.7, 0.7, 0.7, 0.7]  # job 4's evals say it had arrived by eval 1
    m = stop_cost_metrics(wl, res)
    assert m["tenant_harmful"] == 1 and m["harmful"] == 2  # the true curve still says 2


def test_a_stop_in_a_dip_that_recovers_is_not_harmful():
    # Both healthy, gain 0.3: job 0 stopped in a dip keeping its best (0.6), which the run
    # only regains at its end: regret 0. Job 1 keeps 0.6 where the end is 0.605: 1.7% of its
    # gain lost, under the 2% tolerance. Both are false positives; neither is harmful.
    dip = [0.3, 0.6, 0.5, 0.55, 0.6]
    wl, res = make_case(types=["rlhf"] * 2, hacking=[False] * 2,
                        true=[dip, dip[:4] + [0.605]], peak=[0.4, 1.0], gpus=[1] * 2,
                        dur=[100] * 2, arrival=[0] * 2, finish=[60] * 2, stopped=[True] * 2,
                        stop_eval=[2, 2], kept_eval=[1, 1], end_progress=[0.6] * 2)
    m = stop_cost_metrics(wl, res)
    assert decision_metrics(wl, res)["fp"] == 2
    assert m["harmful"] == 0 and m["harmful_rate"] == 0.0
    assert m["regret_healthy_mean"] == pytest.approx((0 + 0.005 / 0.305) / 2)
    assert m["compute_saved"] == pytest.approx(4 / 10)
    assert math.isnan(m["regret_hacking_mean"])  # no hacking jobs
