"""The world: a reference language (a random sparse bigram chain) and a gold reward.

The gold reward is what a downstream evaluation measures: the *world feedback*. It is
programmatic so that it can label preference pairs and score held-out samples exactly.

gold(x) = FLUENCY_WEIGHT * fluency(x) + sum_g BONUS_WEIGHT * (1 - exp(-count_g(x) / BONUS_SCALE))

- fluency: mean over transitions of max(log p_ref(x_t | x_t-1), LOG_FLOOR), mapped to 0..1
  (1 = every transition certain under the chain, 0 = every transition off the chain).
- bonus: a few "topic" tokens pay off, with diminishing returns (saturating), so piling
  up one of them, or breaking fluency to reach them, stops paying.

Over-optimization needs a proxy that does not see both halves: preference pairs drawn
near the reference distribution rarely contain off-chain transitions or piles of bonus
tokens, so a proxy fitted on few of them learns "more bonus tokens is better" and little
about fluency; a policy pushed against it trades fluency for bonus tokens, and the gold
score rises, peaks and falls (Gao, Schulman & Hilton 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

VOCAB = 24  # tokens 0..VOCAB-1; the policy adds one BOS symbol of its own
SEQ_LEN = 12  # tokens per sequence
BRANCHING = 4  # successors per token in the reference chain (sparse: 4 of 24)
DIRICHLET_ALPHA = 0.7  # < 1: some transitions much likelier than others
N_BONUS = 3  # how many tokens the gold reward pays for
LOG_FLOOR = float(np.log(1e-3))  # an off-chain transition costs as much as a 1-in-1000 one
FLUENCY_WEIGHT = 1.0
BONUS_WEIGHT = 0.12
BONUS_SCALE = 1.5  # counts at which a bonus token's pay-off is 1 - 1/e of its maximum


@dataclass(frozen=True)
class World:
    """A reference chain (``start`` and ``trans``, row-stochastic) and the bonus tokens."""

    start: np.ndarray  # (VOCAB,) distribution of the first token
    trans: np.ndarray  # (VOCAB, VOCAB) p_ref(next | previous), BRANCHING non-zeros a row
    bonus: np.ndarray  # (N_BONUS,) int token ids the gold reward pays for

    @property
    def vocab(self) -> int:
        return len(self.start)

    def sample(self, rng: np.random.Generator, n: int, *, noise: float = 0.0) -> np.ndarray:
        """``n`` sequences from the reference chain, shape ``(n, SEQ_LEN)``.

        With ``noise`` > 0 each token after the first is replaced by a uniform random one
        with that probability (the chain then continues from the replaced token): samples
        a little off the chain, so preference pairs show some off-chain transitions.
        """
        n = _count("n", n)
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise!r}")
        out = np.empty((n, SEQ_LEN), dtype=np.int64)
        out[:, 0] = _draw(rng, np.broadcast_to(self.start, (n, self.vocab)))
        cum = np.cumsum(self.trans, axis=1)
        for t in range(1, SEQ_LEN):
            u = rng.random(n)
            nxt = np.minimum((u[:, None] > cum[out[:, t - 1]]).sum(axis=1), self.vocab - 1)
            if noise > 0.0:
                swap = rng.random(n) < noise
                nxt = np.where(swap, rng.integers(0, self.vocab, size=n), nxt)
            out[:, t] = nxt
        return out

    def fluency(self, seqs: np.ndarray) -> np.ndarray:
        """Per sequence, 0..1: 1 + mean clipped transition log-probability / |LOG_FLOOR|."""
        seqs = _check_seqs(seqs, self.vocab)
        with np.errstate(divide="ignore"):
            logp = np.log(self.trans[seqs[:, :-1], seqs[:, 1:]])
        return 1.0 + np.maximum(logp, LOG_FLOOR).mean(axis=1) / -LOG_FLOOR

    def bonus_counts(self, seqs: np.ndarray) -> np.ndarray:
        seqs = _check_seqs(seqs, self.vocab)
        return (seqs[:, :, None] == self.bonus[None, None, :]).sum(axis=1)

    def gold(self, seqs: np.ndarray) -> np.ndarray:
        """The gold reward of each sequence (see the module doc)."""
        counts = self.bonus_counts(seqs)
        bonus = BONUS_WEIGHT * (1.0 - np.exp(-counts / BONUS_SCALE)).sum(axis=1)
        return FLUENCY_WEIGHT * self.fluency(seqs) + bonus


def make_world(seed: int) -> World:
    """A random world, fixed by ``seed``: each token's successors and their weights, the
    start distribution, and the bonus tokens (uniformly among all tokens)."""
    rng = np.random.default_rng([_count("world seed", seed, low=0), 0x30D])
    trans = np.zeros((VOCAB, VOCAB))
    for a in range(VOCAB):
        succ = rng.choice(VOCAB, size=BRANCHING, replace=False)
        trans[a, succ] = rng.dirichlet(np.full(BRANCHING, DIRICHLET_ALPHA))
    start = rng.dirichlet(np.ones(VOCAB))
    bonus = np.sort(rng.choice(VOCAB, size=N_BONUS, replace=False))
    return World(start=start, trans=trans, bonus=bonus)


def _draw(rng: np.random.Generator, probs: np.ndarray) -> np.ndarray:
    u = rng.random(len(probs))
    return np.minimum((u[:, None] > np.cumsum(probs, axis=1)).sum(axis=1), probs.shape[1] - 1)


def _check_seqs(seqs, vocab: int) -> np.ndarray:
    seqs = np.asarray(seqs)
    if seqs.ndim != 2 or seqs.shape[1] < 2:
        raise ValueError(f"sequences must be a 2-D array with >= 2 columns, got shape {seqs.shape}")
    if seqs.size and (seqs.min() < 0 or seqs.max() >= vocab):
        raise ValueError(f"token ids must be in 0..{vocab - 1}")
    return seqs.astype(np.int64, copy=False)


def _count(name: str, value, *, low: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)
