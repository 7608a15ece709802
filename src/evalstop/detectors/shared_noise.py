"""``SharedNoise``: one eval group's noise when several tenants run it, weighed by tenant.

A ``FleetNoise`` pooled over every job of a group lets whoever runs the most jobs set the
group's noise: 300 flat jobs of one tenant drove a pooled sigma from 0.020 to 0.0009 (and
another tenant's healthy jobs were stopped), alternating 0/1 evals raised it to 0.92 (and
nothing was stopped). So each tenant's jobs feed the tenant's own ``FleetNoise``, and what
a tenant's jobs read is:

* in a private group (``max_factor=1``, the default): the tenant's own estimate, exactly;
* in a shared group: the median of the tenants' own estimates (one vote per tenant, each
  from its own jobs only, whatever their number), held within a factor ``max_factor``
  of the reading tenant's own estimate: ``own / F <= sigma <= own * F``. There a
  tenant's own estimate comes from its 8 most recently started jobs in the group, the
  first 64 second differences of each (``recent_jobs``): a tenant's volume costs bounded
  memory and CPU, and old jobs do not outweigh new ones.

Both give None until the reading tenant's own jobs have pooled ``min_count`` second
differences (the rule then does as it does without a fleet): with no estimate of its own,
a tenant would have no reference to bound the others by. **The bound**: whatever other
tenants' jobs write, the sigma a tenant's jobs read is within a factor ``max_factor`` of
what its own jobs measured; with three or more ready tenants, one tenant alone moves the
median no further than the nearest other tenant's estimate.

Deterministic, like ``FleetNoise``: the values depend only on the order differences
arrive in. The state is one ``FleetNoise`` (private) or ``RecentJobsNoise`` (shared)
state per tenant.
"""

from __future__ import annotations

import math
from statistics import median

from evalstop.detectors import recent_jobs
from evalstop.detectors.fleet import FleetNoise
from evalstop.detectors.recent_jobs import RecentJobsNoise

DEFAULT_MAX_FACTOR = 1.5
MAX_FACTOR_LIMIT = 10.0


def check_max_factor(value: float) -> float:
    """``value`` as a float if it is a bound a shared group can use, else ValueError."""
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not (math.isfinite(value) and 1.0 <= value <= MAX_FACTOR_LIMIT)):
        raise ValueError(f"must be a number in 1..{MAX_FACTOR_LIMIT:g} (the most other "
                         f"tenants can scale a tenant's noise by), got {value!r}")
    return float(value)


def estimate_from_state(state: dict) -> FleetNoise | RecentJobsNoise:
    """A tenant's saved estimate, of whichever kind it was saved; ValueError if none."""
    if isinstance(state, dict) and state.get("kind") == recent_jobs.KIND:
        return RecentJobsNoise.from_state(state)
    return FleetNoise.from_state(state)


class SharedNoise:
    """The noise of eval group ``name``: an estimate per tenant (``tenants``: a
    ``FleetNoise`` in a private group, a ``RecentJobsNoise`` in a shared one), read through
    ``view(tenant, job)``. ``max_factor=1`` makes the group private to each tenant."""

    def __init__(self, name: str = "", *, max_factor: float = 1.0,
                 min_count: int = 30) -> None:
        self.name = str(name)
        self.max_factor = check_max_factor(max_factor)
        self.min_count = min_count
        self.tenants: dict[str, FleetNoise | RecentJobsNoise] = {}
        self._median: float | None = None
        self._stale = True  # an add since the median was taken

    @property
    def shared(self) -> bool:
        return self.max_factor > 1.0

    def _empty(self) -> FleetNoise | RecentJobsNoise:
        kind = RecentJobsNoise if self.shared else FleetNoise
        return kind(min_count=self.min_count, name=self.name)

    def own(self, tenant: str) -> FleetNoise | RecentJobsNoise:
        """``tenant``'s own estimate (created empty on first use)."""
        fleet = self.tenants.get(tenant)
        if fleet is None:
            fleet = self.tenants[tenant] = self._empty()
        return fleet

    def restore(self, tenant: str, state: dict) -> None:
        """Put back ``tenant``'s own estimate as saved (its ``state_dict``). One saved while
        the group was private and is now shared, or the reverse, starts empty: its jobs
        fill it again."""
        kind = state.get("kind") if isinstance(state, dict) else None
        if self.shared and kind == recent_jobs.KIND:
            self.tenants[tenant] = RecentJobsNoise.from_state(state)
        elif not self.shared and kind == "fleet-noise":
            self.tenants[tenant] = FleetNoise.from_state(state)
        else:
            self.tenants[tenant] = self._empty()
        self._stale = True

    def view(self, tenant: str, job: str = "") -> TenantNoise:
        """What the detector of ``tenant``'s job ``job`` (an id, e.g. a digest) gets as
        its ``fleet``."""
        return TenantNoise(self, tenant, job)

    def add(self, tenant: str, d: float, index: int | None = None, job: str = "") -> None:
        """Difference number ``index`` of ``tenant``'s job ``job``."""
        fleet = self.own(tenant)
        if self.shared:
            fleet.add(d, index, job)
        else:
            fleet.add(d)
        self._stale = True

    def sigma_for(self, tenant: str) -> float | None:
        """The sigma ``tenant``'s jobs read (module doc), None until its own is ready."""
        fleet = self.tenants.get(tenant)
        own = None if fleet is None else fleet.sigma()
        if own is None or self.max_factor == 1.0:
            return own
        if self._stale:
            ready = [s for f in self.tenants.values() if (s := f.sigma()) is not None]
            self._median, self._stale = median(ready), False
        return min(max(self._median, own / self.max_factor), own * self.max_factor)

    def __repr__(self) -> str:
        return (f"<SharedNoise {self.name!r} tenants={len(self.tenants)} "
                f"max_factor={self.max_factor:g}>")


class TenantNoise:
    """One tenant's view of a ``SharedNoise``, as a detector's ``fleet``: its jobs' second
    differences go to the tenant's own estimate; ``sigma()`` is ``sigma_for(tenant)``."""

    __slots__ = ("group", "job", "tenant")

    def __init__(self, group: SharedNoise, tenant: str, job: str = "") -> None:
        self.group, self.tenant, self.job = group, tenant, job

    def add(self, d: float, index: int | None = None) -> None:
        self.group.add(self.tenant, d, index, self.job)

    def sigma(self) -> float | None:
        return self.group.sigma_for(self.tenant)

    @property
    def count(self) -> int:
        """Second differences the tenant's own estimate holds."""
        fleet = self.group.tenants.get(self.tenant)
        return 0 if fleet is None else fleet.count

    def __repr__(self) -> str:
        s = self.sigma()
        return (f"<TenantNoise {self.group.name!r} tenant={self.tenant!r} n={self.count} "
                f"sigma={'?' if s is None else f'{s:.4g}'}>")
