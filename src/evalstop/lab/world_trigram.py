"""The second lab world: a second-order (trigram) reference language, a gold reward that
pays for fluency *and* variety, and a proxy that sees only unigrams and bigrams.

gold(x) = fluency(x) + DIVERSITY_WEIGHT * distinct(x) / SEQ_LEN

- fluency: mean over transitions of max(log p_ref(x_t | x_t-2, x_t-1), LOG_FLOOR), mapped
  to 0..1 as in the first world (the second token is drawn from a bigram row of its own);
- distinct: how many different tokens the sequence uses (a repetitive text is a worse one).

How over-optimization happens here differs from the bigram world. There the proxy learns
"more topic tokens is better" and the policy breaks fluency to pile them up. Here no token
is special: the proxy (``evalstop.lab.worlds`` builds it linear, no hidden layer) scores
bigrams, so it can neither see which context makes a bigram legal (the language is
second-order) nor that repeating itself is bad (variety is not a sum over positions). The
policy first gains a little fluency and variety (gold rises), then follows the proxy's
bigram weights off the trigram chain and starts repeating itself, and gold falls. In one
hacking run (p1000, beta 0.1, seed 1) on-chain transitions went from 95% at the peak to
50% at the end and distinct tokens from 9.1 to 6.0; most of the fall is fluency. More
labels sharpen the bigram weights but cannot cure a blind spot of the model's form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.lab.world import LOG_FLOOR, SEQ_LEN, _check_seqs, _count, _draw

VOCAB = 16  # tokens 0..VOCAB-1
BRANCHING = 3  # successors per context (previous two tokens, or the first token alone)
DIRICHLET_ALPHA = 0.7
DIVERSITY_WEIGHT = 0.3  # gold for using every position on a different token
_SALT = 0x7A1  # world draws differ from the bigram world's for one seed


@dataclass(frozen=True)
class TrigramWorld:
    """``start`` (VOCAB,), ``first`` (VOCAB, VOCAB) p(x_1 | x_0), ``trans`` (VOCAB, VOCAB,
    VOCAB) p(x_t | x_t-2, x_t-1); every row has BRANCHING non-zeros."""

    start: np.ndarray
    first: np.ndarray
    trans: np.ndarray

    @property
    def vocab(self) -> int:
        return len(self.start)

    def sample(self, rng: np.random.Generator, n: int, *, noise: float = 0.0) -> np.ndarray:
        """``n`` sequences ``(n, SEQ_LEN)``; with ``noise`` > 0 each token after the first
        is replaced by a uniform one with that probability (the chain continues from it)."""
        n = _count("n", n)
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise must be in [0, 1], got {noise!r}")
        out = np.empty((n, SEQ_LEN), dtype=np.int64)
        out[:, 0] = _draw(rng, np.broadcast_to(self.start, (n, self.vocab)))
        for t in range(1, SEQ_LEN):
            rows = self.first[out[:, 0]] if t == 1 else self.trans[out[:, t - 2], out[:, t - 1]]
            nxt = _draw(rng, rows)
            if noise > 0.0:
                swap = rng.random(n) < noise
                nxt = np.where(swap, rng.integers(0, self.vocab, size=n), nxt)
            out[:, t] = nxt
        return out

    def transition_logp(self, seqs: np.ndarray) -> np.ndarray:
        """log p_ref of each transition (n, T-1), -inf where off the chain."""
        seqs = _check_seqs(seqs, self.vocab)
        p = np.empty((len(seqs), seqs.shape[1] - 1))
        p[:, 0] = self.first[seqs[:, 0], seqs[:, 1]]
        p[:, 1:] = self.trans[seqs[:, :-2], seqs[:, 1:-1], seqs[:, 2:]]
        with np.errstate(divide="ignore"):
            return np.log(p)

    def fluency(self, seqs: np.ndarray) -> np.ndarray:
        return 1.0 + np.maximum(self.transition_logp(seqs), LOG_FLOOR).mean(axis=1) / -LOG_FLOOR

    def distinct(self, seqs: np.ndarray) -> np.ndarray:
        seqs = _check_seqs(seqs, self.vocab)
        return np.array([len(np.unique(s)) for s in seqs], dtype=float)

    def gold(self, seqs: np.ndarray) -> np.ndarray:
        return self.fluency(seqs) + DIVERSITY_WEIGHT * self.distinct(seqs) / SEQ_LEN


def make_trigram_world(seed: int) -> TrigramWorld:
    """A random trigram world, fixed by ``seed``."""
    rng = np.random.default_rng([_count("world seed", seed, low=0), _SALT])

    def rows(shape):
        out = np.zeros((*shape, VOCAB))
        for idx in np.ndindex(*shape):
            succ = rng.choice(VOCAB, size=BRANCHING, replace=False)
            out[idx + (succ,)] = rng.dirichlet(np.full(BRANCHING, DIRICHLET_ALPHA))
        return out

    first = rows((VOCAB,))
    trans = rows((VOCAB, VOCAB))
    start = rng.dirichlet(np.ones(VOCAB))
    return TrigramWorld(start=start, first=first, trans=trans)
