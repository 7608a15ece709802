"""What a metric source hands the controller on each poll."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from evalstop.evallog import EvalRecord
from evalstop.integrations.watch.records import Refusal
from evalstop.integrations.watch.store import Offset
from evalstop.integrations.watch.tenants import JobKey


@dataclass(frozen=True, slots=True)
class Item:
    """One accepted record: ``key`` is its job's identity (source, name), ``where``
    (``file:line``) is for messages."""

    rec: EvalRecord
    where: str
    key: JobKey
    tenant: str
    ended: str | None = None  # the run has ended (its status): no action is taken


@dataclass(slots=True)
class Batch:
    """New records from one poll of one source.

    ``records`` the accepted records; ``offsets`` the read positions to persist with this
    batch; ``gone`` the files that disappeared (their offsets are dropped); ``refused``
    the lines and files refused (each logged once and counted by reason); ``problems``
    other one-line notices (a log deleted or replaced); ``progressed`` whether anything
    was consumed at all; ``over_budget`` the tenants that had more to read than one
    poll's budget (``budget``), with what was left of it; ``pending`` that the source's
    own poll is still running, and not stuck (``isolated``): its records come with a
    later batch, and the controller polls again at once.
    """

    source: str
    records: list[Item] = field(default_factory=list)
    offsets: dict[str, Offset] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    progressed: bool = False
    over_budget: dict[str, object] = field(default_factory=dict)
    pending: bool = False

    def refuse(self, refusal: Refusal, tenant: str = "") -> None:
        """Add a refusal, marked with its tenant (for the throttled log) when known."""
        self.refused.append(replace(refusal, tenant=tenant) if tenant else refusal)
