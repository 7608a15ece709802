"""EvalStopCallback on a real TRL GRPOTrainer run (tiny random GPT-2, tokenizer built in
code, CPU, nothing downloaded).

The reward function is scripted by the trainer's global step, so GRPO's own eval metric
``eval_reward`` (the mean reward of the eval generations) peaks at step 6 and declines at
steps 8 and 10: ``evalstop:k=2`` must stop the run at step 10 and keep checkpoint-6, with
saves every 5 steps (not aligned with evals every 2) and ``save_total_limit=1``.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")
tokenizers = pytest.importorskip("tokenizers")

from evalstop.integrations.hf import EvalStopCallback

# transformers' own deprecation notices, raised inside TRL's generation code.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

CURVE = {2: 0.1, 4: 0.3, 6: 0.5, 8: 0.4, 10: 0.2, 12: 0.6, 14: 0.7, 16: 0.8}


def _tokenizer():
    vocab = {"[PAD]": 0, "[EOS]": 1, "[UNK]": 2, **{f"w{i}": i + 3 for i in range(61)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", eos_token="[EOS]", unk_token="[UNK]"
    )


def _model():
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=32,
        pad_token_id=0, eos_token_id=1, bos_token_id=1,
    )
    return transformers.GPT2LMHeadModel(cfg)


def scripted_reward(prompts, completions, trainer_state=None, **kwargs):
    # +-0.01 around the scripted value: GRPO gets non-zero advantages (it really trains),
    # while the mean over each pair of generations, and so eval_reward, is the script's.
    base = CURVE.get(trainer_state.global_step, 0.9)
    return [base + (0.01 if i % 2 else -0.01) for i in range(len(completions))]


def test_grpo_run_stops_and_keeps_best(tmp_path):
    prompts = [" ".join(f"w{(i * 7 + j) % 61}" for j in range(4)) for i in range(16)]
    data = datasets.Dataset.from_dict({"prompt": prompts})
    args = trl.GRPOConfig(
        output_dir=str(tmp_path), max_steps=16, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, num_generations=2, max_completion_length=4,
        eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=5,
        save_total_limit=1, report_to="none", use_cpu=True, disable_tqdm=True,
        logging_steps=2, beta=0.0, seed=0,
    )
    cb = EvalStopCallback("reward", mode="max", detector="evalstop:k=2")
    trainer = trl.GRPOTrainer(
        model=_model(), reward_funcs=scripted_reward, args=args, train_dataset=data,
        eval_dataset=data.select(range(4)), processing_class=_tokenizer(), callbacks=[cb],
    )
    assert isinstance(trainer, transformers.Trainer)
    trainer.train()

    seen = [(h["step"], round(h["eval_reward"], 6)) for h in trainer.state.log_history
            if "eval_reward" in h]
    assert seen == [(2, 0.1), (4, 0.3), (6, 0.5), (8, 0.4), (10, 0.2)]
    assert trainer.state.global_step == 10
    assert (cb.stop_step, cb.best_step) == (10, 6)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")
    kept = sorted(p for p in os.listdir(tmp_path) if p.startswith("checkpoint-"))
    assert kept == ["checkpoint-6"]
    assert (tmp_path / "checkpoint-6" / "model.safetensors").is_file()


class _ScriptedEval(transformers.TrainerCallback):
    """Writes a scripted score into each evaluation's metrics, by global step, before
    EvalStopCallback (registered after it) reads them: DPO's own eval metrics cannot be
    steered, and the plumbing, not the learning, is under test here."""

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        metrics["eval_scripted"] = CURVE.get(state.global_step, 0.9)


def test_dpo_run_stops_and_keeps_best(tmp_path):
    words = [f"w{i}" for i in range(61)]
    rows = {"prompt": [], "chosen": [], "rejected": []}
    for i in range(16):
        rows["prompt"].append(" ".join(words[(i * 5 + j) % 61] for j in range(3)))
        rows["chosen"].append(" " + " ".join(words[(i + j) % 61] for j in range(3)))
        rows["rejected"].append(" " + " ".join(words[(i * 3 + j) % 61] for j in range(3)))
    data = datasets.Dataset.from_dict(rows)
    args = trl.DPOConfig(
        output_dir=str(tmp_path), max_steps=16, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, eval_strategy="steps", eval_steps=2,
        save_strategy="steps", save_steps=5, save_total_limit=1, report_to="none",
        use_cpu=True, disable_tqdm=True, logging_steps=2, seed=0, max_length=16,
    )
    cb = EvalStopCallback("scripted", mode="max", detector="evalstop:k=2")
    # The reference is passed in: TRL would otherwise reload it from a hub id.
    trainer = trl.DPOTrainer(
        model=_model(), ref_model=_model(), args=args, train_dataset=data, eval_dataset=data.select(range(4)),
        processing_class=_tokenizer(), callbacks=[_ScriptedEval(), cb],
    )
    assert isinstance(trainer, transformers.Trainer)
    trainer.train()

    assert trainer.state.global_step == 10
    assert (cb.stop_step, cb.best_step) == (10, 6)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")
    kept = sorted(p for p in os.listdir(tmp_path) if p.startswith("checkpoint-"))
    assert kept == ["checkpoint-6"]
