"""A job table: what a trace says about its jobs, before any curves are attached.

Rows are kept in source order (file order for a CSV); ``arrival_order()`` gives the
stable order by arrival that the simulator uses (ties keep source order).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np


@dataclass(frozen=True)
class JobTable:
    job_id: list[str]
    arrival_s: np.ndarray  # float64 >= 0, source order (not necessarily sorted)
    duration_s: np.ndarray  # float64 > 0: run time on `gpus` GPUs, uninterrupted
    gpus: np.ndarray  # int64 >= 1
    type: np.ndarray | None = None  # str, one of JOB_TYPES; None: the source has no types
    tenant: np.ndarray | None = None  # str; None: the source has no tenants
    est_duration_s: np.ndarray | None = None  # float64 > 0; None: draw estimates
    line: np.ndarray | None = None  # int64: the source line of each row, for messages
    source: str = ""  # a path, or a trace's name
    meta: dict = field(default_factory=dict)  # notes on how it was read (e.g. clamping)

    def __len__(self) -> int:
        return len(self.job_id)

    def take(self, index: np.ndarray) -> JobTable:
        """The rows at ``index`` (an integer array), in that order."""
        index = np.asarray(index, dtype=np.int64)

        def pick(col):
            return None if col is None else col[index]

        return replace(self, job_id=[self.job_id[i] for i in index.tolist()],
                       arrival_s=self.arrival_s[index], duration_s=self.duration_s[index],
                       gpus=self.gpus[index], type=pick(self.type), tenant=pick(self.tenant),
                       est_duration_s=pick(self.est_duration_s), line=pick(self.line))

    def arrival_order(self) -> np.ndarray:
        """Row indices sorted by arrival; stable, so ties keep source order."""
        return np.argsort(self.arrival_s, kind="stable")
