"""Fair share between tenants: what one poll may read for one tenant.

Each poll gives every tenant the same :class:`Budget` (lines, bytes, files opened,
TensorBoard events), spent as its logs are read. A tenant's files are taken round-robin
from the one after where its last poll stopped, so a backlog drains over several polls
while every other tenant's logs are still read on every poll; a poll's memory is bounded
by the budget times the tenants, never by what one tenant wrote. While any tenant has
more to read, the controller polls again without waiting for the interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Per tenant and poll. Small, so that a poll stays short (the controller polls again at
# once while a backlog is left: a backlog still drains at full speed, in short polls that
# read every other tenant too). 10,000 lines take ~0.3 s on one idle core.
DEFAULT_LINES = 10_000
DEFAULT_BYTES = 2 * 1024 * 1024
DEFAULT_FILES = 1_000
DEFAULT_EVENTS = 5_000  # each checksummed in Python: ~40 us
DEFAULT_ENTRIES = 5_000  # folder entries looked at (lstat) per tenant and poll


@dataclass(frozen=True, slots=True)
class Budget:
    """What one tenant may read in one poll; ``lines`` counts refused lines too (a
    flood of invalid lines costs as much as valid ones)."""

    lines: int = DEFAULT_LINES
    bytes: int = DEFAULT_BYTES
    files: int = DEFAULT_FILES
    events: int = DEFAULT_EVENTS
    entries: int = DEFAULT_ENTRIES

    def __post_init__(self) -> None:
        for name in ("lines", "bytes", "files", "events", "entries"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"budget {name} must be an integer >= 1, got {v!r}")

    def share(self) -> Share:
        return Share(self.lines, self.bytes, self.files, self.events)


@dataclass(slots=True)
class Share:
    """One tenant's budget left in this poll."""

    lines: int
    bytes: int
    files: int
    events: int
    short: bool = False  # something was left unread for want of budget

    @property
    def spent(self) -> bool:
        return self.lines <= 0 or self.bytes <= 0 or self.files <= 0 or self.events <= 0


class Shares:
    """The budget of every tenant in one poll, and where each one's reading resumes."""

    def __init__(self, budget: Budget, cursors: dict[str, str]) -> None:
        self.budget = budget
        self._cursors = cursors  # tenant -> the last file read (kept across polls)
        self._shares: dict[str, Share] = {}

    def of(self, tenant: str) -> Share:
        s = self._shares.get(tenant)
        if s is None:
            s = self._shares[tenant] = self.budget.share()
        return s

    def order(self, tenant: str, paths: Sequence[str]) -> list[str]:
        """``paths`` (sorted) from the one after this tenant's last read, wrapping."""
        last = self._cursors.get(tenant)
        if last is None:
            return list(paths)
        i = _after(paths, last)
        return list(paths[i:]) + list(paths[:i])

    def read(self, tenant: str, path: str) -> None:
        self._cursors[tenant] = path

    def short(self) -> dict[str, Share]:
        """The tenants that had more to read than their budget."""
        return {t: s for t, s in self._shares.items() if s.short}


def _after(paths: Sequence[str], last: str) -> int:
    lo, hi = 0, len(paths)
    while lo < hi:  # first index with paths[i] > last
        mid = (lo + hi) // 2
        if paths[mid] <= last:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < len(paths) else 0


class Windows:
    """The part of the listing each tenant's entries may take in one poll: at most
    ``cap`` of them, from the one after where its last poll stopped; one that reaches
    the end starts again from the beginning on its next poll. So a tenant with a huge
    tree costs one window a poll, and lists all of it over several polls, while a
    tenant with fewer entries than the cap is listed whole on every poll.

    Keys are a path's parts (a tuple), the walk's order. ``covered`` says whether this
    poll looked where a path would be: only then does its absence count (a log is taken
    as deleted after ``missing_polls`` such listings in a row)."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._cursor: dict[str, tuple] = {}  # tenant -> last key examined (across polls)
        self.begin()

    def begin(self) -> None:
        self._start = dict(self._cursor)
        self._count: dict[str, int] = {}
        self._last: dict[str, tuple] = {}
        self._stop: dict[str, tuple] = {}  # tenants cut this poll -> their last key

    def admit(self, tenant: str, key: tuple) -> bool:
        start = self._start.get(tenant)
        if (start is not None and key <= start) or tenant in self._stop:
            return False
        n = self._count.get(tenant, 0)
        if n >= self.cap:
            self._stop[tenant] = self._last[tenant]
            return False
        self._count[tenant], self._last[tenant] = n + 1, key
        return True

    def end(self) -> None:
        for tenant in set(self._start) | set(self._count):
            if tenant in self._stop:
                self._cursor[tenant] = self._stop[tenant]
            else:  # reached the end of the walk: the next window starts at the beginning
                self._cursor.pop(tenant, None)

    def covered(self, tenant: str, key: tuple) -> bool:
        start, stop = self._start.get(tenant), self._stop.get(tenant)
        return (start is None or key > start) and (stop is None or key <= stop)

    def cut(self) -> set[str]:
        """The tenants whose entries did not all fit this poll."""
        return set(self._stop)
