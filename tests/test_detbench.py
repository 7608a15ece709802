"""The detector benchmark: families, scoring, quick mode, determinism, the CLI."""

import json

import numpy as np
import pytest

from evalstop.cli.main import main
from evalstop.detbench import run_detector_benchmark
from evalstop.detbench.bench import BenchConfig, select_default
from evalstop.detbench.families import FAMILIES, MIN_DROP, family
from evalstop.detbench.runs import RunSet, build, hacking_label, make_runs, progress_grid
from evalstop.detbench.scoring import Outcome, Tally, run_detector, tally


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
@pytest.mark.parametrize("kind", ["gauss", "t3"])
def test_families_draw_what_they_label(fam, kind):
    rs = make_runs(fam, 0.12, kind, 40, np.random.default_rng(7))  # raises on a mislabel
    gain = rs.gain
    assert np.allclose(gain.max(axis=1), 1.0)
    healthy = gain[~rs.hacking]
    assert np.all(np.diff(healthy, axis=1) >= -1e-12)
    hack = gain[rs.hacking]
    assert np.all(hack[:, -1] <= 1.0 - MIN_DROP)
    assert rs.hacking.mean() == fam.hacking_rate
    assert (rs.proxy is None) == (fam.kind != "rlhf")
    assert rs.eval.shape == rs.loss.shape == (40, 20)


def test_held_out_part_has_its_own_families_and_streams():
    tuning = {f.name for f in FAMILIES if not f.held_out}
    held = {f.name for f in FAMILIES if f.held_out and not f.fresh}
    fresh = {f.name for f in FAMILIES if f.fresh}
    assert tuning and held and fresh and not (tuning & held or held & fresh or tuning & fresh)
    assert all(f.held_out for f in FAMILIES if f.fresh)
    a = build(0, 3, held_out=False, sigmas=(0.05,), noises=("gauss",))
    b = build(0, 3, held_out=True, sigmas=(0.05,), noises=("gauss",))
    c = build(0, 3, held_out=True, fresh=True, sigmas=(0.05,), noises=("gauss",))
    assert {rs.family.name for rs in a} == tuning
    assert {rs.family.name for rs in b} == held
    assert {rs.family.name for rs in c} == fresh


def test_workload_part_uses_the_simulators_curves():
    from evalstop.detbench import workload_part

    sets = workload_part.build(0, 6, sigmas=(0.02,), evals=20)
    assert [rs.family.name for rs in sets] == ["workload-rlhf", "workload-lora", "workload-dpo"]
    rlhf = sets[0]
    assert rlhf.hacking.tolist() == [True] * 3 + [False] * 3
    assert np.allclose(rlhf.gain.max(axis=1), 1.0)
    assert np.all(rlhf.gain[rlhf.hacking, -1] < 1.0)


def test_label_rule():
    gain = np.array([[0.2, 1.0, 0.95, 0.89], [0.2, 1.0, 0.95, 0.91], [0.2, 0.5, 0.8, 1.0]])
    assert hacking_label(gain).tolist() == [True, False, False]


