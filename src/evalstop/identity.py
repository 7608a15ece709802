"""A tenant's identity: one exact name, compared exactly.

A tenant is named once, where its name comes from (a policy's ``[tenants.NAME]``, the
folder under the watched root, the ``--tenant-pattern`` group, an MLflow experiment), and
that exact name is what the controller keeps, logs and hands to an action as
``{tenant}``. Two rules make it one identity:

* **Already normalised.** A name must be in Unicode NFC; one that is not (a decomposed
  ``é``, say) is refused, never silently normalised: the name the platform sees on disk
  and the name an action receives are then the same code points.
* **No twins.** Schedulers and tracking servers do not all compare names the same way
  (Slurm matches accounts without regard to case), so two tenants whose names differ only
  in case or Unicode form (their :func:`fold` keys are equal: NFKC, case-folded, NFKC
  again, Unicode's compatibility caseless match) cannot coexist. A policy that names
  such twins is refused when loaded; without a policy the first spelling seen owns the
  key (:class:`Claims`, remembered in the state database) and every later twin is
  refused.

An action that checks a scheduler's record of a job's owner compares it with
``{tenant}`` by :func:`same_owner`: exact code points, never case-folded, so a twin that
slipped through anywhere still cannot match another tenant's account.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

_KNOWN_MAX = 100_000


def fold(name: str) -> str:
    """The key two names of one tenant share: NFKC(casefold(NFKC(name)))."""
    return unicodedata.normalize(
        "NFKC", unicodedata.normalize("NFKC", name).casefold())


def nfc_problem(name: str) -> str | None:
    """Why ``name`` cannot be a tenant's name as given (it is not in NFC), or None."""
    if unicodedata.is_normalized("NFC", name):
        return None
    return "tenant name is not in Unicode NFC (normalise it where it is created)"


def same_owner(owner: str, tenant: str) -> bool:
    """Whether a scheduler's record of a job's owner is ``tenant``: the same code points.
    ``Alice`` is not ``alice``, whatever the scheduler itself would match."""
    return isinstance(owner, str) and isinstance(tenant, str) and owner == tenant


def twin(name: str, earlier: str) -> str:
    """The one-line reason ``name`` is refused beside ``earlier`` (its twin)."""
    return (f"tenant {name!r} differs from tenant {earlier!r} only in case or Unicode "
            "form; a tenant has one name")


def first_twins(names: Iterable[str]) -> tuple[str, str] | None:
    """The first name of ``names`` whose fold key an earlier one holds, with that one."""
    seen: dict[str, str] = {}
    for name in names:
        earlier = seen.setdefault(fold(name), name)
        if earlier != name:
            return name, earlier
    return None


class Claims:
    """Which spelling owns each fold key: the first seen, or the one the state database
    remembers (``owners``, key -> name). ``claim`` admits a name or says why not;
    ``fresh`` are the claims made since the last ``saved``, for the next commit."""

    def __init__(self, owners: dict[str, str] | None = None) -> None:
        self.owners: dict[str, str] = dict(owners or {})
        self._fresh: dict[str, str] = {}
        self._known: dict[str, str | None] = {}  # name -> problem (names repeat per record)

    def claim(self, name: str) -> str | None:
        """None when ``name`` is its tenant's one name (claiming the key if new), else
        the one-line problem (not NFC; a twin of a name that owns the key)."""
        if name in self._known:
            return self._known[name]
        problem = nfc_problem(name)
        if problem is None:
            key = fold(name)
            owner = self.owners.get(key)
            if owner is None:
                owner = self.owners[key] = self._fresh[key] = name
            problem = None if owner == name else twin(name, owner)
        if len(self._known) >= _KNOWN_MAX:  # a cache: the owners decide, not it
            self._known.clear()
        self._known[name] = problem
        return problem

    def fresh(self) -> dict[str, str]:
        return dict(self._fresh)

    def saved(self) -> None:
        self._fresh.clear()
