"""Jobs, their curves, and how they arrive."""

from evalstop.workload.model import JOB_TYPES, Workload

__all__ = ["JOB_TYPES", "Workload"]
