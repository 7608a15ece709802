"""One lab run end to end: world -> SFT policy -> proxy RM -> RL against the proxy, with
an evaluation of held-out samples every ``eval_every`` steps: fresh ones at every eval, or
one fixed set scored again at every eval (``RunConfig.eval_set``).

Randomness: one numpy Generator for the world's data (SFT samples, preference pairs), one
torch Generator for training (proxy minibatches, RL sampling), and separate ones for the
evaluation prompts and completions, so how often a run is evaluated does not change how
it trains. All are seeded from ``RunConfig.seed``; with one thread and deterministic
kernels a seed gives the same log, bit for bit, on one machine and torch build.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from evalstop.lab._torch import configure_determinism, torch_module
from evalstop.lab.config import RunConfig

# Streams of the seed sequence, named so that adding one never shifts another.
_DATA, _TRAIN, _EVAL_PROMPTS, _EVAL_SAMPLES, _RL_PROMPTS = range(5)
_PROXY_NORM_SAMPLES = 2048  # reference samples used to centre and scale the proxy


@dataclass
class RunResult:
    config: RunConfig
    records: list[dict]  # eval-log records: job, step, eval, proxy, loss, progress
    evals: list[dict]  # per eval: step, gold, gold_se, proxy, kl, entropy, loss
    meta: dict  # config, timings, SFT/proxy fit summaries


def run_lab(cfg: RunConfig, *, progress=None, on_eval=None) -> RunResult:
    """Run ``cfg``; ``progress`` (optional) is called with the step after each RL step,
    ``on_eval`` (optional) with each eval's log record and the policy, as it happens (a
    job that streams its eval log and saves checkpoints: ``evalstop.testbed.lab_job``)."""
    if not isinstance(cfg, RunConfig):
        raise TypeError(f"cfg must be a RunConfig, got {type(cfg).__name__}")
    torch = torch_module()
    from evalstop.lab.policy import Policy, PolicyConfig, frozen_copy, pretrain
    from evalstop.lab.proxy import ProxyRM, preference_pairs, train_proxy
    from evalstop.lab.rl import evaluate, grpo_step
    from evalstop.lab.worlds import world_spec

    t0 = time.perf_counter()
    configure_determinism(cfg.seed)
    seeds = np.random.SeedSequence([cfg.seed, 0xE5]).spawn(5)
    data_rng = np.random.default_rng(seeds[_DATA])
    eval_prompt_rng = np.random.default_rng(seeds[_EVAL_PROMPTS])
    rl_prompt_rng = np.random.default_rng(seeds[_RL_PROMPTS])
    train_gen = torch.Generator().manual_seed(int(seeds[_TRAIN].generate_state(1)[0]))
    eval_gen = torch.Generator().manual_seed(int(seeds[_EVAL_SAMPLES].generate_state(1)[0]))

    spec = world_spec(cfg.world)
    world = spec.make(cfg.world_draw)
    policy = Policy(world.vocab, PolicyConfig(cfg.d_model, cfg.n_heads, cfg.n_layers))
    sft_loss = pretrain(policy, world, data_rng, steps=cfg.sft_steps, batch=cfg.sft_batch,
                        lr=cfg.sft_lr)
    ref = frozen_copy(policy)
    t_sft = time.perf_counter()

    proxy = ProxyRM(world.vocab, cfg.proxy_hidden)
    chosen, rejected = preference_pairs(world, data_rng, cfg.pairs, noise=spec.pair_noise)
    proxy_loss = train_proxy(proxy, chosen, rejected, steps=cfg.proxy_steps, lr=cfg.proxy_lr,
                             weight_decay=cfg.proxy_weight_decay, batch=cfg.proxy_batch,
                             gen=train_gen)
    proxy_accuracy = _pair_accuracy(proxy, world, data_rng)
    _normalise(proxy, world, data_rng)
    t_proxy = time.perf_counter()

    def prompts(rng, n):
        return _draw_prompts(rng, world.start, n)

    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    evals: list[dict] = []
    window: list[float] = []

    if cfg.eval_set == "fixed":
        # One item set for the whole run: the same prompts, and the sampling generator
        # restarted from one seed at every eval (common random numbers), so an eval's error
        # changes only where the policy did.
        fixed_prompts = prompts(eval_prompt_rng, cfg.n_eval)
        fixed_seed = int(seeds[_EVAL_SAMPLES].generate_state(1)[0])

        def eval_items():
            return fixed_prompts, torch.Generator().manual_seed(fixed_seed)
    else:
        def eval_items():
            return prompts(eval_prompt_rng, cfg.n_eval), eval_gen

    def do_eval(step):
        ev = evaluate(policy, ref, proxy, world, *eval_items())
        # The training loss a trainer would log: the mean over the steps since the last
        # eval of the negated regularised objective; before any step, the eval's own.
        loss = float(np.mean(window)) if window else cfg.beta * ev["kl"] - ev["proxy"]
        window.clear()
        evals.append({"step": step, **ev, "loss": loss})
        if on_eval is not None:
            on_eval(_record(cfg, evals[-1]), policy)

    do_eval(0)
    for step in range(1, cfg.steps + 1):
        stats = grpo_step(policy, ref, proxy, opt, prompts(rl_prompt_rng, cfg.n_prompts),
                          group=cfg.group, beta=cfg.beta, gen=train_gen)
        window.append(stats.objective_loss)
        if step % cfg.eval_every == 0:
            do_eval(step)
        if progress is not None:
            progress(step)
    t_end = time.perf_counter()

    records = [_record(cfg, e) for e in evals]
    meta = {
        "run_id": cfg.run_id,
        "config": cfg.to_dict(),
        "seed": cfg.seed,
        "torch": torch.__version__,
        "wall_s": round(t_end - t0, 3),
        "sft_s": round(t_sft - t0, 3),
        "proxy_s": round(t_proxy - t_sft, 3),
        "rl_s": round(t_end - t_proxy, 3),
        "sft_final_loss": sft_loss[-1] if sft_loss else None,
        "proxy_final_loss": float(np.mean(proxy_loss[-20:])),
        "proxy_pair_accuracy": proxy_accuracy,
        **({"bonus_tokens": world.bonus.tolist()} if hasattr(world, "bonus") else {}),
        "evals": [{k: e[k] for k in ("step", "gold_se", "kl", "entropy")} for e in evals],
    }
    return RunResult(cfg, records, evals, meta)


def _record(cfg: RunConfig, e: dict) -> dict:
    return {"job": cfg.run_id, "step": e["step"], "eval": e["gold"], "proxy": e["proxy"],
            "loss": e["loss"], "progress": e["step"] / cfg.steps}


def _draw_prompts(rng: np.random.Generator, start: np.ndarray, n: int) -> np.ndarray:
    return rng.choice(len(start), size=n, p=start)


def _pair_accuracy(proxy, world, rng, n: int = 2000) -> float:
    """How often the proxy ranks fresh reference-distribution pairs as the gold does: the
    proxy's quality where it was trained (it can be high and still be exploitable)."""
    torch = torch_module()
    a, b = world.sample(rng, n, noise=0.1), world.sample(rng, n, noise=0.1)
    with torch.no_grad():
        ra, rb = proxy(torch.from_numpy(a)).numpy(), proxy(torch.from_numpy(b)).numpy()
    ga, gb = world.gold(a), world.gold(b)
    differ = ga != gb
    return float(np.mean((ra > rb)[differ] == (ga > gb)[differ]))


def _normalise(proxy, world, rng) -> None:
    """Shift and scale the proxy's output so that reference samples score mean 0, std 1:
    proxy values are then comparable across runs, and beta means the same in all."""
    torch = torch_module()
    seqs = torch.from_numpy(world.sample(rng, _PROXY_NORM_SAMPLES))
    with torch.no_grad():
        r = proxy(seqs)
        mean, std = float(r.mean()), float(r.std())
        last = proxy.net[-1]
        scale = 1.0 / max(std, 1e-6)
        last.weight.mul_(scale)
        last.bias.sub_(mean).mul_(scale)
