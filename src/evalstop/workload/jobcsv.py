"""Read a job trace CSV (the contract in docs/simulator.md, "Job traces (CSV)") into a ``JobTable``.

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
    """The jobs of a job-trace CSV, in file order; ``InputError`` on any bad input.

    Rows are checked column by column (``_fast_columns``); only when that finds a problem
    are they checked again row by row, in file order, to name the first bad line exactly
    as a row-by-row reader would."""
    path = str(path)
    header: list[str] | None = None
    records: list[list[str]] = []
    lines: list[int] = []
    stopped_by: InputError | None = None  # a problem that ends the reading at its line
    try:
        # utf-8-sig: spreadsheet exports often start with a byte-order mark.
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(bounded_lines(f, path))
            try:
                for record in reader:
                    line = reader.line_num  # physical lines, quoted newlines included
                    if not "".join(record).strip():  # blank (whitespace cells only)
                        continue
                    if header is None:
                        header = _header(record, path, line)
                        continue
                    if len(record) != len(header):
                        stopped_by = InputError(
                            f"{path}:{line}: expected {len(header)} fields as in the "
                            f"header, found {len(record)}")
                        break
                    records.append(record)
                    lines.append(line)
            except csv.Error as e:
                stopped_by = InputError(f"{path}:{reader.line_num}: malformed CSV: {e}")
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if header is None:
        if stopped_by is not None:
            raise stopped_by
        raise InputError(f"{path}: empty file (no header, no jobs)")
    cols = None if stopped_by is not None else _fast_columns(header, records)
    if cols is None:
        # Some row is bad (or the reading stopped early): the first problem in file order
        # wins, as it would reading row by row.
        cols = _row_by_row(header, records, lines, path)
        if stopped_by is not None:
            raise stopped_by
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


def _row_by_row(header, records, lines, path) -> dict[str, list]:
    """The columns, checked one row at a time; raises on the first bad row."""
    cols: dict[str, list] = {c: [] for c in REQUIRED + OPTIONAL if c in header}
    first_line: dict[str, int] = {}
    for record, line in zip(records, lines):
        where = f"{path}:{line}"
        fields = dict(zip(header, (cell.strip() for cell in record)))
        _parse_row(fields, where, cols)
        job_id = cols["job_id"][-1]
        if job_id in first_line:
            raise InputError(f"{where}: duplicate job_id {job_id!r} "
                             f"(first on line {first_line[job_id]})")
        first_line[job_id] = line
    return cols


def _fast_columns(header, records) -> dict[str, list] | None:
    """The columns of ``records`` if every row is good, else None. The same conversions
    as ``_parse_row`` (Python's ``float`` on each stripped cell), one column at a time."""
    if not records:
        return {c: [] for c in REQUIRED + OPTIONAL if c in header}
    raw = dict(zip(header, zip(*records)))

    def cells(name):
        return [c.strip() for c in raw[name]]

    cols: dict[str, list] = {}
    try:
        ids = cells("job_id")
        if "" in ids or len(set(ids)) != len(ids):
            return None
        arrival = np.array(list(map(float, cells("arrival_s"))))
        duration = np.array(list(map(float, cells("duration_s"))))
        gpus = np.array(list(map(float, cells("gpus"))))
        if not (np.isfinite(arrival).all() and (arrival >= 0).all()
                and np.isfinite(duration).all() and (duration > 0).all()
                and np.isfinite(gpus).all() and (gpus >= 1).all() and (gpus <= MAX_GPUS).all()
                and (gpus == np.floor(gpus)).all()):
            return None
        cols.update(job_id=ids, arrival_s=arrival.tolist(), duration_s=duration.tolist(),
                    gpus=gpus.astype(np.int64).tolist())
        if "type" in raw:
            types = [t.lower() for t in cells("type")]
            if not set(types) <= set(JOB_TYPES):
                return None
            cols["type"] = types
        if "tenant" in raw:
            cols["tenant"] = [t or DEFAULT_TENANT for t in cells("tenant")]
        if "est_duration_s" in raw:
            est = np.array(list(map(float, cells("est_duration_s"))))
            if not (np.isfinite(est).all() and (est > 0).all()):
                return None
            cols["est_duration_s"] = est.tolist()
    except ValueError:  # a cell that is not a number
        return None
    return cols
