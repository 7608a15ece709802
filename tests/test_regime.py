"""The ``regime`` sensitivity study: what it runs and its report section."""

from __future__ import annotations

import pytest

from evalstop.experiments import Settings, Summary, run_experiments, select, summarize
from evalstop.report.context import SectionContext
from evalstop.report.markdown import to_markdown
from evalstop.report.sections import section_for

TINY = Settings(n_seeds=2, n_jobs=40)


@pytest.fixture(scope="module")
def run():
    return run_experiments(select("regime"), TINY, workers=1, progress=False)["regime"]


def test_grid_of_eval_frequency_and_load(run):
    pts = run.experiment.points
    assert {(p.workload["eval_interval"], p.workload["load"]) for p in pts} == {
        (iv, load) for iv in (0.05, 0.1, 0.2) for load in (0.5, 0.7, 0.9)}
    assert len(run.rows) == sum(len(p.methods) for p in pts) * TINY.n_seeds


def test_fewer_evals_never_add_false_stops_here(run):
    # Fewer evals per run give fewer chances for two chance declines: on the same seeds the
    # false stops of the all-jobs rule do not grow as the interval widens.
    fp = {}
    for r in run.rows:
        if r["method"] == "EvalStop+SRTF-Est" and r["point"].endswith("load 0.9"):
            fp.setdefault(r["point"], 0)
            fp[r["point"]] += r["fp"]
    series = [fp[f"evals every {iv:g}, load 0.9"] for iv in (0.05, 0.1, 0.2)]
    assert series == sorted(series, reverse=True)


def test_section_names_the_closest_setting(run, tmp_path):
    ctx = SectionContext(run, Summary(summarize(run.experiment, run.rows)), tmp_path)
    md = to_markdown(section_for("regime")(ctx))
    assert "Closest to the paper" in md and "evals every 0.1, load 0.7" in md
