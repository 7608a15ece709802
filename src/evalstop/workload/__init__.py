"""Jobs, their curves, and how they arrive."""

from evalstop.workload.arrivals import arrival_rate, offered_load, poisson_arrivals
from evalstop.workload.build import workload_from_table
from evalstop.workload.curves import (
    Curves,
    add_eval_noise,
    dpo_curves,
    eval_grid,
    job_curves,
    lora_curves,
    rlhf_curves,
)
from evalstop.workload.jobcsv import read_job_csv
from evalstop.workload.model import JOB_TYPES, Workload
from evalstop.workload.philly import load_philly
from evalstop.workload.presets import JOB_SPECS, PRESETS, JobTypeSpec, Preset, get_preset
from evalstop.workload.sacct import looks_like_sacct, sacct_table
from evalstop.workload.synthetic import synthetic_workload
from evalstop.workload.table import JobTable
from evalstop.workload.trace import trace_workload

__all__ = [
    "JOB_SPECS",
    "JOB_TYPES",
    "PRESETS",
    "Curves",
    "JobTable",
    "JobTypeSpec",
    "Preset",
    "Workload",
    "add_eval_noise",
    "arrival_rate",
    "dpo_curves",
    "eval_grid",
    "get_preset",
    "job_curves",
    "load_philly",
    "lora_curves",
    "offered_load",
    "poisson_arrivals",
    "read_job_csv",
    "read_jobs",
    "rlhf_curves",
    "sacct_table",
    "synthetic_workload",
    "trace_workload",
    "workload_from_table",
]


def read_jobs(path) -> JobTable:
    """A job trace: a Slurm accounting export (``sacct --parsable2``, recognised by its
    header) or a job CSV."""
    return sacct_table(path) if looks_like_sacct(str(path)) else read_job_csv(path)
