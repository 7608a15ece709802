"""The lab experiment driven by TRL's ``GRPOTrainer``, stopped by ``EvalStopCallback``.

Same world, gold reward and proxy reward model as ``evalstop.lab.run``, but the policy is
a tiny GPT-2 built from a config in code (nothing downloaded), with a word-level
tokenizer built in code (one word ``t<i>`` per world token), pretrained by maximum
likelihood on reference samples and then trained by TRL's GRPO. TRL gets two reward
functions: the proxy (weight 1: what GRPO optimizes) and the gold reward (weight 0: never
optimized, only logged). So the eval metric ``eval_rewards/GoldReward/mean`` is the world
feedback, and the project's callback watches it and stops the run when it declines.

Needs the ``hf`` extra (torch, transformers, trl, datasets).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from evalstop.integrations._extras import require
from evalstop.lab.world import SEQ_LEN, World, make_world

SPECIALS = ("[PAD]", "[EOS]", "[UNK]")
GOLD_METRIC = "rewards/GoldReward/mean"  # TRL logs it as eval_rewards/GoldReward/mean


def _hf():
    mods = {}
    for name in ("torch", "transformers", "trl", "datasets", "tokenizers"):
        mods[name] = require(name, what="evalstop.lab.trl_run", extra="hf")
    return mods


def word(token: int) -> str:
    return f"t{int(token)}"


def build_tokenizer(vocab: int):
    """A word-level tokenizer: ids 0-2 are PAD/EOS/UNK, world token ``i`` is id ``i + 3``."""
    m = _hf()
    tk, tf = m["tokenizers"], m["transformers"]
    ids = {s: i for i, s in enumerate(SPECIALS)} | {word(i): i + len(SPECIALS) for i in range(vocab)}
    tok = tk.Tokenizer(tk.models.WordLevel(vocab=ids, unk_token="[UNK]"))
    tok.pre_tokenizer = tk.pre_tokenizers.Whitespace()
    tok.decoder = tk.decoders.WordPiece(prefix="##")  # joins words with spaces
    return tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]",
                                      eos_token="[EOS]", unk_token="[UNK]")


def build_model(vocab: int, seed: int):
    """A 1-layer GPT-2 (32-dim, 2 heads) over the world's tokens, random init from ``seed``."""
    m = _hf()
    m["torch"].manual_seed(int(seed))
    cfg = m["transformers"].GPT2Config(
        n_layer=1, n_head=2, n_embd=32, vocab_size=vocab + len(SPECIALS),
        n_positions=SEQ_LEN + 4, pad_token_id=0, eos_token_id=1, bos_token_id=1)
    return m["transformers"].GPT2LMHeadModel(cfg)


def sft(model, world: World, rng: np.random.Generator, *, steps: int = 150, batch: int = 128,
        lr: float = 1e-2) -> float:
    """Maximum likelihood on reference samples (ids shifted past the specials); returns
    the last loss. GRPO then completes a one-token prompt, as in ``evalstop.lab.run``."""
    torch = _hf()["torch"]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        ids = torch.from_numpy(world.sample(rng, batch) + len(SPECIALS))
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return float(loss.detach())


def parse(prompt: str, completion: str) -> list[int]:
    """World tokens of prompt + completion; anything else (specials) is dropped."""
    out = []
    for w in f"{prompt} {completion}".split():
        if w.startswith("t") and w[1:].isdigit():
            out.append(int(w[1:]))
    return out


# A completion with under two world tokens (it ended at once) has no transition to judge:
# both rewards return None for it, which TRL treats as unscorable (advantage 0).


class GoldReward:
    """The world's gold reward of each completion (TRL reward-function interface)."""

    def __init__(self, world: World):
        self.world = world

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        out = []
        for p, c in zip(prompts, completions):
            seq = parse(p, c)
            out.append(float(self.world.gold(np.array([seq]))[0]) if len(seq) >= 2 else None)
        return out


class ProxyReward:
    """The fitted proxy reward model's score of each completion (normalised as in run.py)."""

    def __init__(self, proxy):
        self.proxy = proxy

    def __call__(self, prompts, completions, **kwargs) -> list[float | None]:
        torch = _hf()["torch"]
        out = []
        with torch.no_grad():
            for p, c in zip(prompts, completions):
                seq = parse(p, c)
                out.append(float(self.proxy(torch.tensor([seq]))[0]) if len(seq) >= 2 else None)
        return out


