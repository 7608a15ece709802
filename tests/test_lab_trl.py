"""The lab experiment under TRL's GRPOTrainer: a tiny GPT-2 (built in code, nothing
downloaded) optimized against a proxy fitted on 100 pairs hacks within a few dozen steps,
and the project's EvalStopCallback, watching the gold reward (logged by TRL with weight 0,
never optimized), stops it and keeps the best checkpoint."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("trl")
pytest.importorskip("datasets")

from evalstop.evallog import read_log
from evalstop.lab.trl_run import parse, run_trl

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def test_callback_stops_a_hacking_grpo_run(tmp_path):
    res = run_trl(pairs=100, beta=0.0, seed=0, out_dir=str(tmp_path), max_steps=40,
                  eval_every=4, detector="evalstop:k=2")
    gold = {e["step"]: e["gold"] for e in res.evals}
    proxy = [e["proxy"] for e in res.evals]
    assert res.stopped and res.stop_step < 40 and res.global_step == res.stop_step
    assert res.best_step < res.stop_step
    # the world feedback peaked and fell while the proxy kept rising
    assert gold[res.best_step] > gold[0] and gold[res.stop_step] < gold[res.best_step]
    assert proxy[-1] > proxy[0]
    assert res.best_checkpoint is not None and os.path.isdir(res.best_checkpoint)
    assert res.best_checkpoint.endswith(f"checkpoint-{res.best_step}")
    log = read_log(tmp_path / "eval_log.jsonl")
    assert [r.step for r in log["trl-p100-b0-s0"]] == sorted(gold)


def test_parse_keeps_world_tokens_only():
    assert parse("t3", "t5 [EOS] t12 [PAD]") == [3, 5, 12]
