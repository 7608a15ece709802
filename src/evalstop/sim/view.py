"""What schedulers and detectors may see of a job: the information boundary.

A ``JobView`` has no field for the hidden label (hacking or healthy), the true duration or
any score not yet observed; it is filled by the simulator as evals happen. The boundary is
structural: ``__slots__`` leaves nowhere to hang a hidden field, and the view holds no
reference back to the workload or the simulator.
"""

from __future__ import annotations


class JobView:
    __slots__ = (  # noqa: RUF023 (kept in reading order)
        "index",  # row in the workload; an opaque id for the simulator's own bookkeeping
        "job_id",
        "type",
        "tenant",
        "gpus",
        "arrival_s",
        "est_duration_s",
        "progress",  # training progress at the last eval checkpoint or preemption, 0..1
        "steps",  # eval steps observed so far (1, 2, ...)
        "evals",  # eval scores observed so far
        "losses",  # training loss reported with each eval
        "proxies",  # proxy reward reported with each eval
        "attained_gpu_s",  # GPU-seconds of service so far (as of the last checkpoint)
        "n_preemptions",
        "running",
    )

    def __init__(self, index, job_id, type, tenant, gpus, arrival_s, est_duration_s):
        self.index = index
        self.job_id = job_id
        self.type = type
        self.tenant = tenant
        self.gpus = gpus
        self.arrival_s = arrival_s
        self.est_duration_s = est_duration_s
        self.progress = 0.0
        self.steps: list[int] = []
        self.evals: list[float] = []
        self.losses: list[float] = []
        self.proxies: list[float] = []
        self.attained_gpu_s = 0.0
        self.n_preemptions = 0
        self.running = False

    @property
    def est_remaining_s(self) -> float:
        """SRTF-Est's key: the estimated time left as of the last checkpoint."""
        from evalstop.schedulers.srtf import remaining_s  # (the schedulers import this module)

        return remaining_s(self.est_duration_s, self.progress)

    def __repr__(self) -> str:
        return f"<JobView {self.job_id} {self.type} gpus={self.gpus} progress={self.progress:.2f}>"
