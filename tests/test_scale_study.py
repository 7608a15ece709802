"""The ``scale`` study: opt-in, every base with and without both rules, Philly's real jobs,
fixed sizes per point. Run here at toy sizes (the real sizes are for a cluster)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from evalstop.experiments import FULL, select
from evalstop.experiments.registry import OPT_IN
from evalstop.experiments.runner import make_workload, plan, run_tasks
from evalstop.experiments.scale import EXPERIMENT, GPUS, SYNTHETIC_JOBS, make_experiment
from evalstop.experiments.spec import Point
from evalstop.schedulers import SCHEDULERS


def test_scale_is_opt_in():
    assert "scale" in OPT_IN
    assert "scale" not in [e.name for e in select(None)]
    assert [e.name for e in select("main,scale")] == ["main", "scale"]


def test_scale_has_every_base_with_both_rules_at_full_size():
    philly, synthetic = EXPERIMENT.points
    assert philly.trace == "philly" and philly.n_jobs is None  # the whole trace
    assert synthetic.trace is None and synthetic.n_jobs == SYNTHETIC_JOBS == 1_000_000
    for point in EXPERIMENT.points:
        assert point.n_gpus == GPUS
        assert len(point.methods) == 3 * len(SCHEDULERS)
        specs = {m.detector for m in point.methods}
        assert None in specs and "evalstop:k=2" in specs and len(specs) == 3


def test_point_refuses_an_unknown_trace():
    with pytest.raises(ValueError, match="unknown trace 'alibaba'"):
        Point("p", {}, (), trace="alibaba")


def test_toy_scale_runs_with_the_points_own_sizes():
    exp = make_experiment(synthetic_jobs=150, philly_jobs=120, gpus=256)
    settings = replace(FULL, n_seeds=2, n_jobs=300)
    tasks = plan([exp], settings)
    assert [t.n_gpus for t in tasks] == [256] * 4
    wl = make_workload(tasks[0].point, 0, settings, 256)
    assert wl.n_jobs == 120 and wl.job_id[0].startswith("philly-")  # the trace's jobs
    assert make_workload(tasks[2].point, 0, settings, 256).n_jobs == 150  # not settings'
    outs = run_tasks(tasks, workers=1, progress=False)
    rows = [r for o in outs for r in o.rows]
    assert len(rows) == 4 * 3 * len(SCHEDULERS)
    stopped = [r for r in rows if r["method"].startswith(("EvalStop+", "Default+"))]
    assert all(r["n_stopped"] > 0 for r in stopped)  # the rules do stop jobs here
    assert all(r["n_stopped"] == 0 for r in rows if r not in stopped)
    assert {r["n_jobs"] for r in rows} == {120, 150}


def test_toy_scale_reports_with_the_generic_section(tmp_path):
    from evalstop.experiments import run_experiments
    from evalstop.report import RunInfo, write_report

    exp = make_experiment(synthetic_jobs=100, philly_jobs=100, gpus=128)
    runs = run_experiments([exp], replace(FULL, n_seeds=2), workers=1, progress=False)
    files = write_report(runs, tmp_path, RunInfo(wall_s=0.0, workers=1, quick=False))
    md = files.markdown.read_text()
    assert exp.title in md and "Default+Tiresias" in md
    assert (tmp_path / "scale_summary.csv").is_file()


def test_a_trace_of_ones_own_replaces_philly_and_travels_with_its_tasks():
    import pickle

    from evalstop.experiments.registry import with_trace
    from evalstop.workload import JobTable

    table = JobTable(job_id=["x", "y", "z"], arrival_s=np.array([0.0, 5.0, 9.0]),
                     duration_s=np.array([60.0, 30.0, 90.0]), gpus=np.array([1, 2, 1]),
                     source="mine.csv")
    (exp,) = with_trace(select("main,scale"), table, n_gpus=4)  # main has no trace point
    assert exp.name == "scale" and exp.n_gpus == 4
    assert [(p.label, p.n_gpus) for p in exp.points] == [("trace", 4)]
    assert "the 3 jobs of mine.csv, on 4 GPUs" in exp.question
    settings = replace(FULL, n_seeds=1)
    (task, *_) = plan([exp], settings)
    task = pickle.loads(pickle.dumps(task))  # a worker process (or Ray) gets the jobs
    assert make_workload(task.point, 0, settings, task.n_gpus).job_id == ["x", "y", "z"]
    with pytest.raises(ValueError, match="none of the selected studies replays a trace"):
        with_trace(select("main"), table)
