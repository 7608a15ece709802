"""The dense-eval lab corpora: runs evaluated at every step on a fixed eval set. numpy only.

The shipped lab corpora (``evalstop.lab.corpus``) evaluate 26 times a run, each time on
fresh samples. Many real RLHF/RLVR jobs validate every few steps on one fixed test set
(GSM8K's 1,319 items, say): hundreds of evals a run, whose errors are correlated from one
checkpoint to the next because the items are the same. These corpora are runs of that kind:
the lab's worlds and training, evaluated at every RL step (``eval_every=1``) on one fixed
set of prompts and sampling draws (``eval_set="fixed"``, see ``evalstop.lab.config``), for
250 or 500 steps (world 1) and 150 or 300 steps (world 2): 151 to 501 evals a run.

- ``bigram`` (world 1): the **tuning** part, ``lab_dense_*`` files.
- ``trigram`` (world 2): the **held-out** part, ``lab2_dense_*`` files.

Seeds start at 100, so no run shares a seed (and so a world draw) with the fresh-eval
corpora. Because training never reads the eval streams and a fixed-set eval depends only on
the policy at its step, every 2nd or 4th eval of a run is exactly what that run evaluated 2x
or 4x less often would have logged (tested in ``tests/test_lab_dense.py``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from evalstop.lab.config import RunConfig
from evalstop.lab.worlds import world_spec


@dataclass(frozen=True)
class Block:
    """One run length and the grid run at it (each seed draws its own world)."""

    steps: int
    pairs: tuple[int, ...]
    betas: tuple[float, ...]
    seeds: tuple[int, ...]

    def to_dict(self) -> dict:
        return {"steps": self.steps, "pairs": list(self.pairs), "betas": list(self.betas),
                "seeds": list(self.seeds)}


@dataclass(frozen=True)
class DenseSpec:
    world: str
    file_prefix: str  # PREFIX_corpus.jsonl.gz, PREFIX_labels.csv, PREFIX_corpus.json
    role: str  # which part of a stop rule's choice it may serve
    blocks: tuple[Block, ...]
    eval_every: int = 1

    def files(self) -> tuple[str, str, str]:
        p = self.file_prefix
        return f"{p}_corpus.jsonl.gz", f"{p}_labels.csv", f"{p}_corpus.json"


# Seeds differ between the run lengths, so each corpus spans four worlds. The longer
# runs cost twice as much, so fewer of them: generated on a shared 2-core machine, each
# corpus was sized to take under half an hour there.
DENSE = {
    "bigram": DenseSpec("bigram", "lab_dense", "tuning", (
        Block(250, (300, 1000, 3000, 10000), (0.1, 0.3), (100, 101)),
        Block(500, (300, 1000), (0.1, 0.3), (102, 103)))),
    "trigram": DenseSpec("trigram", "lab2_dense", "held-out", (
        Block(150, (100, 10000), (0.1, 0.3, 0.6, 1.0), (100, 101)),
        Block(300, (100,), (0.1, 0.3, 0.6, 1.0), (102, 103)))),
}


def dense_spec(world) -> DenseSpec:
    """The dense corpus of ``world``; an unknown world is a one-line ValueError."""
    world_spec(world)
    return DENSE[world]


def provenance(spec: DenseSpec) -> dict:
    """What the corpus is, in its metadata: how it was made and which part it plays."""
    return {
        "kind": "dense-eval lab corpus",
        "role": (f"{spec.role} part: " + ("choose stop rules for densely evaluated runs on it"
                                          if spec.role == "tuning" else
                                          "judge stop rules on it; never choose on it")),
        "eval": (f"at step 0 and every {spec.eval_every} RL step(s), on one fixed set of "
                 "prompts scored with one sampling seed at every eval (eval_set=fixed), so "
                 "the eval error is correlated across checkpoints"),
        "seeds": "start at 100: no run shares a seed or a world draw with the fresh-eval corpora",
        "subsampling": "every k-th eval of a run is what the run evaluated every k steps logs",
        "label_rule": "evalstop.lab.labels (the same rule as the fresh-eval corpora)",
    }


def dense_grid(world: str = "bigram") -> list[RunConfig]:
    """The dense corpus' configs in grid order (block, then pairs, beta, seed)."""
    return spec_grid(dense_spec(world))


def spec_grid(spec: DenseSpec) -> list[RunConfig]:
    """The configs of any dense corpus ``spec`` in grid order (block, then pairs, beta, seed)."""
    return [RunConfig.for_world(spec.world, pairs=p, beta=float(b), seed=s, steps=blk.steps,
                                eval_every=spec.eval_every, eval_set="fixed")
            for blk in spec.blocks
            for p, b, s in itertools.product(blk.pairs, blk.betas, blk.seeds)]


def load_dense_corpus(path: str | Path | None = None, *, world: str = "bigram"):
    """``(curves, labels)`` of ``world``'s dense corpus: the shipped one when ``path`` is
    None (``bigram``: tuning, ``trigram``: held out), else the packed files in folder
    ``path``. Keyed by run id, in grid order. No torch."""
    from evalstop.lab.corpus import load_files

    return load_files(dense_spec(world).files(), path)


def load_dense_metadata(path: str | Path | None = None, *, world: str = "bigram") -> dict:
    """The dense corpus' metadata: rule, grid, command, provenance, per-run metadata."""
    from evalstop.lab.corpus import load_meta_file

    return load_meta_file(dense_spec(world).files()[2], path)
