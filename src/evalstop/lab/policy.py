"""The policy: a tiny causal transformer over the world's tokens, and its SFT pretraining.

Pretraining by maximum likelihood on reference-chain samples gives the "SFT policy" that
RL starts from and that the KL penalty holds it to. Sequences are generated from a BOS
symbol (id ``vocab``); the first token is the prompt (drawn from the reference start
distribution), the policy writes the rest.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from evalstop.lab._torch import torch_module
from evalstop.lab.world import SEQ_LEN, World

torch = torch_module()
nn = torch.nn
F = torch.nn.functional


@dataclass(frozen=True)
class PolicyConfig:
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 1
    d_ff: int = 64

    def __post_init__(self):
        for name in ("d_model", "n_heads", "n_layers", "d_ff"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")


class Policy(nn.Module):
    def __init__(self, vocab: int, cfg: PolicyConfig = PolicyConfig(), seq_len: int = SEQ_LEN):
        super().__init__()
        self.vocab, self.seq_len = vocab, seq_len
        self.tok = nn.Embedding(vocab + 1, cfg.d_model)  # + BOS
        self.pos = nn.Embedding(seq_len, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, vocab)
        mask = torch.triu(torch.full((seq_len, seq_len), float("-inf")), diagonal=1)
        self.register_buffer("causal", mask, persistent=False)

    def logits(self, seqs):
        """Next-token logits for every position: row t predicts token t of ``seqs``
        from BOS and tokens 0..t-1. ``seqs`` (B, T) long, T <= seq_len."""
        bos = torch.full((seqs.shape[0], 1), self.vocab, dtype=torch.long)
        return self._forward(torch.cat([bos, seqs[:, :-1]], dim=1))

    def _forward(self, inp):
        t = inp.shape[1]
        h = self.tok(inp) + self.pos.weight[:t]
        h = self.blocks(h, mask=self.causal[:t, :t], is_causal=True)
        return self.head(self.norm(h))

    def log_probs(self, seqs):
        """Per-position log-probability tables (B, T, vocab)."""
        return F.log_softmax(self.logits(seqs), dim=-1)

    @torch.no_grad()
    def sample(self, prompts, gen):
        """Complete first tokens ``prompts`` (B,) to full sequences, with generator ``gen``."""
        seqs = torch.as_tensor(prompts, dtype=torch.long).reshape(-1, 1)
        bos = torch.full_like(seqs, self.vocab)
        for _ in range(1, self.seq_len):
            # Input BOS + the tokens so far: the last position predicts the next token.
            probs = torch.softmax(self._forward(torch.cat([bos, seqs], dim=1))[:, -1], dim=-1)
            nxt = torch.multinomial(probs, 1, generator=gen)
            seqs = torch.cat([seqs, nxt], dim=1)
        return seqs


def frozen_copy(policy: Policy) -> Policy:
    ref = copy.deepcopy(policy)
    ref.requires_grad_(False)
    return ref


def pretrain(policy: Policy, world: World, rng: np.random.Generator, *, steps: int,
             batch: int, lr: float) -> list[float]:
    """Maximum likelihood on fresh reference samples; returns the loss of each step.

    Fresh samples every step (no fixed dataset): the SFT policy approximates the chain
    itself, not a finite sample of it.
    """
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        seqs = torch.from_numpy(world.sample(rng, batch))
        logits = policy.logits(seqs)
        loss = F.cross_entropy(logits.reshape(-1, policy.vocab), seqs.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses
