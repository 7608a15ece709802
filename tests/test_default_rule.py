"""The ``default_rule`` study: what it runs, its report section, and the issue's target
check on hand-made summaries (where it must pass and where it must fail)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import make_workload

from evalstop.detectors import DEFAULT_SPEC, canonical
from evalstop.experiments import Settings, Summary, run_experiments, select, summarize
from evalstop.experiments import default_rule as dr
from evalstop.experiments.methods import EVALSTOP_SPEC
from evalstop.experiments.runner import hacking_jobs
from evalstop.experiments.spec import Method
from evalstop.report.blocks import Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.markdown import to_markdown
from evalstop.report.sections import section_for
from evalstop.schedulers import SCHEDULERS, build
from evalstop.sim.engine import simulate

TINY = Settings(n_seeds=2, n_jobs=40)


@pytest.fixture(scope="module")
def run():
    return run_experiments(select("default_rule"), TINY, workers=1,
                           progress=False)["default_rule"]


def test_it_runs_both_rules_beside_each_base(run):
    exp = run.experiment
    paper = exp.points[0]
    assert paper.label == dr.PAPER_POINT and paper.workload == {"preset": "paper"}
    assert exp.n_gpus == 64
    for base in SCHEDULERS:
        specs = {m.label: m.detector for m in paper.methods if m.base == base}
        expected = {dr.bare(base).label: None, dr.paper_label(base): EVALSTOP_SPEC,
                    dr.default_label(base): canonical(DEFAULT_SPEC)}
        if base == dr.MAIN_BASE:  # the oracle and the known-noise rule on SRTF-Est only
            expected[dr.oracle_label(base)] = EVALSTOP_SPEC
            expected[dr.known_label(base)] = "cusum-known:sigma=0.02"  # the paper's noise
        assert specs == expected
    oracles = [m for p in exp.points for m in p.methods if m.oracle_hacking_only]
    assert len(oracles) == len(exp.points)  # one per point
    assert all(m.base == dr.MAIN_BASE and "oracle" in m.label for m in oracles)
    sigmas = [p.x for p in exp.points[1:]]
    assert sigmas == [0.01, 0.02, 0.03, 0.05, 0.08, 0.12]
    for p in exp.points[1:]:
        assert p.workload == {"preset": "paper", "sigma": p.x}
        assert [m.label for m in p.methods] == ["SRTF-Est", "EvalStop+SRTF-Est",
                                                "Default+SRTF-Est",
                                                "EvalStop+SRTF-Est (oracle: true stops only)",
                                                "Known-noise+SRTF-Est"]
        assert p.methods[-1].detector == f"cusum-known:sigma={p.x:g}"  # told its point's noise
    # every method of every point on both seeds
    n_methods = sum(len(p.methods) for p in exp.points)
    assert len(run.rows) == n_methods * TINY.n_seeds == run.n_sims


def test_the_default_is_compared_with_the_bare_base(run):
    summary = Summary(summarize(run.experiment, run.rows))
    r = summary.get("sigma=0.01", "Default+SRTF-Est", "jct_mean_s")
    assert r["baseline"] == "SRTF-Est" and math.isfinite(r["delta_pct"])
    check = dr.target_check(summary)
    assert [c.sigma for c in check.per_sigma] == [0.01, 0.02, 0.03, 0.05, 0.08, 0.12]


def test_section_renders_every_part(run, tmp_path):
    ctx = SectionContext(run, Summary(summarize(run.experiment, run.rows)), tmp_path)
    blocks = section_for("default_rule")(ctx)
    md = to_markdown(blocks)
    for text in ("Main table: SRTF-Est with either rule", "Composability", "Eval noise sweep",
                 "The issue's target", "Tiresias", canonical(DEFAULT_SPEC)):
        assert text in md, text
    assert any(isinstance(b, Para) and b.text.startswith("**Target ") for b in blocks)
    images = [b for b in blocks if isinstance(b, Image)]
    assert images and all((tmp_path / b.path).is_file() for b in images)
    target = next(b for b in blocks if isinstance(b, Table) and b.header[0] == "sigma"
                  and "Both hold?" in b.header)
    assert len(target.rows) == 6
    assert "Where the paper rule's JCT gain comes from" in md
    assert "not deployable" in md
    decomp = next(b for b in blocks if isinstance(b, Table) and b.header[0] == "sigma"
                  and "Default gain / oracle gain" in b.header)
    assert len(decomp.rows) == 6
    assert "With the eval noise known" in md and "eval noise given" in md
    known = next(b for b in blocks if isinstance(b, Table) and "Precision, known noise"
                 in b.header)
    assert [r[0] for r in known.rows] == ["0.01", "0.02", "0.03", "0.05", "0.08", "0.12"]
    if "**JCT gain.**" in md:  # the failure's explanation quotes the oracle's measurement
        assert "The oracle below measures that part" in md


def test_header_names_every_spec_a_method_ran_with(run, tmp_path):
    """Known-noise+SRTF-Est runs a different sigma at each point; the setup list must not
    name only the first point's spec."""
    from evalstop.report.sections.common import header

    ctx = SectionContext(run, Summary(summarize(run.experiment, run.rows)), tmp_path)
    md = to_markdown(header(ctx))
    line = next(x for x in md.splitlines() if "**Known-noise+SRTF-Est**" in x)
    for p in run.experiment.points:
        spec = next(m.detector for m in p.methods if m.label == dr.known_label(dr.MAIN_BASE))
        assert f"`{spec}`" in line, (spec, line)


