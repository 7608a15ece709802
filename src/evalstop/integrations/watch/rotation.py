"""The names a rotated log generation may have, as a small pattern language.

A pattern names a file *beside* the live log, never elsewhere: it is made of
``{name}`` (the live log's file name, ``a.jsonl``), one generation placeholder and
literal letters, digits, ``.``, ``_`` and ``-`` (no ``/``, so no other folder, let alone
one outside the tenant's). The generation is ``{n}`` (logrotate's default: 1 is the
newest) or ``{date}`` (``dateext``: eight digits, ``YYYYMMDD``, the newest the
largest). A pattern ending in ``.gz`` names a gzip-compressed generation (logrotate's
``compress``). Examples: ``{name}.{n}`` (always followed), ``{name}.{n}.gz``,
``{name}-{date}.gz``, ``old-{name}.{n}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT = "{name}.{n}"  # a plain rename: always followed
GZ = "{name}.{n}.gz"  # what --rotated-gz adds
MAX_PATTERN = 64
_TOKEN = re.compile(r"\{name\}|\{n\}|\{date\}|[A-Za-z0-9._-]+")
_GENS = {"{n}": r"(?P<n>[0-9]{1,6})", "{date}": r"(?P<date>[0-9]{8})"}
_DATE_TOP = 10**8  # a date's generation is _DATE_TOP - YYYYMMDD: newer is smaller, > 0


def problem(pattern: object, live_suffix: str = ".jsonl") -> str | None:
    """What is wrong with ``pattern``, or None."""
    if not isinstance(pattern, str) or not 0 < len(pattern) <= MAX_PATTERN:
        return f"must be a string of 1-{MAX_PATTERN} characters"
    tokens = _TOKEN.findall(pattern)
    if "".join(tokens) != pattern:
        return ("may hold only {name}, {n} or {date}, and letters, digits, '.', '_', '-' "
                "(a rotated log lies beside its live log)")
    if tokens.count("{name}") != 1:
        return "must hold {name} exactly once"
    if sum(t in _GENS for t in tokens) != 1:
        return "must hold one generation, {n} or {date}"
    if pattern.endswith(live_suffix):
        return f"must not end in {live_suffix!r} (that names a live log)"
    return None


@dataclass(frozen=True, slots=True)
class RotatedName:
    """A checked pattern, matched against file names."""

    pattern: str
    regex: re.Pattern

    @classmethod
    def of(cls, pattern: str, live_suffix: str = ".jsonl") -> RotatedName:
        why = problem(pattern, live_suffix)
        if why is not None:
            raise ValueError(f"rotated name {pattern!r}: {why}")
        parts = []
        for t in _TOKEN.findall(pattern):
            if t == "{name}":
                parts.append(r"(?P<name>[^/]+" + re.escape(live_suffix) + ")")
            else:
                parts.append(_GENS.get(t, re.escape(t)))
        return cls(pattern, re.compile("".join(parts)))

    def match(self, file_name: str) -> tuple[str, int] | None:
        """(the live log's file name, the generation: 1 and up, smaller newer)."""
        m = self.regex.fullmatch(file_name)
        if m is None:
            return None
        n = m.groupdict().get("n")
        gen = int(n) if n is not None else _DATE_TOP - int(m.group("date"))
        return (m.group("name"), gen) if gen > 0 else None
