"""Experiments: the registry, specs, tasks, determinism across worker counts, aggregation."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from evalstop.experiments import (
    FULL,
    Experiment,
    Method,
    Point,
    Settings,
    get,
    names,
    run_experiments,
    select,
    summarize,
)
from evalstop.experiments.runner import ID_COLUMNS, plan

TINY = Settings(n_seeds=2, n_jobs=40)


def _same(a, b) -> bool:
    """Equal, with NaN equal to NaN (undefined ratios are NaN in both runs)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def test_registry_has_the_papers_studies_with_enough_seeds():
    # the platform's study (the first screen's) first, then the paper's studies in the
    # paper's order; later studies add to them
    assert names()[:6] == ["platform", "main", "composability", "sigma", "hacking", "k"]
    assert FULL.n_seeds >= 20
    assert [p.x for p in get("sigma").points] == [0.01, 0.02, 0.03, 0.05, 0.08, 0.12]
    assert [p.x for p in get("hacking").points] == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    assert [m.x for m in get("k").points[0].methods if m.x is not None] == [1, 2, 3, 4, 5]
    main = get("main").points[0]
    stopat = next(m for m in main.methods if m.label == "StopAt-0.65")
    assert stopat.job_types == frozenset({"rlhf"}) and stopat.baseline == "SRTF-Est"
    comp = get("composability").points[0].methods
    assert len(comp) == 10 and sum(m.detector is not None for m in comp) == 5


def test_select_keeps_registry_order_and_rejects_unknown_names():
    assert [e.name for e in select("k,main")] == ["main", "k"]
    with pytest.raises(ValueError, match="'nope'"):
        select("main,nope")
    with pytest.raises(ValueError, match="empty"):
        select("main,")


def test_point_validates_its_methods():
    a = Method("A", "fifo")
    with pytest.raises(ValueError, match="duplicate"):
        Point("p", {}, (a, a))
    with pytest.raises(ValueError, match="'B'"):
        Point("p", {}, (Method("C", "fifo", baseline="B"),))
    with pytest.raises(ValueError, match="n_jobs"):
        Point("p", {"n_jobs": 5}, (a,))


@pytest.mark.parametrize("kwargs, bad", [
    ({"n_seeds": 0}, "n_seeds"), ({"n_jobs": 1.5}, "n_jobs"), ({"base_seed": -1}, "-1"),
    ({"n_seeds": True}, "n_seeds"), ({"restart_overhead_s": -1.0}, "restart_overhead_s"),
])
def test_settings_validate(kwargs, bad):
    with pytest.raises(ValueError, match=bad):
        replace(FULL, **kwargs)


def test_plan_is_points_times_seeds_and_keeps_only_the_first_seed():
    tasks = plan(select("main,sigma"), TINY)
    assert len(tasks) == 1 * 2 + 6 * 2
    kept = [t for t in tasks if t.keep]
    assert len(kept) == 1 and kept[0].experiment == "main" and kept[0].seed == 0


@pytest.fixture(scope="module")
def main_in_process():
    return run_experiments(select("main"), TINY, workers=1, progress=False)["main"]


def test_an_experiment_runs_and_pairs_methods_on_each_seed(main_in_process):
    run = main_in_process
    labels = [m.label for m in run.experiment.points[0].methods]
    assert len(run.rows) == 2 * len(labels)
    assert [(r["seed"], r["method"]) for r in run.rows] == [(s, m) for s in (0, 1) for m in labels]
    srtf = [r for r in run.rows if r["method"] == "SRTF-Est"]
    assert all(r["n_stopped"] == 0 for r in srtf)
    # the kept runs come back whole, for the plots
    assert sorted(k.method for k in run.kept) == ["EvalStop+SRTF-Est", "SRTF-Est"]
    assert all(k.seed == 0 and k.workload.n_jobs == 40 for k in run.kept)
    assert run.n_sims == 2 * len(labels)


def test_same_numbers_with_one_or_two_workers(main_in_process):
    pooled = run_experiments(select("main"), TINY, workers=2, progress=False)["main"]
    assert len(pooled.rows) == len(main_in_process.rows)
    for a, b in zip(main_in_process.rows, pooled.rows):
        assert a.keys() == b.keys()
        assert all(_same(a[k], b[k]) for k in a), (a, b)


def test_another_base_seed_gives_other_workloads(main_in_process):
    other = run_experiments(select("main"), replace(TINY, base_seed=7, n_seeds=1), workers=1,
                            progress=False)["main"]
    assert other.rows[0]["jct_mean_s"] != main_in_process.rows[0]["jct_mean_s"]


