"""Run settings shared by every experiment of one reproduce run: seeds and workload size."""

from __future__ import annotations

from dataclasses import dataclass, replace

DEFAULT_BASE_SEED = 2606  # arbitrary and fixed; the paper's arXiv number, for memorability


@dataclass(frozen=True)
class Settings:
    n_seeds: int = 20
    base_seed: int = DEFAULT_BASE_SEED
    n_jobs: int = 300  # per workload; ~300 jobs keeps one simulation well under a second
    n_gpus: int = 64  # cluster size, unless an experiment fixes its own
    restart_overhead_s: float = 120.0  # paper: 2 minutes per preemption
    preset: str | None = None  # workload knob preset the studies ran under (--preset)

    def __post_init__(self):
        for name in ("n_seeds", "n_jobs", "n_gpus"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        # numpy seeds entropy from non-negative integers only
        if isinstance(self.base_seed, bool) or not isinstance(self.base_seed, int) \
                or self.base_seed < 0:
            raise ValueError(f"base seed must be an integer >= 0, got {self.base_seed!r}")
        if not self.restart_overhead_s >= 0:
            raise ValueError(f"restart_overhead_s must be >= 0, got {self.restart_overhead_s!r}")


FULL = Settings()
# Small enough for a smoke run in well under 30 s on two cores (about 5 s measured), big
# enough that every method stops something, every plot has data and every interval has
# a spread.
QUICK = replace(FULL, n_seeds=5, n_jobs=100)