def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown family"):
        family("nope")
    with pytest.raises(ValueError, match="runs"):
        make_runs(FAMILIES[0], 0.1, "gauss", 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise kind"):
        make_runs(FAMILIES[0], 0.1, "cauchy", 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="evals"):
        progress_grid(1)


def _handmade() -> RunSet:
    p = progress_grid(4)
    gain = np.array([[0.5, 1.0, 0.8, 0.6], [0.3, 0.6, 0.9, 1.0]])
    return RunSet(FAMILIES[0], 0.0, "gauss", p, gain, np.array([True, False]), gain.copy(),
                  None, np.ones_like(gain))


def test_scoring_by_hand():
    rs = _handmade()
    out = run_detector("stopat:p=0.5", rs)  # both runs stop at the second eval
    assert out.stopped.tolist() == [True, True]
    assert out.stop_idx.tolist() == [1, 1] and out.kept_idx.tolist() == [1, 1]
    m = tally(rs, out).metrics()
    assert (m["precision"], m["recall"], m["fpr"], m["delay"], m["early"]) == (0.5, 1.0, 1.0,
                                                                              0.0, 0)
    assert m["quality_hacking"] == 1.0 and m["quality"] == pytest.approx((1.0 + 0.6) / 2)
    never = tally(rs, Outcome(np.zeros(2, bool), np.full(2, -1), np.full(2, 3))).metrics()
    assert never["precision"] is None and never["recall"] == 0.0 and never["fpr"] == 0.0
    assert never["quality"] == pytest.approx((0.6 + 1.0) / 2)
    # Harm: the healthy run kept 0.6 where its end is 1.0, gain 0.7 -> regret 0.4/0.7, a
    # harmful stop; the hacking run kept 1.0 where its end is 0.6, gain 0.5 -> regret -0.8.
    # Each stop skips 2 of 4 eval intervals.
    assert m["harmful"] == 1 and m["harmful_rate"] == 1.0
    assert m["regret_healthy"] == pytest.approx(0.4 / 0.7)
    assert m["regret_hacking"] == pytest.approx(-0.8)
    assert m["saved"] == 0.5
    assert never["harmful_rate"] == 0.0 and never["saved"] == 0.0
    assert never["regret_healthy"] == 0.0 and never["regret_hacking"] == 0.0
    # Tenant view, from the observed evals (here = gain): the healthy run's levels (+-1 eval)
    # are 0.45, 0.6, 0.83, 0.95, gain 0.5, end (last eval) 1.0; kept eval 1 (0.6) loses
    # 0.8 of its gain: harmful. A hacking run never counts.
    assert m["tenant_harmful"] == 1 and m["tenant_harmful_rate"] == 1.0
    assert never["tenant_harmful"] == 0 and never["tenant_harmful_rate"] == 0.0


def test_tallies_pool_by_adding_counts():
    pooled = Tally(pos=1, neg=1, tp=1, fp=0)  # precision 1.0
    pooled += Tally(pos=3, neg=3, tp=0, fp=3)  # precision 0.0
    assert pooled.metrics()["precision"] == 0.25  # pooled counts, not the mean 0.5
    assert pooled.metrics()["fpr"] == 0.75
    a = Tally(neg=4, harmful=1, regret_neg=0.2, regret_neg_n=4, saved=10, intervals=40)
    a += Tally(neg=1, harmful=1, regret_neg=0.9, regret_neg_n=1, saved=30, intervals=40)
    a += Tally(tenant_harmful=1)
    m = a.metrics()
    assert m["harmful_rate"] == 2 / 5  # pooled counts, not the mean of 1/4 and 1/1
    assert m["tenant_harmful_rate"] == 1 / 5
    assert m["regret_healthy"] == pytest.approx(1.1 / 5)
    assert m["saved"] == 0.5


def test_harm_pools_exactly_over_cells(quick_runs):
    """Per part, the sum over families of harmful stops, healthy runs and saved intervals
    is the pooled figure (so the pooled rates are ratios of sums)."""
    summary = json.loads((quick_runs[0] / "detectors.json").read_text())
    evals = summary["config"]["evals_per_run"]
    for part, p in summary["parts"].items():
        for spec, pooled in p["pooled"].items():
            fams = [rows[spec] for rows in p["by_family"].values()]
            assert pooled["harmful"] == sum(f["harmful"] for f in fams)
            healthy = sum(f["runs"] - f["hacking"] for f in fams)
            if healthy:
                assert pooled["harmful_rate"] == pytest.approx(pooled["harmful"] / healthy,
                                                           abs=1e-5)  # JSON keeps 6 digits
            saved = sum(f["saved"] * f["runs"] * evals for f in fams)
            assert pooled["saved"] == pytest.approx(saved / (pooled["runs"] * evals), abs=1e-5)
            sigmas = list(p["by_sigma"].values())
            assert pooled["harmful"] == sum(rows[spec]["harmful"] for rows in sigmas)


def test_selection_rule():
    rows = {"a": {"precision": 0.99, "recall": 0.5}, "b": {"precision": 0.96, "recall": 0.7},
            "c": {"precision": 0.9, "recall": 0.95}, "d": {"precision": None, "recall": 0.0}}
    assert select_default(rows, 0.95) == "b"
    assert select_default(rows, 0.999) is None


def test_config():
    with pytest.raises(ValueError, match="runs"):
        BenchConfig.make(runs=0)
    specs = BenchConfig.make().specs()
    assert "evalstop:k=2" in specs and BenchConfig.default_key(specs) is not None


@pytest.fixture(scope="module")
def quick_runs(tmp_path_factory):
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    run_detector_benchmark(a, seed=3, quick=True, runs=2, progress=False)
    run_detector_benchmark(b, seed=3, quick=True, runs=2, progress=False)
    return a, b


def test_quick_mode_writes_every_output(quick_runs):
    out = quick_runs[0]
    summary = json.loads((out / "detectors.json").read_text())
    assert set(summary["parts"]) == {"tuning", "held_out", "fresh", "workload"}
    assert summary["target"]["fresh"] == summary["parts"]["fresh"]["pooled"][
        summary["default_spec"]]
    assert summary["parts"]["workload"]["families"] == ["workload-rlhf", "workload-lora",
                                                        "workload-dpo"]
    assert summary["target"]["spec"] == summary["default_spec"]
    known = summary["target_known_noise"]
    assert known["spec"] == "cusum-known:sigma={sigma},h=1.75"
    assert known["held_out"] == summary["parts"]["held_out"]["pooled"][known["spec"]]
    assert "cusum-known" not in (summary["selection"]["selected_on_tuning"] or "")
    measured = summary["measured_noise"]
    assert measured["runs"] == [3, 10] and len(measured["rows"]) == 4
    default_row, given_row = measured["rows"][:2]
    assert default_row["held_out"] == summary["parts"]["held_out"]["pooled"][
        summary["default_spec"]]
    assert given_row["fresh"] == summary["parts"]["fresh"]["pooled"][known["spec"]]
    for row in measured["rows"]:  # pooled over both held-out parts, target checked there
        assert row["both"]["runs"] == row["held_out"]["runs"] + row["fresh"]["runs"]
        # counts add (a Tally sum), ratios do not: precision is pooled tp over pooled stops
        tp = [row[p]["recall"] * row[p]["hacking"] for p in ("held_out", "fresh")]
        stops = [t / row[p]["precision"] for t, p in zip(tp, ("held_out", "fresh")) if t]
        if all(tp):
            assert row["both"]["precision"] == pytest.approx(sum(tp) / sum(stops))
            assert row["both"]["recall"] == pytest.approx(
                sum(tp) / (row["held_out"]["hacking"] + row["fresh"]["hacking"]))
        assert row["met_both"] == all(row["both"][k] >= row[k] for k in
                                      ("precision", "recall", "quality"))
    assert "The noise measured from finished runs" in (out / "detectors.md").read_text()
    assert (out / "detectors.csv").read_text().startswith("part,scope,group,detector")
    assert "## Detector benchmark" in (out / "detectors.md").read_text()
    for fam in FAMILIES:
        assert (out / f"pr_{fam.name}.png").stat().st_size > 0
    assert (out / "pr_tuning.png").exists() and (out / "pr_held_out.png").exists()
    for part in summary["parts"]:
        assert (out / f"harm_{part}.png").stat().st_size > 0
    md = (out / "detectors.md").read_text()
    assert "| harmful stops | regret, healthy | compute saved |" in md
    header = (out / "detectors.csv").read_text().splitlines()[0]
    # new columns go at the end: the older ones keep their places
    assert header.endswith("harmful,harmful_rate,regret_healthy,regret_hacking,saved,"
                           "tenant_harmful,tenant_harmful_rate")


def test_same_seed_same_json(quick_runs, tmp_path):
    a, b = quick_runs
    assert (a / "detectors.json").read_bytes() == (b / "detectors.json").read_bytes()
    assert (a / "detectors.csv").read_bytes() == (b / "detectors.csv").read_bytes()
    run_detector_benchmark(tmp_path, seed=4, quick=True, runs=2, progress=False)
    assert (tmp_path / "detectors.json").read_bytes() != (a / "detectors.json").read_bytes()


def test_cli(tmp_path, capsys):
    assert main(["bench-detectors", "--out", str(tmp_path), "--quick", "--runs", "1",
                 "--no-progress"]) == 0
    assert "held-out part" in capsys.readouterr().out
    assert (tmp_path / "detectors.json").exists()
    assert main(["bench-detectors", "--out", str(tmp_path), "--runs", "0"]) == 2
    assert "--runs must be >= 1" in capsys.readouterr().err


def test_known_noise_rules_get_the_cells_sigma():
    from evalstop.detbench.lineup import CELL_SIGMA, for_cell, same_rule

    spec = f"cusum-known:sigma={CELL_SIGMA},h=1.75"
    assert for_cell(spec, 0.04) == "cusum-known:sigma=0.04,h=1.75"
    assert same_rule(spec, spec) and not same_rule(spec, "default")
    from evalstop.detectors import DEFAULT_SPEC, PREVIOUS_DEFAULT_SPEC

    assert same_rule("default", DEFAULT_SPEC) and same_rule("cusum-drop", PREVIOUS_DEFAULT_SPEC)
    rs = build(0, 20, held_out=False, sigmas=(0.04,), noises=("gauss",))[0]
    given = run_detector(spec, rs)
    assert np.array_equal(given.stopped, run_detector("cusum-known:sigma=0.04,h=1.75",
                                                      rs).stopped)
    assert not np.array_equal(given.stopped, run_detector("cusum-known:sigma=0.4,h=1.75",
                                                          rs).stopped)


def test_report_section_shows_harm_beside_precision(quick_runs):
    from evalstop.report.blocks import Image, Table
    from evalstop.report.sections.detbench import render

    out = quick_runs[0]
    summary = json.loads((out / "detectors.json").read_text())
    blocks = render(summary, out.parent, rel_dir=out.name, quick=True)
    tables = [b for b in blocks if isinstance(b, Table) and "Precision" in b.header]
    assert tables and all(("Harmful stops", "Regret, healthy", "Compute saved")
                          == b.header[b.header.index("FPR") + 1:b.header.index("FPR") + 4]
                          for b in tables)
    assert all(b.header[-1] == "Harmful stops, tenant view" for b in tables)
    assert all(r[-1] != "n/a" for r in tables[0].rows)
    md = (out / "detectors.md").read_text()
    assert "| harmful stops, tenant view |" in md and "Harmful stops, tenant view:" in md
    with open(out / "detectors.csv") as fh:
        assert "tenant_harmful_rate" in fh.readline()
    harm_images = [b.path for b in blocks if isinstance(b, Image) and "/harm_" in b.path]
    assert len(harm_images) == len(summary["parts"])
