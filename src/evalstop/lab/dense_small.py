"""Two more dense-eval lab corpora, of runs with small gains: one to choose on, one to judge on.

The first held-out dense corpus (``lab2_dense_*``, the trigram world) showed that a stop
rule which asks for a gain of several noise sigmas misses hacking runs that never gain
much: with few preference pairs the trigram world's proxy is wrong from the start, and the
gold reward falls almost from the first step. Once a rule has been judged on that corpus
it is no longer blind, so a re-choice needs new material of the same kind:

- ``small-tuning``: the trigram world, 150 RL steps (151 evals), pairs 100, 1,000 and
  10,000, betas 0.1-1.0, seeds 200 and 201: the **tuning** part, ``lab2s_tune_*`` files;
- ``small-held-out``: the trigram world, 200 RL steps (201 evals), pairs 100, 300 and
  3,000 (300 and 3,000 not in the tuning part), the same betas, seeds 300 and 301: the **held-out**
  part, ``lab2s_held_*`` files. Judge on it once; never choose on it.

Both evaluate at every step on one fixed eval set, as ``evalstop.lab.dense``. Their seeds
(and so their world draws) are shared with no other corpus (the fresh-eval corpora use
0-7, the dense ones 100-103).
"""

from __future__ import annotations

from pathlib import Path

from evalstop.lab.dense import Block, DenseSpec, provenance, spec_grid
from evalstop.suggest import unknown

BETAS = (0.1, 0.3, 0.6, 1.0)
SMALL = {
    "small-tuning": DenseSpec("trigram", "lab2s_tune", "tuning", (
        Block(150, (100, 1000, 10000), BETAS, (200, 201)),)),
    "small-held-out": DenseSpec("trigram", "lab2s_held", "held-out", (
        Block(200, (100, 300, 3000), BETAS, (300, 301)),)),
}


def small_spec(part) -> DenseSpec:
    """The spec of part ``part``; an unknown name is a one-line ValueError."""
    if not isinstance(part, str) or part not in SMALL:
        raise ValueError(unknown("small-gain dense part", part, SMALL))
    return SMALL[part]


def small_grid(part: str):
    return spec_grid(small_spec(part))


def small_provenance(part: str) -> dict:
    return {**provenance(small_spec(part)), "seeds": (
        "200-201 (tuning) and 300-301 (held out): no run shares a seed or a world draw "
        "with any other lab corpus")}


def load_small_corpus(part: str, path: str | Path | None = None):
    """``(curves, labels)`` of ``part``: the shipped files when ``path`` is None, else the
    packed files in folder ``path``. No torch."""
    from evalstop.lab.corpus import load_files

    return load_files(small_spec(part).files(), path)


def load_small_metadata(part: str, path: str | Path | None = None) -> dict:
    from evalstop.lab.corpus import load_meta_file

    return load_meta_file(small_spec(part).files()[2], path)
