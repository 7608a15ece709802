"""The packaged Philly trace (82,247 jobs; provenance in evalstop/data/PHILLY_PROVENANCE.md).

Parsed column-wise (about 0.1 s for the whole trace): one ``str.split`` of the whole text,
then one vectorised numpy conversion per column; no per-job objects beyond the id strings.
"""

from __future__ import annotations

import gzip
from importlib import resources

import numpy as np

from evalstop.workload._checks import count
from evalstop.workload.table import JobTable

PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
PHILLY_N_JOBS = 82_247
# A job needs a positive run time (Workload.validate). Jobs recorded with duration 0 (none
# in the shipped file, but a re-export might have them) are clamped to 1 s, the trace's
# resolution, rather than dropped, so every submit still arrives.
MIN_DURATION_S = 1.0


def _read_text() -> str:
    data = resources.files("evalstop").joinpath("data/philly.csv.gz").read_bytes()
    return gzip.decompress(data).decode("ascii")


def load_philly(limit: int | None = None) -> JobTable:
    """Philly's jobs sorted stably by submit time (``limit``: only the first ``limit``).

    The packaged file, parsed by ``parse_philly``.
    """
    return parse_philly(_read_text(), limit, name="packaged Philly trace")


def parse_philly(text: str, limit: int | None = None, *,
                 name: str = "Philly trace") -> JobTable:
    """The jobs of a CSV in the Philly trace's columns (``PHILLY_COLUMNS``), as ``load_philly``.

    arrival_s is seconds since the first submit; duration_s the recorded run time (0 ->
    MIN_DURATION_S); gpus the requested GPUs; tenant the virtual cluster. job_id is
    ``philly-NNNNN``, NNNNN the row's 0-based position in the file, so an id names the same
    row whatever ``limit`` is. No types: trace_workload draws them from a preset.
    """
    if limit is not None:
        limit = count("limit", limit)
    head, _, body = text.partition("\n")
    header = tuple(head.strip().split(","))
    if header != PHILLY_COLUMNS:
        raise ValueError(f"{name} has columns {header}, expected {PHILLY_COLUMNS}")
    body = body.strip("\n")
    # One split over the whole body, then every 5th field is one column: no per-row work.
    flat = body.replace("\n", ",").split(",")
    n_rows = body.count("\n") + 1
    if len(flat) != len(PHILLY_COLUMNS) * n_rows:
        raise ValueError(f"{name}: {len(flat)} fields in {n_rows} rows")
    k = len(PHILLY_COLUMNS)
    timestamp, duration, gpus, cluster = flat[0::k], flat[1::k], flat[2::k], flat[4::k]

    submit = np.array(timestamp, dtype="datetime64[s]").astype(np.int64)
    dur = np.array(duration, dtype=np.float64)
    n_gpus = np.array(gpus, dtype=np.int64)
    if not (np.all(np.isfinite(dur)) and np.all(dur >= 0) and np.all(n_gpus >= 1)):
        raise ValueError(f"{name} has a negative/non-finite duration or a GPU demand below 1")

    order = np.argsort(submit, kind="stable")
    if limit is not None:
        order = order[:limit]
    n_clamped = int(np.count_nonzero(dur[order] < MIN_DURATION_S))
    dur = np.maximum(dur, MIN_DURATION_S)
    return JobTable(job_id=[f"philly-{i:05d}" for i in order.tolist()],
                    arrival_s=(submit[order] - submit[order[0]]).astype(np.float64),
                    duration_s=dur[order],
                    gpus=n_gpus[order],
                    tenant=np.array(cluster)[order],
                    line=order + 2,  # header is line 1
                    source="philly",
                    meta={"trace": "philly", "n_zero_duration_clamped_to_1s": n_clamped})
