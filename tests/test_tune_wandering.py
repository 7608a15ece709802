"""The wandering rule documented in docs/results-failshapes.md is the one its tuning's
stated rule picks from the stored scores, and the judged spec is that pick."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conftest import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "issue46"


def test_the_stored_pick_follows_the_stated_rule():
    tw = load_benchmark("tune_wandering")
    result = json.loads((RESULTS / "wandering_tune.json").read_text())
    pick, verdict = tw.choose(result["rows"])
    assert pick["spec"] == result["pick"] and verdict == result["verdict"]
    judged = json.loads((RESULTS / "wandering_judge.json").read_text())
    assert {r["spec"] for r in judged["rows"] if r["rule"] == judged["beside"]} == {pick["spec"]}


def test_a_setting_that_meets_every_target_wins_on_catches():
    tw = load_benchmark("tune_wandering")
    rows = json.loads((RESULTS / "wandering_tune.json").read_text())["rows"]
    good = copy.deepcopy(rows[0])
    for mode in tw.MODES:
        good[mode]["long"]["rising"]["tenant_harmful"] = 0.0
        good[mode]["long"]["dip"]["tenant_harmful"] = 0.0
        for part in ("long", "short"):
            good[mode][part]["dead"]["stopped"] = 1.0
            good[mode][part]["collapse"]["delay_evals_median"] = 1.0
    worse = copy.deepcopy(good)
    for mode in tw.MODES:
        worse[mode]["rule21"]["by_freq"]["1"]["caught"] -= 0.1
    worse["spec"] = "worse"
    pick, verdict = tw.choose([worse, *rows, good])
    assert pick is good and verdict.startswith("2 of")
