"""Issue 13: the paper-assumptions preset (its study check and how it is laid over studies),
``reproduce --preset``, and the claim map's report section."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from evalstop.cli.main import main
from evalstop.experiments import FULL, QUICK, registry, run_experiments
from evalstop.experiments import assumptions as asm
from evalstop.experiments import claim_map as cm
from evalstop.experiments.assumption_search import (
    MAX_FPR,
    MIN_PRECISION,
    MIN_RECALL,
    k2_stops,
)
from evalstop.experiments.methods import EVALSTOP_SRTF, SRTF
from evalstop.experiments.runner import make_workload
from evalstop.metrics.stats import mean_ci
from evalstop.report import RunInfo, write_report

PRESET = asm.PAPER_ASSUMPTIONS


def test_preset_main_table_holds_on_the_reproduce_seeds():
    """The study check: the preset was searched on other seeds (base 1306); on the reproduce
    seeds (base 2606, 20 of them, 200 jobs, simulated) k=2's mean precision, recall and FPR
    lie in the paper's region, the tolerance the search states."""
    main = registry.get("main")
    point = replace(main.points[0], methods=(SRTF, EVALSTOP_SRTF))
    exp = asm.apply(replace(main, points=(point,), keep=()), PRESET)
    run = run_experiments([exp], replace(FULL, n_seeds=20), workers=1, progress=False)["main"]
    rows = [r for r in run.rows if r["method"] == EVALSTOP_SRTF.label]
    assert len(rows) == 20 and all(r["n_jobs"] == 200 for r in rows)
    prec, rec, fpr = (mean_ci([r[m] for r in rows]).mean for m in ("precision", "recall", "fpr"))
    assert prec >= MIN_PRECISION and rec >= MIN_RECALL and fpr <= MAX_FPR, (prec, rec, fpr)
    # ... and on the paper preset the same seeds are far outside it (the map's point).
    ours = run_experiments([replace(main, points=(point,), keep=())],
                           replace(FULL, n_seeds=3), workers=1, progress=False)["main"]
    assert np.mean([r["fpr"] for r in ours.rows if r["method"] == EVALSTOP_SRTF.label]) > 0.3


def test_search_shortcut_equals_the_simulator():
    """The search scores k=2 on the evals directly; the simulator's stops are the same."""
    from evalstop.sim.engine import simulate

    main = asm.apply(registry.get("main"), PRESET)
    w = make_workload(main.points[0], 0, QUICK, 64)
    res = simulate(w, 64, EVALSTOP_SRTF.build())
    np.testing.assert_array_equal(np.asarray(res.stopped, bool), k2_stops(w.eval_obs))


def test_preset_fixes_the_curves_across_a_noise_sweep():
    """Under the preset the sigma sweep varies the noise on the same stretched curves."""
    sigma = asm.apply(registry.get("sigma"), PRESET)
    a, b = (make_workload(p, 0, QUICK, 64) for p in sigma.points[:2])
    np.testing.assert_array_equal(a.eval_true, b.eval_true)
    base = make_workload(registry.get("sigma").points[0], 0, QUICK, 64)
    assert not np.array_equal(a.eval_true, base.eval_true)
    # and it narrows rules watching every job to RLHF jobs; bare bases stay bare
    for m in sigma.points[0].methods:
        assert (m.job_types == asm.RLHF_ONLY) if m.detector else m.job_types is None


def test_point_settings_win_and_lab_curves_stay_real():
    real = asm.apply(registry.get("real_main"), PRESET)
    lab = next(p for p in real.points if p.label == "lab")
    assert lab.workload == registry.get("real_main").points[0].workload
    syn = next(p for p in real.points if p.label == "synthetic")
    assert syn.workload["eval_interval"] == 0.04 and "late_snr" in syn.workload
    cmap = registry.with_preset([registry.get("claim_map")], PRESET.name)[0]
    assert cmap == registry.get("claim_map")  # the map sets every knob itself


def test_unknown_preset_is_one_line(tmp_path, capsys):
    rc = main(["reproduce", "--out", str(tmp_path / "o"), "--preset", "bogus"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "unknown preset 'bogus'" in err
    assert not (tmp_path / "o").exists()
    rc = main(["reproduce", "--out", str(tmp_path / "o"), "--preset", PRESET.name,
               "--only", "assumptions"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--preset skips" in err


def test_reproduce_with_the_preset(tmp_path, capsys):
    rc = main(["reproduce", "--out", str(tmp_path), "--quick", "--only", "main", "--seeds", "2",
               "--workers", "1", "--no-progress", "--no-detectors", "--preset", PRESET.name])
    assert rc == 0
    md = (tmp_path / "report.md").read_text()
    assert f"workload knob preset `{PRESET.name}`" in md
    # the section itself, not its entry in the table of contents
    assert "(stops rlhf jobs only)" in md.split("\n## Main table")[1]
    import json
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["settings"]["preset"] == PRESET.name


def test_report_renders_the_claim_map(tmp_path):
    """A few cells of the map (20 evals, high SNRs so that the region shows) and the
    assumptions study's main point: the map's section, heatmaps, table and the first-page
    answer are written."""
    cells = tuple(p for p in cm.EXPERIMENT.points if p.workload["eval_interval"] == 0.05
                  and p.workload["late_snr"] >= 2.0 and p.workload["decline_snr"] >= 2.0)
    cmap = replace(cm.EXPERIMENT, points=cells)
    pa = registry.get("assumptions")
    pa = replace(pa, points=pa.points[:1])
    runs = run_experiments([cmap, pa], replace(QUICK, n_seeds=2), workers=1, progress=False)
    write_report(runs, tmp_path, RunInfo(wall_s=1.0, workers=1, quick=True))
    md = (tmp_path / "report.md").read_text()
    assert "## What must be true for the paper's figures" in md
    assert "Real runs do not satisfy it" in md
    assert "(`claim_map`)" in md and "Real lab runs (measured)" in md
    assert "Ours, paper-assumptions" in md and "Ours, paper preset" in md
    for stem in ("all", "rlhf"):
        assert (tmp_path / "figures" / f"claim_map_heatmap_{stem}.png").stat().st_size > 10_000
        assert f"](figures/claim_map_heatmap_{stem}.png)" in md
    assert "| 20 | 4 | 4 |" in md  # a cell row of the map's table


@pytest.mark.parametrize("n_seeds, expected", [(20, 4), (5, 1), (1, 1)])
def test_claim_map_runs_on_a_share_of_the_seeds(n_seeds, expected):
    assert cm.EXPERIMENT.seeds(n_seeds) == expected
