"""What the controller accepts from a tenant's log, and how it shows tenant text.

Everything read from a log (a line, a job name, a file name) is hostile until checked
here. A record is refused, with a one-line reason, unless:

* it parses as an eval-log record (``evalstop.evallog.parse_record``);
* its step is an integer with ``0 <= step < 2**53`` (an exact float64 and SQLite
  integer: larger steps overflowed SQLite and blocked every poll);
* ``eval`` is finite, NaN or null (NaN/null evals are ignored by detectors, as in
  ``evalstop replay``); ``loss``, ``proxy`` and ``time`` are finite or null;
* its job name is a valid name (:func:`name_problem`).

Refusals carry a short ``reason`` code that the controller counts per reason.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

from evalstop.evallog import EvalRecord, RecordError, parse_record

MAX_STEP = 2**53
MAX_NAME = 256  # characters; a scheduler job name is far shorter
SHOW = 120  # characters of tenant text shown in a message


@dataclass(frozen=True, slots=True)
class Refusal:
    """One refused line or file: ``reason`` is the counter key, ``message`` the log line
    (it starts with ``file:line`` and holds only escaped tenant text); ``tenant`` whose
    log it came from, when known."""

    reason: str
    message: str
    tenant: str = ""


class Refused(Exception):  # noqa: N818 - a refusal, not a crash
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.refusal = Refusal(reason, message)


def show(text: str, limit: int = SHOW) -> str:
    """Tenant text made safe for a terminal or log: printable characters pass, the rest
    (control characters, escapes, newlines, lone surrogates) are backslash-escaped;
    long text is cut."""
    if len(text) <= limit and text.isprintable() and "\\" not in text:
        return text  # the common case, without a walk over the characters
    out = []
    for ch in text[: limit + 1]:
        cat = unicodedata.category(ch)
        if ch == "\\":
            out.append("\\\\")
        elif cat[0] == "C" or cat in ("Zl", "Zp"):  # Cc, Cf, Cs, Co, Cn; line separators
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
        else:
            out.append(ch)
    s = "".join(out)
    return s if len(text) <= limit else s[:limit] + "..."


def name_problem(name: str, what: str = "job name") -> str | None:
    """Why ``name`` cannot name a job, tenant or source, or None when it can.

    Refused: empty, longer than MAX_NAME, a leading ``-`` (it would read as an option to
    a scheduler command), any control/format/unassigned character (NUL, escapes,
    newlines, bidi overrides) or a lone surrogate (not encodable as UTF-8).
    """
    if not name:
        return f"empty {what}"
    if len(name) > MAX_NAME:
        return f"{what} longer than {MAX_NAME} characters"
    if name.startswith("-"):
        return f"{what} {show(name)!r} starts with '-'"
    if name.isprintable():  # excludes every C* and Z* character but the ASCII space
        return None
    for ch in name:
        cat = unicodedata.category(ch)
        if cat[0] == "C" or cat in ("Zl", "Zp"):
            return f"{what} {show(name)!r} holds a control or non-text character"
    return None


def _finite(rec: EvalRecord, where: str) -> None:
    if math.isinf(rec.eval):
        raise Refused("value", f"{where}: 'eval' is infinite")
    for key in ("loss", "proxy", "time"):
        v = getattr(rec, key)
        if v is not None and not math.isfinite(v):
            raise Refused("value", f"{where}: {key!r} must be finite or null, got {v!r}")


def parse_line(raw: bytes, where: str, metric: str = "eval") -> EvalRecord:
    """One log line (bytes, without its newline) as a record, or :class:`Refused`."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused("utf8", f"{where}: not UTF-8 text") from None
    try:
        rec = parse_record(text, where, metric)
    except RecordError as exc:
        raise Refused(exc.reason, str(exc)) from None
    check_record(rec, where)
    return rec


def check_record(rec: EvalRecord, where: str) -> None:
    """The watch-specific checks on a parsed record (any source), or :class:`Refused`."""
    if not 0 <= rec.step < MAX_STEP:
        got = show(str(rec.step), 40)
        raise Refused("step", f"{where}: 'step' must be in [0, 2**53), got {got}")
    problem = name_problem(rec.job)
    if problem is not None:
        raise Refused("name", f"{where}: {problem}")
    _finite(rec, where)
