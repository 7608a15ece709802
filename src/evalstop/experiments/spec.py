"""What an experiment is: sweep points, each a workload setting and the methods run on it.

An ``Experiment`` is plain, picklable data. Running it means, for every point and every
seed, generating one workload and simulating every method of that point on it, so the
methods of a point are compared on the same jobs (paired by seed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# How the report writes the base schedulers' registry names.
DISPLAY = {
    "fifo": "FIFO",
    "sjf-est": "SJF-Est",
    "srtf-est": "SRTF-Est",
    "loss-aware": "LossAware",
    "tiresias": "Tiresias",
}


def display(base: str) -> str:
    return DISPLAY.get(base, base)


@dataclass(frozen=True)
class Method:
    """One scheduler configuration, as ``evalstop.schedulers.build`` takes it."""

    label: str  # unique within a point, e.g. "EvalStop+SRTF-Est"
    base: str  # base scheduler name, e.g. "srtf-est"
    detector: str | None = None  # detector spec for the EvalStop overlay, None for the bare base
    job_types: frozenset[str] | None = None  # job types the detector may stop (None: all)
    baseline: str | None = None  # label of the method at the same point to compare with
    x: float | None = None  # sweep value carried by the method (e.g. k), else the point's
    # ORACLE, not a deployable scheduler: the detector's stops are applied only to the jobs
    # that are truly hacking (the workload's hidden label) and ignored on the others, which
    # run on. The runner, which holds the workload, passes that allow-list to ``build``; the
    # scheduler still sees ``JobView``s only. It measures how much of a rule's gain comes
    # from its true stops.
    oracle_hacking_only: bool = False

    def __post_init__(self):
        if self.oracle_hacking_only and self.detector is None:
            raise ValueError(f"oracle method {self.label!r} needs a detector whose stops it "
                             "restricts")

    def build(self, only_jobs=None):
        """A fresh scheduler. ``only_jobs`` is the oracle's allow-list (indices of the truly
        hacking jobs), required for an oracle method and refused for any other."""
        from evalstop.schedulers import build  # imported here: workers need it, specs do not

        if self.oracle_hacking_only and only_jobs is None:
            raise ValueError(f"oracle method {self.label!r} needs the allow-list of hacking "
                             "jobs (the runner takes it from the workload)")
        if not self.oracle_hacking_only and only_jobs is not None:
            raise ValueError(f"method {self.label!r} is not an oracle; it takes no allow-list")
        return build(self.base, self.detector, job_types=self.job_types, only_jobs=only_jobs)


@dataclass(frozen=True)
class Point:
    label: str  # e.g. "sigma=0.02"
    workload: dict[str, Any]  # keyword arguments for ``synthetic_workload`` (not n_jobs/n_gpus)
    methods: tuple[Method, ...]
    x: float | None = None  # sweep value of the point, for plots
    # A point may fix its own size (the run settings' otherwise: the paper's main setting
    # is 200 jobs) or take a shipped trace's jobs ("philly"; n_jobs then keeps only the
    # first n_jobs of it, None all). See ``jobs`` for how --quick's size combines.
    n_jobs: int | None = None
    n_gpus: int | None = None
    trace: str | None = None
    # A trace point's jobs read from the user's file (``registry.with_trace``), in place of
    # the shipped trace; a JobTable, carried with the task so remote workers need no file.
    table: Any = field(default=None, compare=False, repr=False)

    def jobs(self, settings_n_jobs: int) -> int:
        """Jobs in this point's workload: a point that fixes its GPUs too is a study of its
        own scale (``scale``) and keeps its size; otherwise a smaller run setting
        (--quick) still wins."""
        if self.n_jobs is None:
            return settings_n_jobs
        return self.n_jobs if self.n_gpus is not None else min(self.n_jobs, settings_n_jobs)

    def __post_init__(self):
        if self.trace not in (None, "philly"):
            raise ValueError(f"point {self.label!r}: unknown trace {self.trace!r} (known: philly)")
        labels = [m.label for m in self.methods]
        if len(set(labels)) != len(labels):
            raise ValueError(f"point {self.label!r} has duplicate method labels: {labels}")
        for m in self.methods:
            if m.baseline is not None and m.baseline not in labels:
                raise ValueError(
                    f"method {m.label!r} compares with {m.baseline!r}, not in point {self.label!r}"
                )
        bad = {"n_jobs", "n_gpus"} & set(self.workload)
        if bad:
            raise ValueError(f"point {self.label!r}: {sorted(bad)} come from the run settings")


@dataclass(frozen=True)
class Experiment:
    name: str  # registry name, e.g. "main"
    title: str
    question: str  # what the study asks, one sentence for the report
    points: tuple[Point, ...]
    x_name: str | None = None  # what the sweep varies ("sigma", "k", ...), None if no sweep
    keep: tuple[str, ...] = ()  # method labels whose first-seed runs are kept for plots
    n_gpus: int | None = None  # cluster size if the study fixes one (else the run settings')
    notes: tuple[str, ...] = field(default_factory=tuple)  # setup details for the report
    # Share of the run's seeds this study uses (at least one): a wide grid of cheap cells
    # (the claim map) runs on fewer seeds than the main studies, and says so.
    seed_fraction: float = 1.0

    def seeds(self, n_seeds: int) -> int:
        return max(1, round(n_seeds * self.seed_fraction))

    def method_labels(self) -> list[str]:
        """Every method label, in first-appearance order across points."""
        seen: dict[str, None] = {}
        for p in self.points:
            for m in p.methods:
                seen.setdefault(m.label, None)
        return list(seen)
