"""Read a Slurm accounting export (``sacct --parsable2``) into a ``JobTable``, for what-if
runs on a platform's own history.

Export (one line per job, ``|`` between fields, a header line first)::

    sacct --allocations --parsable2 --allusers --starttime 2026-01-01 \\
          --format JobIDRaw,JobName,Account,State,Submit,Start,End,AllocTRES > jobs.txt

Required fields: ``JobIDRaw`` (or ``JobID``), ``Submit``, ``Start``, ``End``, ``AllocTRES``;
``Account`` gives the tenant; other fields are kept for callers (``SacctRow.fields``) and
otherwise ignored. Times are sacct's ``YYYY-MM-DDTHH:MM:SS`` (local time) or epoch seconds.
A job's GPUs are AllocTRES's ``gres/gpu=N`` (or the sum of its typed ``gres/gpu:TYPE=N``
entries); its arrival is its Submit, from the earliest in the file; its duration End - Start
(at least 1 s: sacct counts whole seconds).

Rows that are not jobs the cluster ran on GPUs are skipped and counted in the table's
``meta``: job steps (``123.batch``, when exported without ``--allocations``), jobs that
never started (``Start`` Unknown/None), jobs still running (``End`` Unknown) and jobs
without GPUs. Anything malformed is an ``InputError`` naming the file and line.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from evalstop.errors import InputError
from evalstop.lines import bounded_lines
from evalstop.workload.build import DEFAULT_TENANT
from evalstop.workload.table import JobTable

REQUIRED = ("Submit", "Start", "End", "AllocTRES")
ID_FIELDS = ("JobIDRaw", "JobID")
UNKNOWN = {"", "Unknown", "None"}
_GPU = re.compile(r"^gres/gpu(?::[^=]*)?$")


@dataclass(frozen=True)
class SacctRow:
    job_id: str
    submit: float  # epoch seconds
    start: float  # NaN: never started
    end: float  # NaN: not ended
    gpus: int
    account: str
    fields: dict  # every field of the row, by header name
    line: int


def looks_like_sacct(path: str) -> bool:
    """Whether ``path``'s first line is a sacct --parsable2 header (names joined by '|',
    one of them a job id)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline(4096)
    except OSError:
        return False
    names = first.strip().split("|")
    return len(names) > 1 and any(n in names for n in ID_FIELDS)


def _time(text: str, name: str, where: str) -> float:
    text = text.strip()
    if text in UNKNOWN:
        return float("nan")
    if text.isdigit():
        return float(text)
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise InputError(f"{where}: {name} is not a time: {text[:40]!r} "
                         "(expected YYYY-MM-DDTHH:MM:SS or epoch seconds)") from None


def gpus_of(tres: str, where: str) -> int:
    """GPUs in an AllocTRES value (``billing=1,cpu=1,gres/gpu=2,node=1``); 0 if none."""
    plain, typed = None, 0
    for item in filter(None, (x.strip() for x in tres.split(","))):
        key, sep, value = item.partition("=")
        if not _GPU.match(key):
            continue
        if not (sep and value.isdigit()):
            raise InputError(f"{where}: AllocTRES {key} is not a whole number: {item[:40]!r}")
        if key == "gres/gpu":
            plain = int(value)
        else:
            typed += int(value)
    return plain if plain is not None else typed


def read_sacct_rows(path: str) -> tuple[list[SacctRow], dict]:
    """The job rows of an export, in file order, and counts of the rows skipped."""
    path = str(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{path}: not a regular file")
    rows: list[SacctRow] = []
    skipped = {"steps": 0, "never_started": 0, "not_ended": 0, "no_gpus": 0}
    header: list[str] | None = None
    seen: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8-sig") as fh:
            for n, raw in enumerate(bounded_lines(fh, path), 1):
                line = raw.rstrip("\r\n")
                if not line.strip():
                    continue
                where = f"{path}:{n}"
                cells = line.split("|")
                if header is None:
                    header = _header(cells, where)
                    continue
                if len(cells) != len(header):
                    raise InputError(f"{where}: expected {len(header)} fields as in the "
                                     f"header, found {len(cells)}")
                row = _row(dict(zip(header, cells)), where, n, skipped)
                if row is None:
                    continue
                if row.job_id in seen:
                    raise InputError(f"{where}: duplicate job id {row.job_id!r} (first on "
                                     f"line {seen[row.job_id]})")
                seen[row.job_id] = n
                rows.append(row)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    if header is None:
        raise InputError(f"{path}: empty file (no header, no jobs)")
    return rows, skipped


def _header(cells: list[str], where: str) -> list[str]:
    names = [c.strip() for c in cells]
    if len(set(names)) != len(names):
        raise InputError(f"{where}: a field appears twice in the header")
    missing = [c for c in REQUIRED if c not in names]
    if not any(i in names for i in ID_FIELDS):
        missing.insert(0, "JobIDRaw")
    if missing:
        raise InputError(f"{where}: missing sacct field(s): {', '.join(missing)} (export "
                         "with --parsable2 --format JobIDRaw,Account,Submit,Start,End,"
                         "AllocTRES)")
    return names


def _row(f: dict, where: str, n: int, skipped: dict) -> SacctRow | None:
    job_id = (f.get("JobIDRaw") or f.get("JobID") or "").strip()
    if not job_id:
        raise InputError(f"{where}: job id is empty")
    if "." in job_id:  # a step (123.batch, 123.0): its job has its own row
        skipped["steps"] += 1
        return None
    submit = _time(f["Submit"], "Submit", where)
    start = _time(f["Start"], "Start", where)
    end = _time(f["End"], "End", where)
    if np.isnan(submit):
        raise InputError(f"{where}: Submit is unknown")
    if not np.isnan(start) and start < submit:
        raise InputError(f"{where}: Start is before Submit")
    if not (np.isnan(start) or np.isnan(end)) and end < start:
        raise InputError(f"{where}: End is before Start (a negative duration)")
    gpus = gpus_of(f["AllocTRES"], where)
    return SacctRow(job_id, submit, start, end, gpus, (f.get("Account") or "").strip(), f, n)


def sacct_table(path: str) -> JobTable:
    """The GPU jobs that ran, as a job table: arrival from Submit, duration End - Start."""
    rows, skipped = read_sacct_rows(path)
    kept = []
    for r in rows:
        if np.isnan(r.start):
            skipped["never_started"] += 1
        elif np.isnan(r.end):
            skipped["not_ended"] += 1
        elif r.gpus < 1:
            skipped["no_gpus"] += 1
        else:
            kept.append(r)
    if not kept:
        raise InputError(f"{path}: no GPU jobs that started and ended "
                         f"(skipped: {', '.join(f'{v} {k}' for k, v in skipped.items() if v)})")
    t0 = min(r.submit for r in kept)
    return JobTable(job_id=[r.job_id for r in kept],
                    arrival_s=np.array([r.submit - t0 for r in kept]),
                    duration_s=np.array([max(1.0, r.end - r.start) for r in kept]),
                    gpus=np.array([r.gpus for r in kept], dtype=np.int64),
                    tenant=np.array([r.account or DEFAULT_TENANT for r in kept], dtype=str),
                    line=np.array([r.line for r in kept], dtype=np.int64),
                    source=str(path), meta={"sacct_skipped": skipped})
