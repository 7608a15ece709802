"""The report: files written, HTML self-contained, the paper's figures beside ours."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import replace

import pytest

from evalstop.experiments import Experiment, Method, Point, Settings, run_experiments, select
from evalstop.experiments.paper import SOURCE, Claim
from evalstop.report import RunInfo, write_report
from evalstop.report.blocks import Bullets, Heading, Image, Para, Table
from evalstop.report.claims import compare, evaluate
from evalstop.report.fmt import pct, pvalue, signed_pct, with_ci
from evalstop.report.html import to_html
from evalstop.report.markdown import to_markdown

TINY = Settings(n_seeds=2, n_jobs=40)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    extra = Experiment(name="extra", title="An added study", question="q?",
                       points=(Point("p", {"preset": "paper"},
                                     (Method("FIFO", "fifo"),
                                      Method("EvalStop+FIFO", "fifo", "evalstop:k=2",
                                             baseline="FIFO"))),))
    runs = run_experiments(select("main,composability,k") + [extra], TINY, workers=1,
                           progress=False)
    files = write_report(runs, out, RunInfo(wall_s=1.0, workers=1, quick=True))
    return out, files


def test_files_exist(report):
    out, files = report
    for name in ("report.md", "report.html", "results.json", "main_runs.csv",
                 "main_summary.csv", "k_summary.csv", "extra_runs.csv"):
        assert (out / name).is_file(), name
    for fig in ("main_examples", "main_occupancy", "composability_bars", "k_rates"):
        png = out / "figures" / f"{fig}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", fig
    assert files.markdown == out / "report.md" and files.html == out / "report.html"


def test_html_is_self_contained(report):
    out, _ = report
    html = (out / "report.html").read_text()
    srcs = re.findall(r'src="([^"]*)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<link" not in html and "http://" not in html and "https://" not in html
    assert "<style>" in html


def test_markdown_puts_the_paper_beside_ours(report):
    out, _ = report
    md = (out / "report.md").read_text()
    assert f"Paper ({SOURCE})" in md
    assert "| EvalStop+SRTF-Est | Precision |" in md and "98.3%" in md and "-9.4%" in md
    assert "FPR (all non-hacking jobs)" in md and "FPR (healthy RLHF jobs only)" in md
    assert "Where ours differs from the paper" in md
    assert "9-25% JCT reduction" in md  # composability claim, checked
    assert "![" in md and "figures/main_examples.png" in md
    assert "An added study (`extra`)" in md  # the generic section for a new experiment
    assert "n/a" in md  # SRTF-Est never stops: its precision is undefined, not 0


def test_harm_and_compute_saved_sit_beside_precision_and_recall(report):
    out, _ = report
    md = (out / "report.md").read_text()
    # main table: a row per figure and method
    for label in ("Harmful stops (share of non-hacking jobs)",
                  "Regret, non-hacking jobs (mean share of gain)",
                  "Compute saved (share of eval intervals)"):
        assert f"| EvalStop+SRTF-Est | {label} |" in md
    # the k sweep, composability and the generic section: columns beside recall/FPR
    head = "| Harmful stops | Regret, non-hacking | Compute saved |"
    assert md.count(head) >= 3
    assert "A false positive stopped in a dip it would only have regained is no harm" in md
    rows = json.loads((out / "results.json").read_text())["experiments"]["main"]
    assert "harmful_rate" in json.dumps(rows) and "compute_saved" in json.dumps(rows)


def test_the_tenant_view_of_harm_is_a_row_of_the_main_table(report):
    out, _ = report
    md = (out / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(
        "| EvalStop+SRTF-Est | Harmful stops, tenant view (share of non-hacking jobs) |"))
    assert "%" in row  # a value, not n/a
    assert "Harmful stops, tenant view: the same question asked of the observed evals" in md
    with open(out / "main_summary.csv") as fh:
        got = {r["method"]: r for r in csv.DictReader(fh) if r["metric"] == "tenant_harmful_rate"}
    assert got["SRTF-Est"]["mean"] == "0.0"  # never stops, so never harms
    assert 0.0 <= float(got["EvalStop+SRTF-Est"]["mean"]) <= 1.0
    assert got["EvalStop+SRTF-Est"]["delta_pct"] == ""  # a level, like the other harm figures


def test_results_are_machine_readable(report):
    out, _ = report
    data = json.loads((out / "results.json").read_text())  # strict JSON: no NaN tokens
    assert set(data["experiments"]) == {"main", "composability", "k", "extra"}
    assert data["settings"]["n_seeds"] == 2
    with open(out / "main_summary.csv") as fh:
        rows = list(csv.DictReader(fh))
    prec = [r for r in rows if r["method"] == "SRTF-Est" and r["metric"] == "precision"]
    assert prec[0]["mean"] == ""  # NaN is an empty cell
    with open(out / "main_runs.csv") as fh:
        from evalstop.experiments.main_table import EXPERIMENT as MAIN
        n_methods = sum(len(point.methods) for point in MAIN.points)
        assert len(list(csv.DictReader(fh))) == 2 * n_methods


def test_blocks_render_the_same_content_both_ways(tmp_path):
    blocks = [Heading(1, "T <x>"), Para("a `code` and **bold**"), Bullets(("one", "two")),
              Table(("a", "b|c"), (("1", "2"),), caption="cap")]
    md = to_markdown(blocks)
    assert "# T <x>" in md and "| a | b\\|c |" in md and "- two" in md
    html = to_html(blocks, tmp_path, "t")
    assert "T &lt;x&gt;" in html and "<code>code</code>" in html
    assert "<strong>bold</strong>" in html and "<caption>cap</caption>" in html
    with pytest.raises(ValueError, match="cells"):
        Table(("a", "b"), (("1",),))
    with pytest.raises(FileNotFoundError):
        to_html([Image("missing.png", "x")], tmp_path, "t")


def test_formatting_writes_nan_as_na():
    assert pct(0.983) == "98.3%" and pct(math.nan) == "n/a" and pct(None) == "n/a"
    assert signed_pct(-9.4) == "-9.4%" and signed_pct(math.nan) == "n/a"
    assert pvalue(0.0001) == "<0.001" and pvalue(0.0312) == "0.031" and pvalue(math.nan) == "n/a"
    row = {"mean": 0.5, "lo": 0.4, "hi": 0.6}
    assert with_ci(row) == "50.0% [40.0, 60.0]"
    assert with_ci({"mean": 0.5, "lo": math.nan, "hi": math.nan}) == "50.0%"
    assert with_ci(None) == "n/a"


def _row(method, x, value, field="mean"):
    r = {"metric": "precision", "method": method, "x": x, "point": f"x={x}",
         "baseline": "B", "mean": math.nan, "delta_pct": math.nan}
    r[field] = value
    return r


def test_claims_are_checked_over_the_selected_rows():
    claim = Claim("s", "precision >= 90% at x <= 0.05", "precision", "mean", "ES", x_max=0.05,
                  low=0.9)
    rows = [_row("ES", 0.01, 0.95), _row("ES", 0.05, 0.92), _row("ES", 0.08, 0.5),
            _row("Other", 0.01, 0.1)]
    text, verdict = evaluate(claim, rows)
    assert verdict == "holds" and "92.0%" in text and "95.0%" in text
    rows[1] = _row("ES", 0.05, 0.8)
    assert evaluate(claim, rows)[1] == (
        "worse than claimed: 1 of 2 values below the claimed range (>= 90.0%); 1 within it")
    assert evaluate(claim, [_row("ES", 0.01, math.nan)]) == ("n/a", "n/a")


@pytest.mark.parametrize("values, verdict", [
    ((-30.0, -12.0), ("better than claimed: 1 of 2 values below the claimed range "
                     "(-25.0% to -9.0%); 1 within it")),
    ((-44.0, -40.0), ("better than claimed: 2 of 2 values below the claimed range "
                     "(-25.0% to -9.0%)")),
    ((-5.0,), "worse than claimed: 1 of 1 values above the claimed range (-25.0% to -9.0%)"),
    ((-30.0, -5.0), ("mixed: 1 of 2 values below the claimed range (-25.0% to -9.0%); "
                    "1 of 2 values above the claimed range (-25.0% to -9.0%)")),
    ((-20.0,), "holds"),
])
def test_a_larger_saving_than_claimed_reads_better_not_failed(values, verdict):
    """Composability claims a 9-25% JCT reduction: a 44% reduction is better than claimed,
    not "does not hold"."""
    claim = Claim("composability", "9-25% JCT reduction", "jct_mean_s", "delta_pct", "ES",
                  low=-25.0, high=-9.0)
    rows = [dict(_row("ES", None, v, "delta_pct"), metric="jct_mean_s",
                 point=f"p{i}", method=f"ES{i}") for i, v in enumerate(values)]
    assert evaluate(claim, rows)[1] == verdict


@pytest.mark.parametrize("metric, field, ours, paper, verdict", [
    ("precision", "mean", 0.602, 0.983, "worse than claimed"),
    ("precision", "mean", 0.975, 0.983, "as claimed"),
    ("fpr", "mean", 0.588, 0.015, "worse than claimed"),
    ("fpr", "mean", 0.001, 0.030, "better than claimed"),
    ("jct_mean_s", "delta_pct", -44.2, -9.4, "better than claimed"),
    ("jct_mean_s", "delta_pct", -1.2, -9.4, "worse than claimed"),
    ("recall", "mean", math.nan, 0.99, "n/a"),
])
def test_one_figure_against_the_papers(metric, field, ours, paper, verdict):
    assert compare(metric, field, ours, paper) == verdict


def test_report_needs_a_run(tmp_path):
    with pytest.raises(ValueError, match="no experiments"):
        write_report({}, tmp_path, RunInfo(wall_s=0.0, workers=1, quick=False))


def test_quick_flag_is_stated(report):
    out, _ = report
    assert "--quick" in (out / "report.md").read_text()
    assert replace(TINY, n_seeds=3).n_seeds == 3


def test_sections_drawn_in_another_process_give_the_same_report(tmp_path, monkeypatch):
    # reproduce hands the heaviest sections to a side process (write_report's executor);
    # the report, its figures and its results must not depend on where they were drawn.
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    from evalstop.report import build

    runs = run_experiments(select("main,k"), TINY, workers=1, progress=False)
    here = write_report(runs, tmp_path / "here", RunInfo(wall_s=1.0, workers=1, quick=True))
    monkeypatch.setattr(build, "HEAVY_SECTIONS", ("main", "k"))
    # spawn: this test process may hold other tests' threads (Ray, torch), which a fork
    # would copy mid-lock
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        there = write_report(runs, tmp_path / "there", RunInfo(wall_s=1.0, workers=1,
                                                                quick=True), executor=pool)
    assert here.markdown.read_text() == there.markdown.read_text()
    assert here.results_json.read_bytes() == there.results_json.read_bytes()
    figs = sorted(p.name for p in (tmp_path / "here" / "figures").glob("*.png"))
    assert figs and figs == sorted(p.name for p in (tmp_path / "there" / "figures").glob("*.png"))
    for name in figs:
        assert (tmp_path / "here" / "figures" / name).read_bytes() == \
            (tmp_path / "there" / "figures" / name).read_bytes(), name


def test_a_study_without_simulations_writes_no_empty_csvs(tmp_path):
    """real_corpus replays the lab's logs and simulates nothing: its results are
    real_corpus_detectors.csv, not a header-only real_corpus_runs.csv beside it."""
    runs = run_experiments(select("main,real_corpus"), TINY, workers=1, progress=False)
    write_report(runs, tmp_path, RunInfo(wall_s=1.0, workers=1, quick=True))
    names = {p.name for p in tmp_path.iterdir()}
    assert "real_corpus_detectors.csv" in names and "main_runs.csv" in names
    assert not names & {"real_corpus_runs.csv", "real_corpus_summary.csv"}


def test_headings_get_github_anchors_and_the_contents_link_them(tmp_path):
    from evalstop.report.blocks import contents, heading_anchors, slug

    assert slug("Main table: RLHF-heavy workload, 64 GPUs (`main`)") == \
        "main-table-rlhf-heavy-workload-64-gpus-main"
    assert slug("The paper's claims at a glance") == "the-papers-claims-at-a-glance"
    blocks = [Heading(1, "T"), Heading(2, "A (`a`)"), Heading(3, "Why"), Para("x"),
              Heading(2, "B"), Heading(3, "Why")]
    assert list(heading_anchors(blocks).values()) == ["t", "a-a", "why", "b", "why-1"]
    toc = contents(blocks)
    assert toc.items == ("[A (`a`)](#a-a): [Why](#why)", "[B](#b): [Why](#why-1)")
    html = to_html([toc, *blocks], tmp_path, "t")
    assert '<h3 id="why-1">Why</h3>' in html
    assert '<a href="#why-1">Why</a>' in html and '<nav class="toc">' in html
    md = to_markdown([toc, *blocks])
    assert "**Contents**\n\n- [A (`a`)](#a-a): [Why](#why)" in md


def test_a_figure_says_how_many_panels_sit_side_by_side(tmp_path):
    from evalstop.report import plots
    from evalstop.report.html import png_text

    path = plots.lines_vs_x(tmp_path / "f.png", [0.1, 0.2],
                            [(f"m{i}", {"a": [(1.0, 0.9, 1.1), (2.0, 1.9, 2.1)]})
                             for i in range(5)], "x", "five panels")
    data = path.read_bytes()
    assert png_text(data, plots.COLUMNS_KEY) == "2"  # five panels: rows of two, not one row
    assert png_text(data, "nothing") is None
    html = to_html([Image("f.png", "five")], tmp_path, "t")
    assert 'data-columns="2"' in html
