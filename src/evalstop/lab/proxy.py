"""The proxy reward model: a small MLP on unigram and bigram counts, fitted by
Bradley-Terry to a limited number of gold-labelled preference pairs.

Pairs are what a labelling budget buys: two sequences near the reference distribution
(some slightly off the chain, see ``PAIR_NOISE``) and which one the gold reward prefers,
drawn with Bradley-Terry noise (``LABEL_TEMP``) as human labels are. Few pairs leave most
bigram weights unfitted: the proxy cannot see what off-chain text costs, which is what a
policy then exploits.
"""

from __future__ import annotations

import numpy as np

from evalstop.lab._torch import torch_module
from evalstop.lab.world import World

torch = torch_module()
nn = torch.nn
F = torch.nn.functional

PAIR_NOISE = (0.0, 0.15)  # half the pair sequences are exact chain samples, half noisier
LABEL_TEMP = 0.05  # P(a preferred) = sigmoid((gold(a) - gold(b)) / LABEL_TEMP)


class ProxyRM(nn.Module):
    """``hidden`` tanh units, or with ``hidden=0`` a linear model of the counts (the
    trigram world's proxy: it cannot even express saturation or interactions)."""

    def __init__(self, vocab: int, hidden: int = 32):
        super().__init__()
        if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 0:
            raise ValueError(f"hidden must be an integer >= 0, got {hidden!r}")
        self.vocab = vocab
        n_features = vocab + vocab * vocab
        self.net = nn.Sequential(nn.Linear(n_features, 1)) if hidden == 0 else \
            nn.Sequential(nn.Linear(n_features, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def features(self, seqs):
        v = self.vocab
        uni = F.one_hot(seqs, v).sum(dim=1)
        bi = F.one_hot(seqs[:, :-1] * v + seqs[:, 1:], v * v).sum(dim=1)
        return torch.cat([uni, bi], dim=1).float()

    def forward(self, seqs):
        return self.net(self.features(seqs)).squeeze(-1)


def preference_pairs(world: World, rng: np.random.Generator, n_pairs: int, *,
                     noise: tuple[float, float] = PAIR_NOISE):
    """``(chosen, rejected)`` arrays, each ``(n_pairs, SEQ_LEN)``, labelled by the gold
    reward with Bradley-Terry noise; the first half of each side sampled with token noise
    ``noise[0]``, the second with ``noise[1]``."""
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, (int, np.integer)) or n_pairs < 1:
        raise ValueError(f"n_pairs must be an integer >= 1, got {n_pairs!r}")
    n_pairs = int(n_pairs)
    half = n_pairs // 2
    a = np.concatenate([world.sample(rng, n_pairs - half, noise=noise[0]),
                        world.sample(rng, half, noise=noise[1])]) if half else \
        world.sample(rng, n_pairs, noise=noise[0])
    b = np.concatenate([world.sample(rng, n_pairs - half, noise=noise[0]),
                        world.sample(rng, half, noise=noise[1])]) if half else \
        world.sample(rng, n_pairs, noise=noise[0])
    margin = (world.gold(a) - world.gold(b)) / LABEL_TEMP
    a_wins = rng.random(n_pairs) < 1.0 / (1.0 + np.exp(-margin))
    chosen = np.where(a_wins[:, None], a, b)
    rejected = np.where(a_wins[:, None], b, a)
    return chosen, rejected


def train_proxy(proxy: ProxyRM, chosen, rejected, *, steps: int, lr: float,
                weight_decay: float, batch: int, gen) -> list[float]:
    """Bradley-Terry: minimise -log sigmoid(r(chosen) - r(rejected)) for a fixed number of
    minibatch steps (minibatches drawn with ``gen``), whatever the number of pairs, so a
    small labelling budget is fitted as hard as a large one. Returns each step's loss."""
    c = torch.as_tensor(chosen, dtype=torch.long)
    r = torch.as_tensor(rejected, dtype=torch.long)
    fc, fr = proxy.features(c), proxy.features(r)  # counts do not change: compute once
    opt = torch.optim.AdamW(proxy.parameters(), lr=lr, weight_decay=weight_decay)
    n = len(c)
    history = []
    for _ in range(steps):
        idx = torch.randint(n, (min(batch, n),), generator=gen)
        margin = proxy.net(fc[idx]).squeeze(-1) - proxy.net(fr[idx]).squeeze(-1)
        loss = -F.logsigmoid(margin).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(float(loss.detach()))
    proxy.requires_grad_(False)
    return history
