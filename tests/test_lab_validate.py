"""validate_detectors (evalstop.lab.validate): scores against labels, on hand-made runs with
known answers and on a subset of the shipped corpus. numpy only."""

import math

import numpy as np
import pytest

from evalstop.lab.corpus import RunCurve, load_corpus
from evalstop.lab.labels import label_curve
from evalstop.lab.validate import default_specs, replay_run, validate_detectors

STEPS = np.arange(0, 110, 10)


def run(run_id, gold):
    gold = np.asarray(gold, float)
    n = len(gold)
    proxy = np.linspace(0, 2, n)  # rises in every run, as the proxy does
    return RunCurve(run_id, STEPS[:n], gold, proxy, -proxy, STEPS[:n] / STEPS[n - 1])


HACK = [0.90, 0.95, 0.98, 1.00, 0.99, 0.97, 0.95, 0.93, 0.92, 0.91, 0.90]  # peak at index 3
HEALTHY = list(np.linspace(0.90, 1.05, 11))


@pytest.fixture()
def hand_made():
    curves = {"h": run("h", HACK), "ok": run("ok", HEALTHY)}
    labels = {k: label_curve(c.step, c.eval) for k, c in curves.items()}
    assert labels["h"].hacking and not labels["ok"].hacking
    return curves, labels


def test_paper_rule_on_known_runs(hand_made):
    rows = {r["spec"]: r for r in validate_detectors(hand_made, ["evalstop:k=2"])}
    r = rows["evalstop:k=2"]
    # declines at indices 4 and 5: stop at 5, two evals after the peak at index 3
    assert replay_run(hand_made[0]["h"], "evalstop:k=2") == (5, 3)
    assert (r["tp"], r["fp"], r["precision"], r["recall"], r["fpr"]) == (1, 0, 1.0, 1.0, 0.0)
    assert r["delay_mean"] == 2.0
    assert r["kept_vs_peak"] <= 0.0 and r["kept_vs_end_hacking"] > 0.0
    assert r["kept_vs_end_healthy"] == 0.0  # the healthy run ran to the end
    assert r["evals_saved"] == pytest.approx((10 - 5) / 10 / 2)
    never = rows["none"]
    assert never["stopped"] == 0 and never["kept_vs_end"] == 0.0 and never["recall"] == 0.0


def test_stopat_stops_every_run(hand_made):
    r = validate_detectors(hand_made, ["stopat:p=0.65"])[1]
    assert r["stopped"] == 2 and r["fpr"] == 1.0 and r["precision"] == 0.5


def test_undefined_ratios_are_nan(hand_made):
    curves, labels = hand_made
    only_healthy = ({"ok": curves["ok"]}, {"ok": labels["ok"]})
    r = validate_detectors(only_healthy, ["evalstop:k=2"])[1]
    assert math.isnan(r["recall"]) and math.isnan(r["precision"]) and r["fpr"] == 0.0


def test_bad_spec_and_missing_label(hand_made):
    with pytest.raises(ValueError, match="unknown detector"):
        validate_detectors(hand_made, ["bogus:k=2"])
    curves, labels = hand_made
    with pytest.raises(ValueError, match="without a label"):
        validate_detectors((curves, {"h": labels["h"]}), ["evalstop:k=2"])


def test_default_specs_cover_every_registered_detector():
    from evalstop.detectors import available

    specs = default_specs()
    assert specs[:5] == [f"evalstop:k={k}" for k in range(1, 6)]
    assert "stopat:p=0.65" in specs and "loss-plateau:window=5,eps=0.01" in specs
    named = {s.split(":")[0] for s in specs}
    assert set(available()) - {"cusum-known"} <= named  # it needs the eval's noise
    assert "cusum-known" not in named


def test_on_a_subset_of_the_shipped_corpus():
    curves, labels = load_corpus()
    ids = list(curves)[::8]  # every 8th run: some of every grid cell's seeds
    sub = ({k: curves[k] for k in ids}, {k: labels[k] for k in ids})
    rows = validate_detectors(sub)
    assert [r["spec"] for r in rows] == ["none", *default_specs()]
    for r in rows:
        assert r["n_runs"] == len(ids)
        for key in ("precision", "recall", "fpr", "gain_kept"):
            assert math.isnan(r[key]) or -1e9 < r[key] < 1e9
        assert r["kept_vs_peak"] <= 1e-12  # nothing beats the smoothed peak
