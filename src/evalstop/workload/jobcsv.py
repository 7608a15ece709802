"""Read a job trace CSV (the DESIGN.md contract) into a ``JobTable``.

Required columns: ``job_id, arrival_s, duration_s, gpus``. Optional: ``type`` (one of
JOB_TYPES, case-insensitive), ``tenant`` (an empty cell means the default tenant) and
``est_duration_s`` (the duration estimate schedulers see). Other columns are ignored.
Blank lines are skipped. Rows stay in file order.

Every problem raises ``InputError`` with one line: ``FILE:LINE: problem`` (or ``FILE:
problem`` for the file as a whole), so the CLI can print it as it is.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from evalstop.errors import InputError
from evalstop.lines import bounded_lines
from evalstop.workload.build import DEFAULT_TENANT
from evalstop.workload.model import JOB_TYPES
from evalstop.workload.table import JobTable

REQUIRED = ("job_id", "arrival_s", "duration_s", "gpus")
OPTIONAL = ("type", "tenant", "est_duration_s")
MAX_GPUS = 2**31 - 1


def _finite(text: str, column: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {column} is not a number: {text!r}") from None
    if not math.isfinite(value):
        raise InputError(f"{where}: {column} must be finite, got {text!r}")
    return value


def _gpus(text: str, where: str) -> int:
    # "2.0" is accepted (tools that write ints as floats); "2.5", "0", "-1", "nan" are not.
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1 and value == int(value)):
        raise InputError(f"{where}: gpus must be a positive integer, got {text!r}")
    if value > MAX_GPUS:  # would overflow the int64 column (a traceback, not an error)
        raise InputError(f"{where}: gpus must be at most {MAX_GPUS}, got {text!r}")
    return int(value)


def _parse_row(fields: dict[str, str], where: str, cols: dict) -> None:
    """Append one row's values to ``cols`` (lists keyed by column), or raise."""
    job_id = fields["job_id"]
    if job_id == "":
        raise InputError(f"{where}: job_id is empty")
    arrival = _finite(fields["arrival_s"], "arrival_s", where)
    if arrival < 0.0:
        raise InputError(f"{where}: arrival_s must be >= 0, got {fields['arrival_s']!r}")
    duration = _finite(fields["duration_s"], "duration_s", where)
    if duration <= 0.0:
        raise InputError(f"{where}: duration_s must be > 0, got {fields['duration_s']!r}")
    cols["job_id"].append(job_id)
    cols["arrival_s"].append(arrival)
    cols["duration_s"].append(duration)
    cols["gpus"].append(_gpus(fields["gpus"], where))
    if "type" in cols:
        name = fields["type"].lower()
        if name not in JOB_TYPES:
            raise InputError(f"{where}: unknown type {fields['type']!r}; "
                             f"known: {', '.join(JOB_TYPES)}")
        cols["type"].append(name)
    if "tenant" in cols:
        cols["tenant"].append(fields["tenant"] or DEFAULT_TENANT)
    if "est_duration_s" in cols:
        est = _finite(fields["est_duration_s"], "est_duration_s", where)
        if est <= 0.0:
            raise InputError(f"{where}: est_duration_s must be > 0, "
                             f"got {fields['est_duration_s']!r}")
        cols["est_duration_s"].append(est)


def _header(record: list[str], path: str, line: int) -> list[str]:
    names = [name.strip() for name in record]
    seen = set()
    for name in names:
        if name in seen:
            raise InputError(f"{path}:{line}: column {name!r} appears twice in the header")
        seen.add(name)
    missing = [c for c in REQUIRED if c not in seen]
    if missing:
        raise InputError(f"{path}:{line}: missing required column(s): {', '.join(missing)} "
                         f"(need {', '.join(REQUIRED)})")
    return names


def read_job_csv(path: str | Path) -> JobTable:
    """The jobs of a job-trace CSV, in file order; ``InputError`` on any bad input."""
    path = str(path)
    header: list[str] | None = None
    cols: dict[str, list] = {}
    lines: list[int] = []
    first_line: dict[str, int] = {}
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark.
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(bounded_lines(f, path))
            for record in reader:
                line = reader.line_num  # counts physical lines, quoted newlines included
                if all(cell.strip() == "" for cell in record):
                    continue
                if header is None:
                    header = _header(record, path, line)
                    cols = {c: [] for c in REQUIRED + OPTIONAL if c in header}
                    continue
                where = f"{path}:{line}"
                if len(record) != len(header):
                    raise InputError(f"{where}: expected {len(header)} fields as in the "
                                     f"header, found {len(record)}")
                fields = dict(zip(header, (cell.strip() for cell in record)))
                _parse_row(fields, where, cols)
                job_id = cols["job_id"][-1]
                if job_id in first_line:
                    raise InputError(f"{where}: duplicate job_id {job_id!r} "
                                     f"(first on line {first_line[job_id]})")
                first_line[job_id] = line
                lines.append(line)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except csv.Error as e:
        raise InputError(f"{path}:{reader.line_num}: malformed CSV: {e}") from None
    if header is None:
        raise InputError(f"{path}: empty file (no header, no jobs)")
    if not lines:
        raise InputError(f"{path}: no jobs (a header but no rows)")

    def optional(name, dtype):
        return np.array(cols[name], dtype=dtype) if name in cols else None

    return JobTable(job_id=cols["job_id"],
                    arrival_s=np.array(cols["arrival_s"], dtype=float),
                    duration_s=np.array(cols["duration_s"], dtype=float),
                    gpus=np.array(cols["gpus"], dtype=np.int64),
                    type=optional("type", str),
                    tenant=optional("tenant", str),
                    est_duration_s=optional("est_duration_s", float),
                    line=np.array(lines, dtype=np.int64),
                    source=path)
