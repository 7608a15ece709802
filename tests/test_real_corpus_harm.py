"""Harm on lab-shaped runs (``experiments.real_corpus.stop_cost``), worked out by hand, and
the real-corpus section's harm table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalstop.experiments.real_corpus import stop_cost
from evalstop.lab.corpus import RunCurve
from evalstop.lab.labels import label_curve
from evalstop.lab.validate import replay_run

STEPS = np.arange(0, 110, 10)
HACK = [0.90, 0.95, 0.98, 1.00, 0.99, 0.97, 0.95, 0.93, 0.92, 0.91, 0.90]
RISE = list(np.linspace(0.90, 1.05, 11))  # never declines: never stopped by k=2
DIP = [0.90, 0.95, 1.00, 0.99, 0.98] + [1.00] * 6  # healthy, stopped in its dip
FLAT = [1.00] * 4 + [0.99, 0.98] + [1.00] * 5  # healthy, no gain, stopped in its dip


def run(run_id, gold):
    gold = np.asarray(gold, float)
    proxy = np.linspace(0, 2, len(gold))
    return RunCurve(run_id, STEPS, gold, proxy, -proxy, STEPS / STEPS[-1])


@pytest.fixture()
def corpus():
    curves = {k: run(k, g) for k, g in (("hack", HACK), ("rise", RISE), ("dip", DIP),
                                         ("flat", FLAT))}
    labels = {k: label_curve(c.step, c.eval) for k, c in curves.items()}
    assert [labels[k].hacking for k in curves] == [True, False, False, False]
    return curves, labels


def test_stop_cost_by_hand(corpus):
    curves, labels = corpus
    assert [replay_run(curves[k], "evalstop:k=2") for k in curves] == [(5, 3), (None, 10),
                                                                    (4, 2), (5, 0)]
    s = stop_cost(curves, labels, "evalstop:k=2")
    # True curve = gold smoothed over 3 evals, edges repeated.
    # hack: kept (0.98+1+0.99)/3 = 0.99, end (0.91+0.9+0.9)/3, start (0.9+0.9+0.95)/3, peak 0.99
    end, start = (0.91 + 0.9 + 0.9) / 3, (0.9 + 0.9 + 0.95) / 3
    hack_regret = (end - 0.99) / (0.99 - start)
    # dip: kept (0.95+1+0.99)/3 = 0.98, end 1.0, start the same, peak 1.0: loses 24% of its
    # gain -> harmful. flat: no gain, kept 1.0 = end: a false stop but no harm (regret NaN).
    dip_regret = (1.0 - 0.98) / (1.0 - start)
    assert s["harmful"] == 1 and s["harmful_rate"] == pytest.approx(1 / 3)
    assert s["regret_healthy_mean"] == pytest.approx((0.0 + dip_regret) / 2)
    assert s["regret_hacking_mean"] == pytest.approx(hack_regret)
    assert s["compute_saved"] == pytest.approx((5 + 0 + 6 + 5) / 44)
    never = stop_cost(curves, labels, None)
    assert never["harmful"] == 0 and never["compute_saved"] == 0.0
    assert never["regret_healthy_mean"] == 0.0
    # Tenant view, from the raw gold evals: 11 evals, levels over +-1 eval, end = mean of
    # the last 2. dip keeps eval 2 (level (0.95+1+0.99)/3 = 0.98), end 1.0, gain 1.0 - 0.925:
    # loss 0.27 > 5%, harmful; flat never gained (NaN, no harm); rise is never stopped.
    assert s["tenant_harmful"] == 1 and s["tenant_harmful_rate"] == pytest.approx(1 / 3)
    assert s["tenant_loss_stopped_median"] == pytest.approx((1.0 - 0.98) / (1.0 - 0.925))
    assert never["tenant_harmful"] == 0 and math.isnan(never["tenant_loss_stopped_median"])


def _replay_by_update(curve, spec):
    """The run replayed through ``Detector.update`` (what a callback calls)."""
    from evalstop.detectors import make_detector

    det, steps = make_detector(spec), [int(s) for s in curve.step]
    for i, step in enumerate(steps):
        d = det.update(step, float(curve.eval[i]), loss=float(curve.loss[i]),
                       proxy=float(curve.proxy[i]), progress=float(curve.progress[i]))
        if d.stop:
            return i, (steps.index(d.best_step) if d.best_step is not None else i)
    return None, len(steps) - 1


def test_stop_only_replay_matches_update(corpus):
    curves, _ = corpus
    for spec in ("evalstop:k=1", "evalstop:k=3", "default", "stopat:p=0.5",
                 "loss-plateau:window=3,eps=0.5"):
        for c in curves.values():
            assert replay_run(c, spec) == _replay_by_update(c, spec)


def test_real_corpus_section_shows_harm_beside_precision(tmp_path):
    from evalstop.experiments.real_corpus import EXPERIMENT, validate_shipped
    from evalstop.report.sections.real import _harm_table, _reading

    rows, _ = validate_shipped(["evalstop:k=2", "default", "stopat:p=0.65"])
    assert all(k in r for r in rows for k in ("harmful_rate", "compute_saved",
                                              "regret_healthy_mean"))
    table = _harm_table(rows)
    assert table.header[:4] == ("Rule", "Precision", "Recall", "FPR")
    assert "Harmful stops (share of healthy)" in table.header and "Compute saved" in table.header
    assert table.header[-1] == "Harmful stops, tenant view"
    assert all(k in r for r in rows for k in ("tenant_harmful", "tenant_harmful_rate"))
    assert "tenant view" in table.caption
    assert [r[0] for r in table.rows] == ["`none`", "`evalstop:k=2`", "`default`",
                                          "`stopat:p=0.65`"]
    k2 = rows[1]
    assert k2["harmful"] <= k2["fp"] and 0 < k2["compute_saved"] < 1
    assert not math.isnan(k2["regret_healthy_mean"])
    from evalstop.lab.corpus import load_corpus

    text = " ".join(_reading(rows, *load_corpus()))
    assert "A false stop is not always a harmful one" in text
    assert EXPERIMENT.name == "real_corpus"


def test_dense_corpora_section_shows_both_harm_figures():
    from evalstop.experiments.real_corpus import DENSE_SPECS, validate_dense
    from evalstop.report.blocks import Heading, Table
    from evalstop.report.sections.real import _dense_blocks

    rows = validate_dense(("evalstop:k=2",), world="trigram")
    assert [r["spec"] for r in rows] == ["none", "evalstop:k=2"]
    k2 = rows[1]
    assert 0 <= k2["tenant_harmful"] <= k2["fp"] and k2["harmful"] <= k2["fp"]
    blocks = _dense_blocks()
    assert isinstance(blocks[0], Heading) and isinstance(blocks[1], Table)
    table = blocks[1]
    assert "Harmful stops, tenant view" in table.header
    assert len(table.rows) == 2 * len(DENSE_SPECS)  # every rule on both corpora
    assert {r[0].split(" ")[0] for r in table.rows} == {"bigram", "trigram"}