@dataclass
class TrlRunResult:
    evals: list[dict]  # step, gold, proxy per evaluation
    stopped: bool
    stop_step: int | None
    best_step: int | None
    best_checkpoint: str | None
    global_step: int
    reason: str = ""  # the rule's own words for its stop ("" if it did not stop)


def run_trl(*, pairs: int, beta: float, seed: int, out_dir: str, max_steps: int = 60,
            eval_every: int = 4, lr: float = 5e-3, detector: str = "evalstop:k=2",
            n_prompts: int = 4, group: int = 8, n_eval_prompts: int = 32) -> TrlRunResult:
    """One run under TRL's GRPOTrainer with ``EvalStopCallback`` watching the gold reward."""
    m = _hf()
    torch, trl, datasets = m["torch"], m["trl"], m["datasets"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evalstop.integrations.hf import EvalStopCallback
    from evalstop.lab._torch import configure_determinism
    from evalstop.lab.proxy import ProxyRM, preference_pairs, train_proxy
    from evalstop.lab.run import _normalise

    configure_determinism(seed)
    rng = np.random.default_rng([seed, 0x7A1])
    world = make_world(seed)
    model = build_model(world.vocab, seed)
    sft(model, world, rng)
    proxy = ProxyRM(world.vocab)
    chosen, rejected = preference_pairs(world, rng, pairs)
    train_proxy(proxy, chosen, rejected, steps=300, lr=1e-2, weight_decay=1e-2, batch=256,
                gen=torch.Generator().manual_seed(seed))
    _normalise(proxy, world, rng)

    def prompts(n):
        return [word(t) for t in rng.choice(world.vocab, size=n, p=world.start)]

    train = datasets.Dataset.from_dict({"prompt": prompts(max_steps * n_prompts)})
    evals = datasets.Dataset.from_dict({"prompt": prompts(n_eval_prompts)})
    args = trl.GRPOConfig(
        output_dir=out_dir, max_steps=max_steps, learning_rate=lr, beta=beta,
        per_device_train_batch_size=n_prompts * group, num_generations=group,
        num_generations_eval=2, per_device_eval_batch_size=2 * n_eval_prompts,
        max_completion_length=SEQ_LEN - 1, temperature=1.0, reward_weights=[1.0, 0.0],
        eval_strategy="steps", eval_steps=eval_every, eval_on_start=True,
        save_strategy="steps", save_steps=eval_every, save_total_limit=1,
        logging_steps=eval_every, report_to="none", use_cpu=True, disable_tqdm=True,
        seed=seed, lr_scheduler_type="constant")
    cb = EvalStopCallback(GOLD_METRIC, mode="max", detector=detector)
    trainer = trl.GRPOTrainer(
        model=model, reward_funcs=[ProxyReward(proxy), GoldReward(world)], args=args,
        train_dataset=train, eval_dataset=evals, processing_class=build_tokenizer(world.vocab),
        callbacks=[cb])
    trainer.train()
    cb = EvalStopCallback.find(trainer) or cb
    seen = [{"step": h["step"], "gold": h[f"eval_{GOLD_METRIC}"],
             "proxy": h.get("eval_rewards/ProxyReward/mean")}
            for h in trainer.state.log_history if f"eval_{GOLD_METRIC}" in h]
    _write_log(out_dir, f"trl-p{pairs}-b{beta:g}-s{seed}", seen, max_steps)
    decision = getattr(cb, "decision", None)
    return TrlRunResult(seen, cb.stopped, cb.stop_step, cb.best_step, cb.best_checkpoint,
                        int(trainer.state.global_step),
                        decision.reason if cb.stopped and decision is not None else "")


def _write_log(out_dir: str, job: str, evals: list[dict], max_steps: int) -> None:
    """The run's evals as an eval log (docs/simulator.md's format), ``OUT/eval_log.jsonl``."""
    import json

    from evalstop.fileio import atomic_write

    with atomic_write(os.path.join(out_dir, "eval_log.jsonl")) as fh:
        for e in evals:
            rec = {"job": job, "step": int(e["step"]), "eval": e["gold"],
                   "progress": min(1.0, e["step"] / max_steps)}
            if e.get("proxy") is not None:
                rec["proxy"] = e["proxy"]
            fh.write(json.dumps(rec) + "\n")
