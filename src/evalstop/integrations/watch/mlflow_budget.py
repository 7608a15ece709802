"""What one poll of an MLflow server may spend, per tenant and per server.

Each tenant's share of a poll is a number of metric points read (refused ones too), of
requests to the server (run listings, history pages) and of seconds; the server's poll as
a whole has its own seconds and points. Tenants are served in turn from the one after
where the last cut poll stopped, and each tenant's runs from the one after its last read,
so one tenant's flood of runs, huge history or many experiments costs every poll at most
its share, while every other tenant is read on every poll.

A single request cannot be cut short, and one may take longer than a whole share (a page of
a history of millions of points, which the server walks up to the page's offset). Tenants are
read in the order of their slowest request in their last reading, quickest first, and
each tenant's reading is handed over as soon as it is done, so the slow requests of one
hold up no other's records. When one request of a tenant took longer than its whole
share, what its reading ran past the share is owed: it sits out the following polls until
that is repaid at ``repay`` seconds per second of the clock, so however slow its requests,
it takes a bounded part of the server's time, and the polls in which it sits out are as
quick as the other tenants' reads (many quick requests owe nothing: the share cuts them).

A small reading slowed by the server is let finish: past its share, a tenant with at most
``finish_runs`` runs to read, whose every request this poll was quicker than ``finish``
seconds, still reads the first page of each run it has not read yet this poll (never a
second page: a backlog waits for the next poll as before), for at most ``finish`` seconds
less what it still owes for earlier such overruns (repaid at ``repay`` seconds a second,
as above). Its requests may be slow for another tenant's sake (MLflow's SQL store finds a
run's points of a metric through an index on the metric's name, so one run's million
points slow every other run's history request of that metric): a quiet tenant's few new
points then come in the poll that found them, not a poll later, while a tenant that
makes its own requests slow gains at most ``finish`` seconds, and less each poll it
takes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalstop.integrations.watch.budget import DEFAULT_LINES


@dataclass(frozen=True, slots=True)
class MlflowBudget:
    points: int = DEFAULT_LINES  # metric points read per tenant per poll
    requests: int = 40  # requests per tenant per poll (~5-20 ms each on idle loopback)
    seconds: float = 0.4  # per tenant per poll
    server_points: int = 5 * DEFAULT_LINES
    server_seconds: float = 2.0  # the whole poll of one server, listings included
    list_every: float = 10.0  # seconds between listings of the experiments (new ones)
    repay: float = 0.5  # seconds of a tenant's overrun forgiven per second of the clock
    finish: float = 0.4  # seconds past its share a small reading may take, at most
    finish_runs: int = 20  # runs with new points a reading may have to be small
    page: int = 1000  # points per history page (what one request holds in memory)
    run_page: int = 200  # runs per search_runs page (held whole, then only their ids)
    experiments: int = 100_000  # experiments listed per poll, at most

    def __post_init__(self) -> None:
        for name in ("points", "requests", "server_points", "page", "run_page",
                     "experiments", "finish_runs"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"MLflow budget {name} must be an integer >= 1, got {v!r}")
        for name in ("seconds", "server_seconds", "list_every", "repay", "finish"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
                raise ValueError(f"MLflow budget {name} must be > 0, got {v!r}")


@dataclass(slots=True)
class TenantShare:
    """One tenant's budget left in this poll (``until``: its clock deadline). Its first
    history page is always read, however long its listing took: every poll moves every
    tenant on, on a server however slow."""

    points: int
    requests: int
    until: float
    short: bool = False  # something was left unread for want of budget
    read: bool = False  # a history page was read this poll
    longest: float = 0.0  # seconds of its slowest request this poll
    finish_until: float = 0.0  # past ``until``, runs' first pages are read until then
    past: bool = False  # the reading went past its share (``finish``): its overrun is owed

    def spent(self, now: float) -> bool:
        return self.points <= 0 or self.requests <= 0 or now >= self.until

    def history_spent(self, now: float) -> bool:
        return self.read and self.spent(now)

    def may_finish(self, now: float, quick: float) -> bool:
        """True when, its time share spent, a run's first page may still be read: points
        and requests left, every request so far quicker than ``quick`` s, and time left
        in ``finish_until``."""
        return (self.points > 0 and self.requests > 0 and self.longest < quick
                and now < self.finish_until)