def test_summary_has_ci_and_paired_change(main_in_process):
    rows = summarize(main_in_process.experiment, main_in_process.rows)
    get_row = {(r["method"], r["metric"]): r for r in rows}
    base = get_row[("SRTF-Est", "jct_mean_s")]
    es = get_row[("EvalStop+SRTF-Est", "jct_mean_s")]
    assert base["baseline"] is None and math.isnan(base["delta_pct"])
    seeds = [r["jct_mean_s"] for r in main_in_process.rows if r["method"] == "SRTF-Est"]
    assert base["mean"] == pytest.approx(sum(seeds) / 2) and base["n"] == 2
    assert es["baseline"] == "SRTF-Est"
    assert es["delta_pct"] == pytest.approx(100 * (es["mean"] - base["mean"]) / base["mean"])
    assert 0 <= es["p_value"] <= 1
    assert not any(r["metric"] in ID_COLUMNS for r in rows)
    # Harm and compute saved are levels with a CI (already measured against running to the
    # end): no relative change against a baseline that never stops, just its mean.
    harm = get_row[("EvalStop+SRTF-Est", "harmful_rate")]
    assert 0 <= harm["mean"] <= 1 and harm["n"] == 2
    assert harm["baseline_mean"] == 0.0 and math.isnan(harm["delta_pct"])
    assert math.isnan(harm["p_value"])
    assert get_row[("SRTF-Est", "compute_saved")]["mean"] == 0.0


def test_a_new_experiment_is_just_data():
    # What another study module would define: it runs with no other change.
    exp = Experiment(
        name="tiny-balanced", title="t", question="q", n_gpus=32,
        points=(Point("balanced", {"preset": "balanced"},
                      (Method("FIFO", "fifo"),
                       Method("EvalStop+FIFO", "fifo", "evalstop:k=3", baseline="FIFO"))),))
    run = run_experiments([exp], replace(TINY, n_seeds=1), workers=1, progress=False)
    assert [r["method"] for r in run["tiny-balanced"].rows] == ["FIFO", "EvalStop+FIFO"]
    assert run["tiny-balanced"].n_gpus == 32


def test_bad_worker_count():
    with pytest.raises(ValueError, match="workers"):
        run_experiments(select("main"), TINY, workers=0, progress=False)


def test_summary_statistics_are_computed_once_per_distinct_sample(monkeypatch):
    # The summary remembers each distinct sample's statistics; a repeat must give the very
    # same numbers, and samples equal as floats but not as bits (-0.0 and 0.0) stay apart.
    from evalstop.experiments import aggregate

    calls = []
    real = aggregate.mean_ci

    def counting(values, *a):
        calls.append(tuple(values))
        return real(values, *a)

    monkeypatch.setattr(aggregate, "mean_ci", counting)
    exp = Experiment("memo", "memo", "repeats?",
                     (Point("p", {}, (Method("a", "fifo"), Method("b", "fifo"))),))
    rows = [{"experiment": "memo", "point": "p", "method": m, "x": 0.0, "seed": s,
             "same": 1.0, "zero": z}
            for m, zs in (("a", (0.0, 0.0)), ("b", (-0.0, -0.0))) for s, z in enumerate(zs)]
    out = {(r["method"], r["metric"]): r for r in summarize(exp, rows)}
    assert out[("a", "same")]["mean"] == out[("b", "same")]["mean"] == 1.0
    assert out[("b", "zero")]["mean"] == real([-0.0, -0.0]).mean
    # a: "same" and "zero"; b: "same" repeats a's sample, its -0.0 "zero" does not
    assert [repr(c) for c in calls] == ["(1.0, 1.0)", "(0.0, 0.0)", "(-0.0, -0.0)"]


def test_a_task_declares_its_runs_compiled_loops_before_the_first(monkeypatch):
    """``run_task`` hands ``jit.expect`` each run's loop (``engine.twin_use``) once, before
    any run, so that the twins the runs repay together are loaded for all of them."""
    from evalstop import jit
    from evalstop.experiments.runner import run_task
    from evalstop.sim import engine

    events = []
    monkeypatch.setattr(jit, "expect", lambda uses: events.append(("expect", list(uses))))
    simulate = engine.simulate
    monkeypatch.setattr(engine, "simulate",
                        lambda *a, **k: events.append("simulate") or simulate(*a, **k))
    task = plan(select("scale"), replace(TINY, n_seeds=1))[0]
    task = replace(task, point=replace(task.point, n_jobs=40))
    out = run_task(task)
    (kind, uses), *runs = events
    assert kind == "expect" and runs == ["simulate"] * len(task.point.methods)
    assert len(uses) == len(task.point.methods) == len(out.rows)
    names = {u[0] for u in uses if u is not None}
    assert names == {"evalstop.sim.planned_jit", "evalstop.sim.planned_jit:levels",
                     "evalstop.sim.planned_jit:loss", "evalstop.sim.planned_jit:fixed"}
    assert uses[0] is None and all(u is None or u[1] == 40 for u in uses)  # FIFO: none
