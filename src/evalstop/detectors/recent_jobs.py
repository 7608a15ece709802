"""``RecentJobsNoise``: one tenant's noise estimate in a shared eval group, from a bounded
number of its jobs.

In a shared group each tenant's estimate is one vote (``shared_noise``). Pooled over
every job the tenant ever ran, the vote would cost CPU for every eval of every job and
would be set by whatever the tenant ran most of, long ago included. So the estimate is
``FleetNoise``'s (the same warm-up, clipping and scale) over the second differences of
the tenant's ``MAX_JOBS`` (8) most recently started jobs in the group, at most the first
``PER_JOB`` (64) of each: at most 512 numbers, whatever the tenant's volume, recomputed
only after one of them changed.

A job starts when its first difference (``index`` 0) arrives; a ninth job drops the
oldest, and a dropped job's later differences are not taken again (their ``index`` is
above 0), so a tenant cannot keep an old job's numbers in by writing more. Deterministic:
the jobs in the order they started, each job's differences in its order.
"""

from __future__ import annotations

import math
from typing import Any

from evalstop.detectors.fleet import WARMUP, pooled_sigma

MAX_JOBS = 8
PER_JOB = 64
KIND = "recent-jobs-noise"
MAX_JOB_ID = 64  # characters of a job's id in the state (the controller passes a digest)


class RecentJobsNoise:
    """One tenant's estimate in a shared eval group (module doc). ``sigma()`` is None
    until the jobs held have ``min_count`` differences between them."""

    def __init__(self, *, min_count: int = 30, name: str = "") -> None:
        if not (isinstance(min_count, int) and WARMUP <= min_count <= MAX_JOBS * PER_JOB):
            raise ValueError(f"min_count must be an int in {WARMUP}..{MAX_JOBS * PER_JOB}, "
                             f"got {min_count!r}")
        self.min_count, self.name = min_count, str(name)
        self._jobs: dict[str, list[float]] = {}  # job -> its first differences; oldest first
        self._sigma: float | None = None
        self._stale = False

    def add(self, d: float, index: int | None = None, job: str = "") -> None:
        """Difference number ``index`` (0-based; None: unknown) of job ``job``."""
        held = self._jobs.get(job)
        if held is None:
            if index:  # dropped before (or never started here): stays out
                return
            if len(self._jobs) >= MAX_JOBS:
                del self._jobs[next(iter(self._jobs))]
            held = self._jobs[job] = []
            self._stale = True
        if len(held) >= PER_JOB or (index is not None and index >= PER_JOB):
            return
        d = abs(float(d))
        if math.isfinite(d):
            held.append(d)
            self._stale = True

    @property
    def count(self) -> int:
        """Differences held (at most ``MAX_JOBS * PER_JOB``)."""
        return sum(len(v) for v in self._jobs.values())

    @property
    def jobs(self) -> int:
        """Jobs held (at most ``MAX_JOBS``)."""
        return len(self._jobs)

    def sigma(self) -> float | None:
        if self._stale:
            self._sigma = pooled_sigma([x for v in self._jobs.values() for x in v],
                                       self.min_count)
            self._stale = False
        return self._sigma

    def state_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "min_count": self.min_count, "name": self.name,
                "jobs": [[job, list(v)] for job, v in self._jobs.items()]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RecentJobsNoise:
        """As saved; a state over today's bounds keeps its newest jobs' first
        differences."""
        try:
            if state.get("kind") != KIND:
                raise ValueError("not a RecentJobsNoise state")
            out = cls(min_count=int(state["min_count"]), name=str(state.get("name", "")))
            jobs = [(str(job), [float(x) for x in v[:PER_JOB]])
                    for job, v in state["jobs"][-MAX_JOBS:]]
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad RecentJobsNoise state: {exc}") from None
        if not all(len(job) <= MAX_JOB_ID and all(math.isfinite(x) and x >= 0 for x in v)
                   for job, v in jobs):
            raise ValueError("bad RecentJobsNoise state: a long job id, or negative or "
                             "non-finite values")
        out._jobs = dict(jobs)
        out._stale = True
        return out

    def __repr__(self) -> str:
        s = self.sigma()
        return (f"<RecentJobsNoise {self.name!r} jobs={self.jobs} n={self.count} "
                f"sigma={'?' if s is None else f'{s:.4g}'}>")
