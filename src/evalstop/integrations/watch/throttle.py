"""Refusals said without letting a tenant flood the controller's log.

Per tenant and interval, the first ``burst`` refusals are written one line each; the
rest are only counted, and one summary line per tenant (counts per reason) is written
when the interval ends. Every refusal is still counted in the controller's totals and
metrics; only the writing is bounded.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

from evalstop.integrations.watch.records import show

DEFAULT_BURST = 20
DEFAULT_INTERVAL = 60.0  # seconds


class Throttle:
    def __init__(self, say: Callable[[str], None], *, burst: int = DEFAULT_BURST,
                 interval: float = DEFAULT_INTERVAL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.say, self.burst, self.interval, self.clock = say, burst, interval, clock
        self._window: dict[str, float] = {}  # tenant -> when its interval started
        self._said: Counter = Counter()  # tenant -> lines written this interval
        self._held: dict[str, Counter] = {}  # tenant -> reasons counted, not written
        self._notes: dict[str, str] = {}  # tenant -> a held over-budget note

    def _fresh(self, tenant: str, now: float) -> None:
        start = self._window.get(tenant)
        if start is None or now - start >= self.interval:
            self._summary(tenant)
            self._window[tenant] = now
            self._said[tenant] = 0

    def refused(self, tenant: str, reason: str, message: str) -> None:
        self._fresh(tenant, self.clock())
        if self._said[tenant] < self.burst:
            self._said[tenant] += 1
            self.say(f"{message}; refused")
        else:
            self._held.setdefault(tenant, Counter())[reason] += 1

    def note(self, tenant: str, key: str, message: str) -> None:
        """A notice said at most once per interval per tenant and ``key`` (over budget,
        over quota)."""
        now = self.clock()
        slot = f"{tenant}\0{key}"
        start = self._window.get(slot)
        if start is None or now - start >= self.interval:
            self._window[slot] = now
            self.say(message)

    def flush(self) -> None:
        """Write the summary of every tenant whose interval has ended."""
        now = self.clock()
        for tenant in [t for t in self._held if now - self._window.get(t, now) >= self.interval]:
            self._fresh(tenant, now)

    def close(self) -> None:
        for tenant in list(self._held):
            self._summary(tenant)

    def _summary(self, tenant: str) -> None:
        held = self._held.pop(tenant, None)
        if not held:
            return
        n = sum(held.values())
        reasons = ", ".join(f"{r}: {c}" for r, c in sorted(held.items()))
        self.say(f"tenant {show(tenant)}: {n} more refused lines or files not shown ({reasons}); "
                 f"at most {self.burst} are shown per {self.interval:g} s")
