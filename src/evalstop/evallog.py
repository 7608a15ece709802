"""The eval log: JSON Lines, one record per evaluation, jobs interleaved.

``{"job": str, "step": int, "eval": float}`` plus optional ``loss``, ``proxy``,
``progress`` (0..1), ``time`` (seconds), ``job_id`` (the scheduler's id of the job
that wrote the record: ``evalstop.jobid``; what a stop acts on), ``gpus`` (the job's GPU
count, > 0) and ``end`` (``true`` on a job's last record: the job has ended). Records of
one job may arrive out of step order; readers take them in step order. ``eval`` may be NaN (JSON ``NaN``) or null, which
detectors ignore (see ``evalstop.detectors.base``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from evalstop import jobid
from evalstop.errors import InputError
from evalstop.lines import bounded_lines

OPTIONAL = ("loss", "proxy", "progress", "time")
# Steps a finished log may hold: a non-negative int64 (what a trainer's global step is,
# and what fits an SQLite or numpy integer).
MAX_LOG_STEP = 2**63 - 1


class RecordError(InputError):
    """A record refused by :func:`parse_record`; ``reason`` is a short stable code
    (``json``, ``schema``, ``step``, ``value``) that ``evalstop watch`` counts by."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _show(value: object, limit: int = 60) -> str:
    # Values in messages come from tenant files: bounded, and escaped by repr.
    try:
        text = repr(value)
    except ValueError:  # an int too long for repr (> 4300 digits)
        return "<a number too long to print>"
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, slots=True)
class EvalRecord:
    job: str
    step: int
    eval: float
    loss: float | None = None
    proxy: float | None = None
    progress: float | None = None
    time: float | None = None
    job_id: str | None = None
    gpus: float | None = None
    end: bool = False

    def extras(self) -> dict[str, float | None]:
        return {"loss": self.loss, "proxy": self.proxy, "progress": self.progress}


def _number(obj: dict, key: str, where: str, *, allow_none: bool) -> float | None:
    value = obj.get(key)
    if value is None:
        if allow_none:
            return None if key != "eval" else math.nan
        raise RecordError(f"{where}: missing {key!r}", "schema")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RecordError(f"{where}: {key!r} must be a number, got {_show(value)}", "schema")
    try:
        return float(value)
    except OverflowError:  # an integer literal beyond float64 (e.g. 10**400)
        raise RecordError(f"{where}: {key!r} is too large for a float64", "value") from None


def parse_record(line: str, where: str, metric: str = "eval") -> EvalRecord:
    """Parse one JSONL line; ``where`` (e.g. ``"log.jsonl:12"``) prefixes any error.
    ``metric`` names the field read as the eval score (``eval`` unless a watch policy
    names another, e.g. ``eval_loss``)."""
    # Some Windows tools start a UTF-8 file with a byte-order mark; it is not part of the
    # record. Stripped here so that every reader (replay, watch) accepts it.
    line = line.removeprefix("\ufeff")
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{where}: not valid JSON ({exc.msg})", "json") from None
    except RecursionError:  # e.g. [[[[...]]]] thousands deep: bad input, not a crash
        raise RecordError(f"{where}: JSON nested too deeply", "json") from None
    except ValueError:  # an integer of more than 4300 digits (int_max_str_digits)
        raise RecordError(f"{where}: a number with too many digits", "value") from None
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: expected a JSON object", "schema")
    for key in ("job", "step", metric):
        if key not in obj:
            raise RecordError(f"{where}: missing {key!r}", "schema")
    job = obj["job"]
    if not isinstance(job, (str, int)) or isinstance(job, bool):
        raise RecordError(f"{where}: 'job' must be a string, got {_show(job)}", "schema")
    step = obj["step"]
    # int(inf) raises OverflowError (1e400 parses as inf), so finiteness is checked first.
    if (isinstance(step, bool) or not isinstance(step, (int, float))
            or (isinstance(step, float) and not math.isfinite(step)) or step != int(step)):
        raise RecordError(f"{where}: 'step' must be an integer, got {_show(step)}", "step")
    ev = _number(obj, metric, where, allow_none=True)
    extras = {k: _number(obj, k, where, allow_none=True) for k in OPTIONAL}
    p = extras["progress"]
    if p is not None and not (0.0 <= p <= 1.0):
        raise RecordError(f"{where}: 'progress' must be in [0, 1], got {p!r}", "value")
    job_id = obj.get("job_id")
    if job_id is not None:
        problem = jobid.check(job_id)
        if problem is not None:
            raise RecordError(f"{where}: {problem}", "schema")
        job_id = str(job_id)
    gpus = _number(obj, "gpus", where, allow_none=True)
    if gpus is not None and not (math.isfinite(gpus) and 0 < gpus <= 1e6):
        raise RecordError(f"{where}: 'gpus' must be a number in (0, 1e6], got {gpus!r}",
                          "value")
    end = obj.get("end", False)
    if not isinstance(end, bool):
        raise RecordError(f"{where}: 'end' must be true or false, got {_show(end)}", "schema")
    return EvalRecord(str(job), int(step), ev, **extras, gpus=gpus, end=end,
                      job_id=job_id)


def read_log(path: str | Path) -> dict[str, list[EvalRecord]]:
    """All records of a finished log, per job in order of first appearance, sorted by step.

    A step logged twice for one job is an error (which score counts would be a guess).
    """
    from evalstop.fileio import open_regular

    path = Path(path)
    jobs: dict[str, list[EvalRecord]] = {}
    # A FIFO or device is refused before it is opened (a FIFO would block for ever).
    with open_regular(path, "log", mode="r", encoding="utf-8") as fh:
        try:
            for n, line in enumerate(bounded_lines(fh, str(path)), 1):
                if not line.strip():
                    continue
                rec = parse_record(line, f"{path}:{n}")
                if not 0 <= rec.step <= MAX_LOG_STEP:
                    raise InputError(f"{path}:{n}: 'step' must be in 0..2**63-1 (a "
                                     f"non-negative int64), got {_show(rec.step)}")
                jobs.setdefault(rec.job, []).append(rec)
        except UnicodeDecodeError as exc:  # name the file; the codec's message does not
            raise InputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    for job, recs in jobs.items():
        recs.sort(key=lambda r: r.step)
        for a, b in pairwise(recs):
            if a.step == b.step:
                raise InputError(f"{path}: job {job!r} has step {a.step} twice")
    return jobs
