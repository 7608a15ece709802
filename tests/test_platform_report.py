"""The report's first screen and the `platform` section (issue 44): one study's numbers."""

import math

import pytest

from evalstop.experiments import Settings, run_experiments, select
from evalstop.experiments.aggregate import Summary, summarize
from evalstop.experiments.methods import DEFAULT_SRTF, EVALSTOP_SRTF, SRTF
from evalstop.experiments.platform import FALLS, FITTED_POINT, LAB_POINT, PEAKS, map_point
from evalstop.report import RunInfo, write_report
from evalstop.report.blocks import Bullets, Table
from evalstop.report.sections.platform import map_range, rule_figures
from evalstop.report.verdict import first_screen

SMALL = Settings(n_seeds=2, n_jobs=40)


@pytest.fixture(scope="module")
def platform_run():
    return run_experiments(select("platform"), SMALL, workers=1, progress=False)


@pytest.fixture(scope="module")
def summary(platform_run):
    run = platform_run["platform"]
    return Summary(summarize(run.experiment, run.rows))


def test_the_study_runs_the_fitted_workload_lab_runs_and_the_map(platform_run):
    exp = platform_run["platform"].experiment
    labels = [p.label for p in exp.points]
    assert labels[:2] == [FITTED_POINT, LAB_POINT]
    assert len(labels) == 2 + len(PEAKS) * len(FALLS)
    assert all(p.workload["preset"] == "fitted" for p in exp.points)
    assert {m.label for p in exp.points for m in p.methods} == {
        SRTF.label, DEFAULT_SRTF.label, EVALSTOP_SRTF.label}


def test_rule_figures_are_the_summary_s_waste_against_no_rule(summary):
    f = rule_figures(summary, FITTED_POINT, DEFAULT_SRTF.label)
    base = summary.value(FITTED_POINT, SRTF.label, "waste_gpu_h")
    own = summary.value(FITTED_POINT, DEFAULT_SRTF.label, "waste_gpu_h")
    assert f["freed_gpu_h"] == pytest.approx(base - own)
    assert f["freed_share"] == pytest.approx(-summary.value(
        FITTED_POINT, DEFAULT_SRTF.label, "waste_gpu_h", "delta_pct") / 100)
    assert f["recall"] == summary.value(FITTED_POINT, DEFAULT_SRTF.label, "recall")


def test_hacking_runs_that_fall_further_leave_more_to_free(summary):
    """The map's one robust ordering: doubling every fall frees more than halving it."""
    for peak in PEAKS:
        far = rule_figures(summary, map_point(peak, FALLS[-1]), DEFAULT_SRTF.label)
        near = rule_figures(summary, map_point(peak, FALLS[0]), DEFAULT_SRTF.label)
        assert far["freed_share"] > near["freed_share"]
    lo, hi = map_range(summary, DEFAULT_SRTF.label)
    assert 0.0 < lo < hi <= 1.0


def test_the_first_screen_reads_the_platform_study_alone(summary):
    bullets, table = first_screen({"platform": summary})
    assert isinstance(bullets, Bullets) and isinstance(table, Table)
    lines = bullets.items
    assert [line.split("**")[1] for line in lines] == [
        "What would a platform save?", "And with real runs?", "Where does my fleet sit?",
        "Does the paper's result hold in its own setting?"]
    assert all("`platform`" in line for line in lines[:3])
    assert "Not measured" in lines[3] and "`main`" in lines[3]
    d = rule_figures(summary, FITTED_POINT, DEFAULT_SRTF.label)
    assert f"{100 * d['freed_share']:.0f}%" in lines[0]
    # Every number of the table is the platform study's; each rule once per point.
    rules = [row[1] for row in table.rows]
    assert rules.count("`default`") == 2 and rules.count("`evalstop:k=2`") == 2
    assert "`platform` study" in table.caption
    text = " ".join(lines)
    assert "default_rule" not in text and "calibrated" not in text


def test_the_first_screen_says_so_when_the_platform_study_did_not_run():
    (bullets,) = first_screen({})
    assert bullets.items[0].startswith("**What would a platform save?** Not measured")


def test_the_report_holds_the_fit_section_and_its_figures(platform_run, tmp_path):
    files = write_report(platform_run, tmp_path, RunInfo(wall_s=1.0, workers=1, quick=True))
    md = files.markdown.read_text()
    assert "The fit: held-out real runs against the generators" in md
    assert (tmp_path / "figures" / "platform_savings_map.png").is_file()
    assert (tmp_path / "figures" / "platform_fit.png").is_file()
    assert "calibrated" not in md
    fit_rows = [line for line in md.splitlines() if line.startswith("| hacking peak")]
    assert len(fit_rows) == 1 and fit_rows[0].rstrip(" |").endswith("yes")
    assert not math.isnan(rule_figures(Summary(summarize(
        platform_run["platform"].experiment, platform_run["platform"].rows)),
        LAB_POINT, EVALSTOP_SRTF.label)["harmful"])
