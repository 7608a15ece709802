"""A GRPO run whose stop rule reads a held-out task score, not the training reward.

The training reward here is a proxy that can be gamed (it pays for long completions);
the world feedback is exact match on held-out prompts with reference answers, computed by
``ExactMatchEval`` from the model at each evaluation. EvalStop's rule sees the exact-match
score; GRPO's own ``eval_reward`` (the proxy on the eval prompts) is logged beside it.

    python examples/grpo_world_eval.py OUT_DIR [MAX_STEPS]

To keep it runnable anywhere (CPU, offline), the model is a 1-layer GPT-2 and the
tokenizer a word-level one, both built in code; with a real model, load them with
``from_pretrained`` and keep everything else. It prints one line per world eval:
step, exact match, its cost in seconds and the proxy.

It shows the hook's wiring, not a stop: this untrained 1-layer model scores 0.000 exact
match at every eval, so there is no decline to stop on. ``examples/grpo_stop.py`` is a
run that over-optimises and is stopped by ``default`` at its best checkpoint.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import datasets
import tokenizers
import torch
import transformers
import trl

from evalstop.integrations import EvalStopCallback
from evalstop.integrations.world_eval import ExactMatchEval

WORDS = [f"w{i}" for i in range(61)]


def tiny_tokenizer() -> transformers.PreTrainedTokenizerFast:
    vocab = {"[PAD]": 0, "[EOS]": 1, "[UNK]": 2, **{w: i + 3 for i, w in enumerate(WORDS)}}
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="[PAD]", eos_token="[EOS]", unk_token="[UNK]")


def tiny_model(seed: int = 0) -> transformers.GPT2LMHeadModel:
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=64,
                                  n_positions=32, pad_token_id=0, eos_token_id=1,
                                  bos_token_id=1)
    return transformers.GPT2LMHeadModel(cfg)


def length_reward(prompts, completions, **kwargs):
    """The proxy: longer is "better". Training maximises it; nothing checks it is right."""
    return [len(c.split()) / 4 for c in completions]


def task(n: int, offset: int) -> tuple[list[str], list[str]]:
    """Prompts "wA wB wC" whose reference answer is the next word of the sequence."""
    prompts, answers = [], []
    for i in range(n):
        a = (i * 7 + offset) % 58
        prompts.append(" ".join(WORDS[a + j] for j in range(3)))
        answers.append(WORDS[a + 3])
    return prompts, answers


def build(output_dir: str, max_steps: int = 16, *, world_eval=None, every: int | None = None,
          detector: str = "evalstop:k=2", reward=length_reward, **config):
    """The trainer and its callback; ``world_eval`` defaults to exact match on held-out
    prompts (none of them in the training set)."""
    train_prompts, _ = task(16, offset=0)
    held_out, answers = task(8, offset=29)
    if world_eval is None:
        world_eval = ExactMatchEval(held_out, answers, max_new_tokens=1, name="exact_match")
    cb = EvalStopCallback(world_eval=world_eval, world_eval_every=every, mode="max",
                          detector=detector)
    args = trl.GRPOConfig(**{
        "output_dir": output_dir, "max_steps": max_steps, "per_device_train_batch_size": 4,
        "per_device_eval_batch_size": 4, "num_generations": 2, "max_completion_length": 4,
        "eval_strategy": "steps", "eval_steps": 2, "save_strategy": "steps",
        "save_steps": 5, "save_total_limit": 2, "report_to": "none", "use_cpu": True,
        "disable_tqdm": True, "logging_steps": 2, "beta": 0.0, "seed": 0, **config})
    data = datasets.Dataset.from_dict({"prompt": train_prompts})
    trainer = trl.GRPOTrainer(
        model=tiny_model(), reward_funcs=reward, args=args, train_dataset=data,
        eval_dataset=data.select(range(4)), processing_class=tiny_tokenizer(),
        callbacks=[cb])
    return trainer, cb


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    trainer, cb = build(argv[0], int(argv[1]) if len(argv) > 1 else 16)
    trainer.train()
    for w in cb.world_history:
        print(f"step {w.step}: exact_match {w.score:.3f} ({w.seconds:.2f} s), "
              f"proxy eval_reward {w.proxy}")
    print(f"stopped {cb.stopped} at {cb.stop_step}; best step {cb.best_step}, "
          f"checkpoint {cb.best_checkpoint}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
