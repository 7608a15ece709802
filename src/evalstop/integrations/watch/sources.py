"""What a metric source hands the controller on each poll."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalstop.evallog import EvalRecord
from evalstop.integrations.watch.store import Offset


@dataclass(slots=True)
class Batch:
    """New records from one poll of one source.

    ``records`` pairs each record with where it came from (``file:line``) for messages;
    ``offsets`` are the read positions to persist with this batch; ``gone`` the files
    that disappeared (their offsets are dropped); ``problems`` one-line messages about
    input that was skipped; ``progressed`` whether anything was consumed at all.
    """

    source: str
    records: list[tuple[EvalRecord, str]] = field(default_factory=list)
    offsets: dict[str, Offset] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    progressed: bool = False
