"""One lab run end to end (tiny): deterministic per seed, and a valid eval log."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from evalstop.evallog import read_log
from evalstop.lab.config import RunConfig
from evalstop.lab.output import is_complete, paths, write_run
from evalstop.lab.run import run_lab

TINY = {"steps": 30, "eval_every": 10, "n_eval": 32, "n_prompts": 4, "group": 4,
        "sft_steps": 20, "sft_batch": 32, "proxy_steps": 20, "proxy_batch": 64}


@pytest.fixture(scope="module")
def two_runs():
    cfg = RunConfig(pairs=50, beta=0.0, seed=1, **TINY)
    return run_lab(cfg), run_lab(cfg)


def test_same_seed_same_log(two_runs):
    a, b = two_runs
    assert a.records == b.records
    assert [e["kl"] for e in a.meta["evals"]] == [e["kl"] for e in b.meta["evals"]]


def test_another_seed_another_log(two_runs):
    other = run_lab(RunConfig(pairs=50, beta=0.0, seed=2, **TINY))
    assert other.records[1]["eval"] != two_runs[0].records[1]["eval"]


def test_records_are_the_eval_log_format(two_runs, tmp_path):
    res = two_runs[0]
    assert [r["step"] for r in res.records] == [0, 10, 20, 30]
    assert [r["progress"] for r in res.records] == [0.0, 1 / 3, 2 / 3, 1.0]
    assert all(r["job"] == "p50-b0-s1" for r in res.records)
    label = write_run(tmp_path, "p50-b0-s1", res.records, res.meta)
    assert is_complete(tmp_path, "p50-b0-s1")
    log = read_log(paths(tmp_path, "p50-b0-s1")["log"])  # the project's own reader
    recs = log["p50-b0-s1"]
    assert [r.step for r in recs] == [0, 10, 20, 30]
    assert all(np.isfinite([r.eval, r.proxy, r.loss]).all() for r in recs)
    saved = json.loads(paths(tmp_path, "p50-b0-s1")["label"].read_text())
    assert saved["hacking"] == label.hacking
    meta = json.loads(paths(tmp_path, "p50-b0-s1")["meta"].read_text())
    assert meta["seed"] == 1 and meta["config"]["pairs"] == 50 and meta["wall_s"] > 0
    assert [e["step"] for e in meta["evals"]] == [0, 10, 20, 30]
    assert {"kl", "entropy", "gold_se"} <= set(meta["evals"][0])
    # the label lives apart from the log: the log has no hidden field
    assert set(res.records[0]) == {"job", "step", "eval", "proxy", "loss", "progress"}


def test_kl_starts_at_zero_and_entropy_is_positive(two_runs):
    ev = two_runs[0].meta["evals"]
    assert ev[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    assert all(e["entropy"] > 0 for e in ev)
