"""The ``frontier`` study: what it runs, the frontier read from hand-made summaries (where
the target region is empty and where it is not), and its report section."""

from __future__ import annotations

import math

import pytest

from evalstop.detbench.lineup import LINEUP
from evalstop.experiments import Settings, Summary, run_experiments, select, summarize
from evalstop.experiments import default_rule as dr
from evalstop.experiments import frontier as fr
from evalstop.experiments.sweep_sigma import SIGMAS
from evalstop.report.blocks import Image, Para, Table
from evalstop.report.context import SectionContext
from evalstop.report.markdown import to_markdown
from evalstop.report.sections import section_for
from evalstop.report.sections.frontier import verdict

TINY = Settings(n_seeds=2, n_jobs=40)
K2 = fr.config_label(fr.PAPER, 2)


def test_every_rule_runs_at_every_knob_value_at_every_point():
    exp = fr.EXPERIMENT
    *sweep, lab = exp.points
    assert [p.x for p in sweep] == list(SIGMAS)
    assert lab.label == fr.LAB_POINT and lab.workload["rlhf_curves"] == "lab"
    n_configs = sum(len(c.values) for c in LINEUP)
    n_known = sum(len(c.values) for c in LINEUP if c.knows_noise)
    assert n_known > 0
    for p in exp.points:
        labels = [m.label for m in p.methods]
        assert labels[0] == "SRTF-Est" and labels[-1] == dr.oracle_label(fr.BASE)
        rules = [m for m in p.methods[1:-1]]
        assert all(m.base == "srtf-est" and m.baseline == "SRTF-Est" for m in rules)
        assert not any(m.oracle_hacking_only for m in rules) and p.methods[-1].oracle_hacking_only
        assert next(m.detector for m in rules if m.label == K2) == "evalstop:k=2"
        assert not any("{sigma}" in m.detector for m in rules)
        known = [m.detector for m in rules if m.detector.startswith("cusum-known")]
        if p is lab:  # no single noise to tell it: left out
            assert len(labels) == n_configs - n_known + 2 and not known
        else:
            assert p.workload == {"preset": "paper", "sigma": p.x}
            assert len(labels) == n_configs + 2 and K2 in labels
            assert len(known) == n_known and all(f"sigma={p.x!r}" in d for d in known)


def _cfg(label, precision, gain, known=False, candidate=None, value=0.0):
    return fr.Config(candidate or label, value, label, precision, gain, known)


def _front(*configs, oracle=math.nan, paper=(0.5, 40.0)):
    k2 = fr.Config(fr.PAPER.label, 2.0, K2, *paper, False)
    return fr.PointFrontier("sigma=0.05", (k2, *configs), oracle)


def test_an_empty_target_region_and_what_each_side_of_it_reaches():
    f = _front(_cfg("a", 0.96, 10.0), _cfg("b", 0.99, 5.0), _cfg("c", 0.7, 37.0),
               _cfg("known", 0.97, 12.0, known=True))
    assert f.floor == pytest.approx(36.0)  # 0.9 x 40
    assert f.in_target() == ()
    assert f.best_precise().label == "a"  # eval only: the known-noise rule is left out
    assert f.best_precise(eval_only=False).label == "known"
    assert f.most_precise_at_floor().label == "c"


def test_a_configuration_in_the_target_region_is_found():
    f = _front(_cfg("good", 0.95, 36.0), _cfg("almost", 0.949, 50.0), _cfg("slow", 0.99, 35.9))
    assert [c.label for c in f.in_target()] == ["good"]  # both bars inclusive, each needed
    assert f.best_precise().label == "good"


def test_the_frontier_judged_by_harm():
    def cfg(label, precision, gain, harmful):
        return fr.Config(label, 0.0, label, precision, gain, False, "eval", harmful, 0.1)

    # "sloppy" is imprecise but its false stops are harmless; "precise" harms more
    f = _front(cfg("sloppy", 0.6, 30.0, 0.004), cfg("precise", 0.97, 20.0, 0.03),
               cfg("unknown", 0.99, 90.0, math.nan))
    assert f.best_harmless(0.005).label == "sloppy"
    assert f.best_harmless(0.05).label == "sloppy"  # the higher gain of the two
    assert f.best_harmless(0.001) is None  # and a NaN harm never qualifies
    assert f.best_precise().label == "unknown"  # by precision alone


def test_nan_values_never_qualify():
    f = _front(_cfg("nan-p", math.nan, 50.0), _cfg("nan-g", 1.0, math.nan))
    assert f.best_precise() is None and f.in_target() == ()
    assert f.most_precise_at_floor().label == K2  # the paper rule reaches its own floor


def test_without_the_paper_rule_there_is_no_floor():
    f = fr.PointFrontier("sigma=0.05", (_cfg("a", 0.99, 50.0),))
    assert f.paper is None and math.isnan(f.floor)
    assert f.in_target() == () and f.most_precise_at_floor() is None


