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

    def after(self, first: Batch | None) -> Batch:
        """This batch with ``first``'s records, offsets, notices and budget cuts before its
        own (``first`` is extended and returned; None: this batch as it is)."""
        if first is None:
            return self
        first.records += self.records
        first.offsets.update(self.offsets)
        first.gone += self.gone
        first.refused += self.refused
        first.problems += self.problems
        first.progressed |= self.progressed
        first.over_budget.update(self.over_budget)
        first.pending = self.pending
        return first

    def refuse(self, refusal: Refusal, tenant: str = "") -> None:
        """Add a refusal, marked with its tenant (for the throttled log) when known."""
        self.refused.append(replace(refusal, tenant=tenant) if tenant else refusal)
