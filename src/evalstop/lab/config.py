"""One lab run's settings. Plain data, numpy-free and torch-free, so the CLI and the
corpus code can build and check configs without importing torch.

The defaults are the calibrated setting the shipped corpus uses (docs/lab.md, "How the setup
was calibrated", says how they were chosen); ``pairs``, ``beta`` and ``seed`` are what a
corpus varies.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

MAX = {"pairs": 1_000_000, "steps": 100_000, "beta": 1e6}
# How each eval draws its items. "fixed" reuses one set of prompts and one sampling seed at
# every eval, so consecutive evals share the items' difficulty: the eval error is correlated
# across checkpoints (it moves only where the policy changed), as on a fixed test set such
# as GSM8K's, and an eval's value depends only on the policy at that step, not on which
# other steps were evaluated.
EVAL_SETS = ("fresh", "fixed")


@dataclass(frozen=True)
class RunConfig:
    pairs: int  # gold-labelled preference pairs the proxy is fitted on
    beta: float  # KL penalty to the initial policy (0 = none)
    seed: int  # fixes everything: world, pairs, initialisation, sampling
    steps: int = 250  # RL steps
    eval_every: int = 10  # evaluate at step 0 and every this many steps
    n_eval: int = 256  # fresh samples per evaluation
    n_prompts: int = 16  # prompts per RL step
    group: int = 8  # completions per prompt (GRPO group)
    lr: float = 5e-4  # RL learning rate (Adam)
    sft_steps: int = 150
    sft_batch: int = 128
    sft_lr: float = 1e-2
    proxy_steps: int = 300
    proxy_batch: int = 256
    proxy_lr: float = 1e-2
    proxy_weight_decay: float = 1e-2
    proxy_hidden: int = 32
    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 2
    world_seed: int | None = None  # None: the world is drawn from ``seed`` too
    world: str = "bigram"  # which world (``evalstop.lab.worlds``): task, gold and proxy kind
    # "fresh": every eval draws new prompts and samples (independent eval noise); "fixed":
    # every eval scores the same prompts with the same random draws, like a fixed benchmark
    # whose items are the same at every checkpoint (EVAL_SETS says more).
    eval_set: str = "fresh"

    def __post_init__(self):
        ints = {"pairs": 1, "seed": 0, "steps": 1, "eval_every": 1, "n_eval": 2,
                "n_prompts": 1, "group": 2, "sft_steps": 0, "sft_batch": 1, "proxy_steps": 1,
                "proxy_batch": 1, "proxy_hidden": 0, "d_model": 1, "n_layers": 1, "n_heads": 1}
        for name, low in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {v!r}")
        from evalstop.lab.worlds import world_spec

        world_spec(self.world)  # an unknown world fails here, before any work
        if self.eval_set not in EVAL_SETS:
            raise ValueError(f"unknown eval set {self.eval_set!r} (known: {', '.join(EVAL_SETS)})")
        if self.world_seed is not None and (isinstance(self.world_seed, bool)
                                            or not isinstance(self.world_seed, int)
                                            or self.world_seed < 0):
            raise ValueError(f"world_seed must be None or an integer >= 0, got {self.world_seed!r}")
        for name in ("beta", "lr", "sft_lr", "proxy_lr", "proxy_weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
        if self.beta < 0:
            raise ValueError(f"beta must be >= 0, got {self.beta!r}")
        # Upper bounds far beyond the calibrated grid, so that a typo fails at once instead
        # of as a traceback or an endless run: beta 1e100 overflowed float32 sampling,
        # pairs 1e14 asked for petabytes, steps 1e14 would never finish.
        for name, high in MAX.items():
            if getattr(self, name) > high:
                raise ValueError(f"{name} must be <= {high}, got {getattr(self, name)!r}")
        for name in ("lr", "sft_lr", "proxy_lr"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if self.proxy_weight_decay < 0:
            raise ValueError(f"proxy_weight_decay must be >= 0, got {self.proxy_weight_decay!r}")
        if self.steps % self.eval_every:
            raise ValueError(f"steps={self.steps} must be a multiple of eval_every="
                             f"{self.eval_every} (the last eval is at the last step)")
        if self.steps // self.eval_every < 3:
            # The label needs at least 4 evals (a peak and a 3-eval end), see labels.py.
            raise ValueError(f"steps={self.steps} / eval_every={self.eval_every} must be >= 3 "
                             "(at least 4 evals, counting step 0)")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")

    @classmethod
    def for_world(cls, world: str = "bigram", **kwargs) -> RunConfig:
        """A config of ``world`` with the settings that world differs in (e.g. the trigram
        world's linear proxy, ``proxy_hidden=0``), unless ``kwargs`` set them."""
        from evalstop.lab.worlds import world_spec

        return cls(**{**world_spec(world).config, **kwargs, "world": world})

    @property
    def run_id(self) -> str:
        """Names the run by what a corpus varies, e.g. ``p300-b0.05-s3``; a world other
        than the first is named in front (``trigram-p300-b0-s3``), so runs of two worlds
        never share a file name; a fixed eval set is named behind, with the run's length
        and the eval interval (``p300-b0-s3-t500-fixed-e2``)."""
        base = f"p{self.pairs}-b{self.beta:g}-s{self.seed}"
        if self.eval_set == "fixed":  # a fixed-set run never shares a name with a fresh one
            base += f"-t{self.steps}-fixed-e{self.eval_every}"
        return base if self.world == "bigram" else f"{self.world}-{base}"

    @property
    def world_draw(self) -> int:
        """The seed the world (chain, bonus tokens) is drawn from."""
        return self.seed if self.world_seed is None else self.world_seed

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["eval_set"] == "fresh":  # the default: saved configs of older runs stay as they were
            del d["eval_set"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> RunConfig:
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown run config key(s) {unknown}")
        return cls(**d)
