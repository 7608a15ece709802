"""GRPO-style REINFORCE against the proxy, with a KL penalty to the initial policy.

Each step draws ``n_prompts`` first tokens, completes each ``group`` times, scores the
completions with the proxy, and normalises rewards within each group (GRPO: the group
mean is the baseline, so no value model is needed). One on-policy gradient step on

    loss = -mean(A * log pi(completion)) / tokens + beta * mean(k3 KL per token)

where k3 = exp(d) - d - 1, d = log pi_ref - log pi (the low-variance, non-negative
estimator GRPO uses). beta = 0 is unregularised optimisation of the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.lab._torch import torch_module
from evalstop.lab.world import World

torch = torch_module()


@dataclass(frozen=True)
class StepStats:
    proxy: float  # mean proxy reward of the step's samples
    kl: float  # Monte-Carlo KL(pi || pi_ref) per sequence on those samples
    objective_loss: float  # beta * kl - proxy: the regularised objective, negated


def _token_logp(policy, seqs):
    """log pi of each completion token (positions 1..T-1), shape (B, T-1)."""
    lp = policy.log_probs(seqs)
    return lp.gather(-1, seqs.unsqueeze(-1)).squeeze(-1)[:, 1:]


def grpo_step(policy, ref, proxy, opt, prompts: np.ndarray, *, group: int, beta: float,
              gen) -> StepStats:
    prompts = torch.as_tensor(prompts, dtype=torch.long).repeat_interleave(group)
    seqs = policy.sample(prompts, gen)
    with torch.no_grad():
        reward = proxy(seqs)
        r = reward.reshape(-1, group)
        adv = ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-6))
        adv = adv.reshape(-1)
        ref_lp = _token_logp(ref, seqs)
    lp = _token_logp(policy, seqs)
    pg = -(adv[:, None] * lp).mean()
    d = ref_lp - lp
    k3 = torch.exp(d) - d - 1.0
    loss = pg + beta * k3.mean() if beta > 0.0 else pg
    opt.zero_grad()
    loss.backward()
    opt.step()
    kl = float((lp.detach() - ref_lp).sum(dim=1).mean())
    proxy_mean = float(reward.mean())
    return StepStats(proxy=proxy_mean, kl=kl, objective_loss=beta * kl - proxy_mean)


@torch.no_grad()
def evaluate(policy, ref, proxy, world: World, prompts: np.ndarray, gen) -> dict[str, float]:
    """Scores of fresh samples, one completion per prompt. KL and entropy are exact per
    position along the sampled prefixes (summed over the vocabulary), which is far less
    noisy than the sampled-token estimate."""
    seqs = policy.sample(torch.as_tensor(prompts, dtype=torch.long), gen)
    lp = policy.log_probs(seqs)[:, 1:]
    lr = ref.log_probs(seqs)[:, 1:]
    p = lp.exp()
    kl = (p * (lp - lr)).sum(-1).sum(-1).mean()  # per sequence
    entropy = -(p * lp).sum(-1).mean()  # per token, nats
    gold = world.gold(seqs.numpy())
    return {"gold": float(gold.mean()), "gold_se": float(gold.std(ddof=1) / np.sqrt(len(gold))),
            "proxy": float(proxy(seqs).mean()), "kl": float(kl), "entropy": float(entropy)}