def test_frontier_reads_the_summary():
    point, rows = dr.sigma_point(0.05), []
    for c in LINEUP:
        for v in c.values:
            label = fr.config_label(c, v)
            rows.append({"point": point, "method": label, "metric": "precision",
                         "mean": 0.96 if label != K2 else 0.5})
            gain = 40.0 if label == K2 else 99.0 if c.signal == "progress" else v
            rows.append({"point": point, "method": label, "metric": "jct_mean_s", "mean": 1.0,
                         "delta_pct": -gain})
    rows.append({"point": point, "method": dr.oracle_label(fr.BASE), "metric": "jct_mean_s",
                 "mean": 1.0, "delta_pct": -30.0})
    (f,) = fr.frontier(Summary(rows), points=(point,))
    assert f.title == "sigma 0.05"
    assert f.paper.gain == 40.0 and f.oracle_gain == 30.0
    assert len(f.configs) == sum(len(c.values) for c in LINEUP)
    assert {c.knows_noise for c in f.configs} == {True, False}
    best = f.best_precise()
    assert best.gain == max(c.gain for c in f.configs if c.label != K2 and not c.knows_noise
                            and c.signal == "eval")
    # stopat reads no eval: it is left out of the eval-only pool but is in "any rule"
    assert best.candidate == "patience" and f.best_precise(eval_only=False).candidate == "stopat"
    assert {c.candidate for c in f.configs if not c.eval_only} == {
        "cusum-known (noise given)", "stopat", "loss-plateau"}


def _at(sigma, *configs, paper=(0.5, 40.0)):
    k2 = () if paper is None else (fr.Config(fr.PAPER.label, 2.0, K2, *paper, False),)
    return fr.PointFrontier(dr.sigma_point(sigma), (*k2, *configs))


def test_verdict_when_the_target_is_reached():
    text = verdict((_at(0.01, _cfg("good", 0.96, 39.0)), _at(0.02))).text
    assert text.startswith("**Target region reached** at 1 of 2 point(s)") and "good" in text


def test_verdict_shares_are_of_the_paper_gain_over_every_rule():
    fronts = (_at(0.01, _cfg("a", 0.96, 10.0), _cfg("k", 0.99, 20.0, known=True)),
              _at(0.02, _cfg("b", 0.97, 2.0)),
              _at(0.03, _cfg("c", 0.5, 1.0)),  # nothing precise here
              _at(0.05, _cfg("d", 0.99, -5.0), paper=(0.5, -4.0)))  # k=2 loses JCT here
    text = verdict(fronts).text
    assert text.startswith("**No rule reaches the target region at any point**")
    assert "best gain is 5% to 50% of the paper rule's" in text  # 2/40 and 20/40 (noise given)
    assert "no configuration reaches that precision at 1 point(s)" in text
    assert "1 point(s) where the paper rule does not gain left out" in text
    assert "precision of at most 50.0%" in text  # only k=2 reaches its own floor


def test_verdict_without_a_paper_gain_does_not_claim_an_empty_region():
    assert verdict((_at(0.01, _cfg("a", 0.99, 50.0), paper=None),)).text.startswith(
        "**The target region could not be checked**")
    text = verdict((_at(0.01, paper=(0.5, math.nan)), _at(0.02, _cfg("a", 0.7, 39.0)))).text
    assert text.startswith("**No rule reaches the target region at any of the 1 point(s) "
                           "where it can be checked")
    assert "precision of at most 70.0%" in text and "best gain" not in text


def test_verdict_names_a_rule_blind_to_the_eval_only_when_it_keeps_the_gain():
    blind = fr.Config("stopat", 0.5, "stopat p=0.5", 0.47, 45.0, False, "progress")
    assert "which reads no eval, reaches the floor at 1 of 1" in verdict((_at(0.01, blind),)).text
    slow = fr.Config("stopat", 0.8, "stopat p=0.8", 0.47, 10.0, False, "progress")
    assert "reads no eval" not in verdict((_at(0.01, slow),)).text


@pytest.fixture(scope="module")
def run():
    return run_experiments(select("frontier"), TINY, workers=1, progress=False)["frontier"]


def test_section_renders(run, tmp_path):
    summary = Summary(summarize(run.experiment, run.rows))
    blocks = section_for("frontier")(SectionContext(run, summary, tmp_path))
    md = to_markdown(blocks)
    assert "The target region" in md and "What precision costs" in md
    target = next(b for b in blocks if isinstance(b, Table) and "Floor" in b.header[3])
    assert [r[0] for r in target.rows] == [*(f"sigma {s:g}" for s in SIGMAS),
                                           "lab curves (own noise)"]
    trade = next(b for b in blocks if isinstance(b, Table) and b.header[0] == "Precision at least")
    assert len(trade.rows) == 7 and len(trade.header) == 2 + len(SIGMAS)
    harm = next(b for b in blocks if isinstance(b, Table)
                and b.header[0] == "Harmful stops at most")
    assert harm.rows[0][0] == "k=2 itself" and "harmful" in harm.rows[0][1]
    assert "What harm costs" in md
    verdict = next(b for b in blocks if isinstance(b, Para) and "arget region" in b.text
                   and b.text.startswith("**"))
    fronts = fr.frontier(summary)
    reached = any(f.in_target() for f in fronts)
    assert verdict.text.startswith("**Target region reached" if reached else "**No rule")
    images = [b for b in blocks if isinstance(b, Image)]
    assert len(images) == 1 and (tmp_path / images[0].path).is_file()


def test_a_point_that_did_not_run_a_rule_leaves_it_out():
    point, rows = fr.LAB_POINT, []
    for c in LINEUP:
        if c.knows_noise:
            continue
        for v in c.values:
            rows.append({"point": point, "method": fr.config_label(c, v), "metric": "jct_mean_s",
                         "mean": 1.0, "delta_pct": -1.0})
    (f,) = fr.frontier(Summary(rows), points=(point,))
    assert f.configs and not any(c.knows_noise for c in f.configs)
    assert f.title == "lab curves (own noise)"