def test_oracle_stops_only_true_stops_of_k2_in_the_study(run):
    """Through the runner: per point and seed, the oracle's stops are k=2's true stops."""
    rows = {(r["point"], r["method"], r["seed"]): r for r in run.rows}
    n_tp = 0
    for p in run.experiment.points:
        for seed in range(TINY.n_seeds):
            k2 = rows[(p.label, dr.paper_label(dr.MAIN_BASE), seed)]
            orc = rows[(p.label, dr.oracle_label(dr.MAIN_BASE), seed)]
            assert orc["fp"] == 0
            assert orc["tp"] == k2["tp"] == orc["n_stopped"]
            n_tp += orc["tp"]
    assert n_tp > 0  # the check above is not vacuous


# --- the target check on hand-made summaries ---------------------------------------------

def _summary(cells: dict[float, tuple[float, ...]]) -> Summary:
    """sigma -> (paper precision, default precision, paper JCT change %, default JCT change
    % [, oracle JCT change %]), as the summary rows the check reads."""
    rows = []
    for s, (pp, dp, pd, dd, *od) in cells.items():
        point = dr.sigma_point(s)
        methods = [("EvalStop+SRTF-Est", pp, pd), ("Default+SRTF-Est", dp, dd)]
        if od:
            methods.append(("EvalStop+SRTF-Est (oracle: true stops only)", 1.0, od[0]))
        for method, prec, delta in methods:
            rows.append({"point": point, "method": method, "metric": "precision", "mean": prec})
            rows.append({"point": point, "method": method, "metric": "jct_mean_s",
                         "mean": 1.0, "delta_pct": delta})
    return Summary(rows)


def _check(cells):
    return dr.target_check(_summary(cells), sigmas=tuple(cells))


def test_target_met_where_the_default_keeps_precision_and_most_of_the_gain():
    check = _check({0.01: (0.99, 0.80, -30.0, -5.0),  # paper rule above the bar: out of scope
                    0.05: (0.60, 0.97, -20.0, -19.0),  # 19 >= 0.9 x 20
                    0.12: (0.50, 0.95, -20.0, -25.0)})  # exactly at the bar; larger gain
    assert [c.in_scope for c in check.per_sigma] == [False, True, True]
    assert check.met
    assert all(c.holds for c in check.in_scope)
    assert check.per_sigma[1].gain_floor == pytest.approx(18.0)


def test_target_is_vacuous_when_the_paper_rule_keeps_its_precision():
    check = _check({0.01: (0.96, 0.10, -30.0, 0.0)})
    assert not check.in_scope and check.met


@pytest.mark.parametrize("cell, precision_ok, gain_ok", [
    ((0.60, 0.94, -20.0, -19.0), False, True),  # precision below the bar
    ((0.60, 0.97, -20.0, -17.0), True, False),  # 17 < 18: more than 10% less gain
    ((0.60, 0.90, -20.0, -2.0), False, False),  # both
    ((0.60, math.nan, -20.0, 0.0), False, False),  # default never stops: undefined precision
    ((0.60, 0.97, -20.0, math.nan), True, False),  # gain undefined
])
def test_target_fails_when_either_part_fails(cell, precision_ok, gain_ok):
    check = _check({0.03: (0.60, 0.99, -20.0, -20.0), 0.08: cell})
    c = check.per_sigma[1]
    assert (c.in_scope, c.precision_ok, c.gain_ok) == (True, precision_ok, gain_ok)
    assert not check.met
    assert check.per_sigma[0].holds  # the other sigma is judged on its own


