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
import gc
import io
import math
import os
from pathlib import Path

import numpy as np

from evalstop import lines as line_limits
from evalstop.errors import InputError
from evalstop.fileio import special_kind
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


def _printable(text: str, column: str, where: str) -> str:
    """``text`` if it holds no control or other non-printing character (a NUL copied into
    an output CSV would corrupt it for every reader), else InputError naming the row."""
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        raise InputError(f"{where}: {column} {text!r} holds a control or non-printing "
                         f"character (U+{ord(bad):04X})")
    return text


def _parse_row(fields: dict[str, str], where: str, cols: dict) -> None:
    """Append one row's values to ``cols`` (lists keyed by column), or raise."""
    job_id = _printable(fields["job_id"], "job_id", where)
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
        cols["tenant"].append(_printable(fields["tenant"], "tenant", where) or DEFAULT_TENANT)
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
    as a row-by-row reader would. A plain file (no blank or multi-line rows, every line
    short, UTF-8) is read whole and parsed at once (``_whole_file``); anything else, and
    every error, goes the line-by-line way."""
    path = str(path)
    # Opening a FIFO for reading waits for a writer, for ever: refuse anything but a regular
    # file (or a link to one) first.
    kind = None if os.path.isfile(path) else special_kind(path)
    if kind is not None:
        raise InputError(f"{path}: {kind}, not a regular file")
    table = _whole_file(path)
    if table is not None:
        return table
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
    cols = None if stopped_by is not None else _fast_columns(header, list(zip(*records)))
    if cols is None:
        # Some row is bad (or the reading stopped early): the first problem in file order
        # wins, as it would reading row by row.
        cols = _row_by_row(header, records, lines, path)
        if stopped_by is not None:
            raise stopped_by
    if not lines:
        raise InputError(f"{path}: no jobs (a header but no rows)")
    return _table(cols, lines, path)


def _table(cols: dict, lines, path: str) -> JobTable:
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


# Files up to this size may be read whole (the streaming reader holds every row anyway).
WHOLE_FILE_BYTES = 1 << 28


def _whole_file(path: str) -> JobTable | None:
    """The table of a plain file, read at once; None for anything else (and for every
    error): the line-by-line reader then answers, with its exact messages."""
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > WHOLE_FILE_BYTES:
                return None
            data = _short_lines(f, line_limits.MAX_LINE_CHARS)
    except OSError:
        return None
    if data is None:
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    breaks = np.flatnonzero(raw == 10)
    # No line longer than the streaming reader takes (bytes count at least the characters).
    if np.diff(breaks, prepend=-1, append=len(data)).max() > line_limits.MAX_LINE_CHARS:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    paused = gc.isenabled()
    gc.disable()  # a list per row: the collector would walk them all, again and again
    try:
        found = _plain_columns(data, raw, breaks, text) or _csv_columns(text)
        if found is None:
            return None
        header, columns, n_lines = found
        if not "".join(header).strip():
            return None
        try:
            header = _header(header, path, 1)
        except InputError:
            return None
        cols = _fast_columns(header, columns)  # None for a bad or whitespace-only row
        if cols is None:
            return None
        return _table(cols, range(2, n_lines + 1), path)
    finally:
        if paused:
            gc.enable()


def _short_lines(f, limit: int) -> bytes | None:
    """The file's bytes, read a block at a time; None as soon as a line runs past
    ``limit``, so an enormous line is never held whole (the line-by-line reader then
    refuses it)."""
    block = min(1 << 20, limit + 1)
    parts, run = [], 0  # run: bytes since the last newline
    while chunk := f.read(block):
        parts.append(chunk)
        nl = chunk.rfind(b"\n")
        run = run + len(chunk) if nl < 0 else len(chunk) - nl - 1
        if run > limit:
            return None
    return b"".join(parts)


def _plain_columns(data: bytes, raw: np.ndarray, breaks: np.ndarray, text: str):
    """``(header, columns, lines)`` of a file without quotes, NUL or lone carriage
    returns, where every line has the header's number of commas: then the csv module's
    fields are the text split at commas and line ends, so each column is a slice of one
    flat list. None otherwise."""
    if b'"' in data or b"\0" in data or data.count(b"\r") != data.count(b"\r\n"):
        return None
    end = len(data) - (1 if data.endswith(b"\n") else 0)  # a last newline ends the last line
    line_ends = breaks[breaks < end]
    commas = np.flatnonzero(raw == 44)
    per_line = np.diff(np.searchsorted(commas, np.append(line_ends, end)), prepend=0)
    if len(per_line) < 2 or (per_line != per_line[0]).any():
        return None  # a blank line or a short row: the csv way says which
    width = int(per_line[0]) + 1
    body = text.replace("\r\n", "\n")
    body = body.removesuffix("\n")
    fields = body.replace("\n", ",").split(",")
    return fields[:width], [fields[width + j:: width] for j in range(width)], len(per_line)


def _csv_columns(text: str):
    """``(header, columns, lines)`` by the csv module when every row is one line as long
    as the header; None otherwise."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error:
        return None
    if len(rows) < 2 or reader.line_num != len(rows):
        return None  # a quoted newline: line numbers are not row numbers
    if set(map(len, rows)) != {len(rows[0])}:
        return None
    return rows[0], list(zip(*rows[1:])), len(rows)


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


def _fast_columns(header, columns) -> dict[str, list] | None:
    """The columns (each a sequence of cells, one per row) if every row is good, else
    None. The same conversions as ``_parse_row`` (Python's ``float`` on each stripped
    cell), one column at a time."""
    if not columns or not len(columns[0]):
        return {c: [] for c in REQUIRED + OPTIONAL if c in header}
    raw = dict(zip(header, columns))

    def cells(name):
        return list(map(str.strip, raw[name]))

    cols: dict[str, list] = {}
    try:
        ids = cells("job_id")
        if "" in ids or len(set(ids)) != len(ids) or not all(map(str.isprintable, ids)):
            return None
        arrival = np.array(list(map(float, cells("arrival_s"))))
        duration = np.array(list(map(float, cells("duration_s"))))
        gpus = np.array(list(map(float, cells("gpus"))))
        if not (np.isfinite(arrival).all() and (arrival >= 0).all()
                and np.isfinite(duration).all() and (duration > 0).all()
                and np.isfinite(gpus).all() and (gpus >= 1).all() and (gpus <= MAX_GPUS).all()
                and (gpus == np.floor(gpus)).all()):
            return None
        cols.update(job_id=ids, arrival_s=arrival, duration_s=duration,
                    gpus=gpus.astype(np.int64))
        if "type" in raw:
            types = list(map(str.lower, cells("type")))
            if not set(types) <= set(JOB_TYPES):
                return None
            cols["type"] = types
        if "tenant" in raw:
            tenants = cells("tenant")
            if not all(map(str.isprintable, tenants)):
                return None
            cols["tenant"] = [t or DEFAULT_TENANT for t in tenants] if "" in tenants else tenants
        if "est_duration_s" in raw:
            est = np.array(list(map(float, cells("est_duration_s"))))
            if not (np.isfinite(est).all() and (est > 0).all()):
                return None
            cols["est_duration_s"] = est
    except ValueError:  # a cell that is not a number
        return None
    return cols
