"""The lab's worlds by name: how each draws its reference language and gold reward, the
run settings it differs in, its corpus grid and the names of its shipped files. numpy only.

- ``bigram`` (the default, the first world): a sparse bigram chain, gold = fluency +
  saturating topic-token bonus, an MLP proxy on unigram and bigram counts
  (``evalstop.lab.world``).
- ``trigram`` (the held-out world): a sparse trigram chain, gold = fluency + variety, a
  *linear* proxy on the same counts (``evalstop.lab.world_trigram``).

A second world exists so that a stop rule chosen on one is judged on another whose curves
it never shaped (issue 11): the policy, the RL and the label rule are shared, the task and
the proxy's blind spot are not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalstop.suggest import unknown


@dataclass(frozen=True)
class WorldSpec:
    name: str
    file_prefix: str  # shipped files: PREFIX_corpus.jsonl.gz, PREFIX_labels.csv, PREFIX_corpus.json
    pairs: tuple[int, ...]  # the corpus grid
    betas: tuple[float, ...]
    n_seeds: int
    command: str  # the command that regenerated the shipped corpus
    config: dict = field(default_factory=dict)  # RunConfig fields this world sets otherwise
    pair_noise: tuple[float, float] = (0.0, 0.15)  # token noise of the two halves of the pairs

    def make(self, seed: int):
        if self.name == "trigram":
            from evalstop.lab.world_trigram import make_trigram_world

            return make_trigram_world(seed)
        from evalstop.lab.world import make_world

        return make_world(seed)


DEFAULT_WORLD = "bigram"
WORLDS = {
    "bigram": WorldSpec(
        "bigram", "lab", (100, 300, 1000, 3000, 10000), (0.0, 0.1, 0.3), 8,
        "evalstop lab corpus --out lab_runs --pack-dir src/evalstop/data --workers 1"),
    "trigram": WorldSpec(
        "trigram", "lab2", (100, 1000, 10000), (0.1, 0.3, 0.6, 1.0), 6,
        "evalstop lab corpus --world trigram --out lab2_runs --pack-dir src/evalstop/data "
        "--workers 2",
        config={"proxy_hidden": 0, "steps": 150, "eval_every": 6, "sft_steps": 300},
        pair_noise=(0.1, 0.3)),
}


def world_spec(name) -> WorldSpec:
    """The spec of world ``name``; an unknown name is a one-line ValueError."""
    if not isinstance(name, str) or name not in WORLDS:
        raise ValueError(unknown("lab world", name, WORLDS))
    return WORLDS[name]
