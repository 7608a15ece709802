"""What the state file may hold for one tenant: a byte quota, reserved per job.

A job's evals are kept up to ``keep_evals`` (the newest), so the most a job can take is
known when it is admitted: ``keep_evals`` rows of its key (source path and job name)
plus the job's own row. That worst case is reserved against the tenant's quota at
admission, so a tenant can never grow past it, however its jobs are named or how long
they run; a new job that would not fit is refused (reason ``quota``, one line per
interval), and the tenant's existing jobs go on being followed and stopped.

The per-row figures are SQLite's, measured by ``benchmarks/bench_watch_row_bytes.py``
(which prints each measured size beside what is reserved for it): a key up to a few
hundred bytes costs its bytes plus under 80; a longer one spills into overflow pages.
"""

from __future__ import annotations

DEFAULT_TENANT_BYTES = 1 << 30  # 1 GiB of state file per tenant
SHORT_KEY = 600  # bytes of source + job stored inline in a b-tree cell
EVAL_ROW_BYTES = 80  # a stored eval past its key's bytes (measured <= 72)
LONG_KEY_FACTOR, LONG_KEY_BYTES = 3, 1024  # a key spilled to overflow pages
JOB_ROW_BYTES = 16 * 1024  # the job's row: its key, detector state, best and last


def eval_row_bytes(source: str, job: str) -> int:
    """What one stored eval of this job costs at most."""
    key = len(source.encode("utf-8", "surrogateescape")) + len(job.encode("utf-8",
                                                                          "surrogateescape"))
    if key <= SHORT_KEY:
        return key + EVAL_ROW_BYTES
    return LONG_KEY_FACTOR * key + LONG_KEY_BYTES


def job_bytes(source: str, job: str, keep_evals: int) -> int:
    """The most the state file can hold for one job."""
    return keep_evals * eval_row_bytes(source, job) + JOB_ROW_BYTES


def check_bytes(n: object) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"--tenant-bytes must be an integer >= 1, got {n!r}")
    return n
