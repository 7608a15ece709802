"""Decline SNR and recall by SNR bucket in the detector benchmark."""

import json
import math

import numpy as np
import pytest

from evalstop.detbench import detectability as dt
from evalstop.detbench.families import FAMILIES
from evalstop.detbench.runs import RunSet, progress_grid
from evalstop.detbench.scoring import Outcome


def _runs(sigma: float) -> RunSet:
    p = progress_grid(5)
    gain = np.array([
        [0.2, 1.0, 0.9, 0.8, 0.6],  # hacking, peak at eval 1: drops 0.1, 0.2, 0.4
        [0.1, 0.5, 1.0, 0.95, 0.9],  # hacking, peak at eval 2: drops 0.05, 0.1
        [0.2, 0.4, 0.6, 0.8, 1.0],  # healthy
    ])
    return RunSet(FAMILIES[0], sigma, "gauss", p, gain, np.array([True, True, False]),
                  gain.copy(), None, np.ones_like(gain))


def test_decline_snr_by_hand():
    snr = dt.decline_snr(_runs(0.05))
    assert snr[0] == pytest.approx(math.sqrt(0.01 + 0.04 + 0.16) / 0.05)  # 9.17
    assert snr[1] == pytest.approx(math.sqrt(0.0025 + 0.01) / 0.05)  # 2.24
    assert math.isnan(snr[2])
    assert np.all(np.isinf(dt.decline_snr(_runs(0.0))[:2]))


def test_buckets_and_recall():
    assert dt.bucket_of(np.array([0.5, 2.0, 2.5, 3.9, 4.0, 5.0, 6.0, np.inf])).tolist() == [
        0, 1, 1, 2, 3, 3, 4, 4]
    rs = _runs(0.05)
    out = Outcome(np.array([True, False, True]), np.array([3, -1, 2]), np.array([1, 4, 2]))
    table = dt.counts(rs, out)
    assert table.tolist() == [[0, 0], [1, 0], [0, 0], [0, 0], [1, 1]]  # healthy run not counted
    rows = dt.rows(table)
    assert [r["runs"] for r in rows] == [0, 1, 0, 0, 1]
    assert rows[1]["recall"] == 0.0 and rows[4]["recall"] == 1.0 and rows[0]["recall"] is None
    assert rows[4]["share"] == 0.5
    assert dt.visible_recall(table) == 1.0
    assert dt.visible_recall(dt.empty()) is None


def test_benchmark_reports_recall_by_snr(tmp_path):
    from evalstop.detbench import run_detector_benchmark

    run_detector_benchmark(tmp_path, seed=1, quick=True, runs=2, progress=False)
    summary = json.loads((tmp_path / "detectors.json").read_text())
    for part in ("tuning", "held_out", "workload"):
        d = summary["parts"][part]["detectability"]
        assert set(d) == {"evalstop:k=2", summary["default_spec"]}
        for spec, rec in d.items():
            runs = sum(b["runs"] for b in rec["buckets"])
            assert runs == summary["parts"][part]["pooled"][spec]["hacking"]
    assert "Recall by how visible the decline is" in (tmp_path / "detectors.md").read_text()


def test_a_curve_without_an_snr_is_left_out_not_counted_as_visible():
    rs = _runs(0.05)
    rs.gain[0, 3] = np.nan
    out = Outcome(np.array([True, False, False]), np.array([3, -1, -1]), np.array([1, 4, 4]))
    table = dt.counts(rs, out)
    assert table[:, 0].sum() == 1 and table[4, 0] == 0  # only the second hacking run


def test_shortfall_text_names_undefined_metrics():
    from evalstop.detbench.bench import shortfall_text

    assert shortfall_text({"precision": 0.0, "recall": 0.069, "quality": 0.01}) == (
        "short by recall 0.069, quality 0.010")
    assert shortfall_text({"precision": None, "recall": None, "quality": 0.0}) == (
        "short by precision undefined, recall undefined")