def test_negative_gain_floor_is_ten_percent_of_its_size():
    # The paper rule lengthens JCT by 10% (gain -10): the default may lose at most 11%.
    ok = _check({0.05: (0.5, 0.99, 10.0, 10.5)}).per_sigma[0]
    bad = _check({0.05: (0.5, 0.99, 10.0, 12.0)}).per_sigma[0]
    assert ok.gain_floor == pytest.approx(-11.0)
    assert ok.gain_ok and not bad.gain_ok


def test_undefined_paper_precision_counts_as_in_scope():
    check = _check({0.05: (math.nan, 0.99, -20.0, -19.0)})
    assert check.per_sigma[0].in_scope and check.met


# --- the oracle: k=2 with its true stops only -----------------------------------------------

@pytest.mark.parametrize("base", ["srtf-est", "fifo"])
def test_oracle_applies_exactly_the_true_stops_of_k2(base):
    rng = np.random.default_rng(7)
    n = 40
    w = make_workload(np.sort(rng.integers(0, 100, n)).astype(float),
                      rng.integers(5, 60, n).astype(float), rng.integers(1, 3, n),
                      evals=rng.random((n, 8)), hacking=rng.random(n) < 0.5,
                      est=rng.integers(5, 60, n).astype(float))
    plain = simulate(w, 3, build(base, EVALSTOP_SPEC))
    sched = dr.oracle(base).build(hacking_jobs(w))
    assert sched.only_jobs == set(np.flatnonzero(w.hacking))
    assert sched.name.endswith("+oracle")
    orc = simulate(w, 3, sched)
    # the workload gives k=2 both kinds of stops, so the checks below can fail
    assert (plain.stopped & w.hacking).any() and (plain.stopped & ~w.hacking).any()
    assert not (orc.stopped & ~w.hacking).any()  # never a healthy job
    assert (orc.stop_eval[~w.hacking] == -1).all()
    assert (orc.stopped[w.hacking] == plain.stopped[w.hacking]).all()
    assert (orc.stop_eval[w.hacking] == plain.stop_eval[w.hacking]).all()
    assert (orc.kept_eval[w.hacking] == plain.kept_eval[w.hacking]).all()
    # the healthy jobs k=2 killed run to their last eval instead
    assert (orc.end_progress[plain.stopped & ~w.hacking] == 1.0).all()


def test_oracle_method_needs_its_allow_list_and_others_refuse_one():
    with pytest.raises(ValueError, match="allow-list"):
        dr.oracle("srtf-est").build()
    with pytest.raises(ValueError, match="not an oracle"):
        Method("EvalStop+SRTF-Est", "srtf-est", EVALSTOP_SPEC).build(frozenset({1}))
    with pytest.raises(ValueError, match="needs a detector"):
        Method("x", "srtf-est", oracle_hacking_only=True)


def test_target_check_reports_the_default_share_of_the_oracle_gain():
    # k=2 gains 20%, its true stops alone 8%, the default 6%: the default earns 75% of the
    # true-stop gain while the literal target (>= 18) still fails.
    check = _check({0.05: (0.60, 0.97, -20.0, -6.0, -8.0),
                    0.08: (0.60, 0.97, -20.0, -19.0, -10.0),  # default beats the oracle
                    0.12: (0.60, 0.97, -20.0, -5.0, 0.0)})  # oracle gains nothing: undefined
    a, b, c = check.per_sigma
    assert (a.oracle_gain, a.oracle_precision) == (8.0, 1.0)
    assert a.default_share == pytest.approx(0.75)
    assert a.true_stop_share == pytest.approx(0.4)
    assert not a.gain_ok and not a.holds  # the verdict is the literal target's
    assert b.default_share == pytest.approx(1.9) and b.holds
    assert math.isnan(c.default_share) and c.true_stop_share == 0.0
    assert not check.met


def test_target_check_without_the_oracle_leaves_the_decomposition_undefined():
    c = _check({0.05: (0.60, 0.97, -20.0, -19.0)}).per_sigma[0]
    assert math.isnan(c.oracle_gain) and math.isnan(c.default_share)
    assert c.holds  # unchanged by the missing oracle


def test_why_text_says_most_of_the_gap_only_when_measured_so():
    from evalstop.report.sections.default_rule import _gap_lead

    # k=2 gains 20, its true stops 18, the default 6: recall/timing (12) > false stops (2)
    most = _check({0.05: (0.60, 0.97, -20.0, -6.0, -18.0)}).per_sigma
    assert _gap_lead(most).startswith("Most of the gap")
    # k=2 gains 20, its true stops 8, the default 6: false stops (12) > recall/timing (2)
    less = _check({0.05: (0.60, 0.97, -20.0, -6.0, -8.0)}).per_sigma
    assert not _gap_lead(less).startswith("Most")
