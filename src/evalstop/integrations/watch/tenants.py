"""Who owns a job: its source (the log file or TensorBoard run it was read from) maps to a
tenant, and a job is known by (source, name), never by its name alone.

The tenant comes from where a log lies, which the platform controls (it mounts or
grants each tenant its own folder), never from what a log says. By default it is the
first path component under the watched root (``ROOT/teamA/run1.jsonl`` -> ``teamA``; a
log directly in the root, ``ROOT/teamA.jsonl``, belongs to ``teamA``).
``--tenant-pattern`` overrides this with a regex whose named group ``tenant`` is
matched (``re.match``) against the source's path relative to the root, with ``/``
separators; a source that does not match belongs to no tenant and is refused.

``--job-prefix TEMPLATE`` (e.g. ``'{tenant}-'``) additionally requires every job name
to start with its tenant's prefix: names are what a scheduler-side action acts on, so a
tenant then cannot even write another tenant's job name. The character right after
``{tenant}`` (here ``-``) is the prefix's separator, and no tenant name may hold it (a
log of such a tenant is refused): else tenant ``team``'s prefix ``team-`` would also
begin tenant ``team-a``'s names.

A tenant's name is its identity (``identity``): it must be in Unicode NFC, and a name
that differs only in case or Unicode form from one already seen (folder ``B`` beside
``b``) is refused, its logs never read. ``claims`` remembers which spelling was first;
the controller shares one with every source and keeps it in the state database.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from evalstop.identity import Claims
from evalstop.integrations.watch.records import Refused, name_problem, show


@dataclass(frozen=True, slots=True)
class JobKey:
    """A job's identity: ``source`` is the absolute path of its log (rotation suffix
    removed) or TensorBoard run directory; ``name`` is the job name the records give."""

    source: str
    name: str


def prefix_separator(job_prefix: str) -> str:
    """The character right after ``{tenant}`` in a ``--job-prefix`` template, or
    ValueError. A tenant's prefix ends there, so no tenant name may hold it: then no
    tenant's prefix is the start of another's."""
    import string

    try:
        parsed = list(string.Formatter().parse(job_prefix))
        job_prefix.format(tenant="t")
    except (ValueError, KeyError, IndexError) as exc:
        raise ValueError(f"bad --job-prefix {job_prefix!r}: {exc}") from None
    names = [name for _text, name, _spec, _conv in parsed]
    if "tenant" not in names:
        raise ValueError(f"--job-prefix {job_prefix!r} must contain {{tenant}}")
    after = parsed[names.index("tenant") + 1][0] if names.index("tenant") + 1 < len(parsed) \
        else ""
    if not after or after[0].isalnum():
        raise ValueError(f"--job-prefix {job_prefix!r} needs a separator right after "
                         "{tenant}, a character that is not a letter or digit (e.g. "
                         "'{tenant}-'); tenant names may not hold it")
    return after[0]


class Tenancy:
    """Maps a source to its tenant and admits (or refuses) a job name for it."""

    def __init__(self, pattern: str | None = None, job_prefix: str | None = None) -> None:
        self.pattern = None
        if pattern is not None:
            try:
                self.pattern = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"bad --tenant-pattern {pattern!r}: {exc}") from None
            if "tenant" not in self.pattern.groupindex:
                raise ValueError(f"--tenant-pattern {pattern!r} needs a named group "
                                 "(?P<tenant>...)")
        self.job_prefix = job_prefix
        self.separator = None if job_prefix is None else prefix_separator(job_prefix)
        self.claims = Claims()

    def tenant(self, root: str, source: str, *, suffix: str = "") -> str:
        """The tenant of ``source`` (an absolute path under ``root``), or Refused."""
        rel = os.path.relpath(source, root).replace(os.sep, "/")
        if self.pattern is not None:
            m = self.pattern.match(rel)
            tenant = m.group("tenant") if m else None
            if not tenant:
                raise Refused("tenant", f"{show(source)}: matches no tenant "
                                        f"(--tenant-pattern {self.pattern.pattern!r}); not read")
        else:
            tenant = rel.split("/", 1)[0]
            if rel == ".":  # a TensorBoard root that is itself a run
                tenant = os.path.basename(root)
            if "/" not in rel and suffix and tenant.endswith(suffix):
                tenant = tenant[: -len(suffix)]
        problem = (name_problem(tenant, "tenant") or self.separator_problem(tenant)
                   or self.claims.claim(tenant))
        if problem is not None:
            raise Refused("tenant", f"{show(source)}: {problem}; not read")
        return tenant

    def separator_problem(self, tenant: str) -> str | None:
        """Why ``tenant`` cannot have a job prefix: its name holds the separator (then
        tenant ``team``'s prefix ``team-`` would also start tenant ``team-a``'s names)."""
        if self.separator is None or self.separator not in tenant:
            return None
        return (f"tenant {show(tenant)!r} holds {self.separator!r}, the character after "
                f"{{tenant}} in --job-prefix {self.job_prefix!r}, which no tenant name may "
                "hold")

    def rotated(self, tenant: str) -> tuple[str, ...]:
        """The rotated-log name patterns of ``tenant``'s own (``rotation``), beside the
        ones every tenant's logs may take."""
        return ()

    def rotated_names(self) -> tuple[str, ...]:
        """Every tenant's own rotated-log name patterns."""
        return ()

    def metric(self, tenant: str, default: str = "eval") -> str:
        """The record field (JSONL) or scalar tag (TensorBoard) holding ``tenant``'s eval:
        one for everyone here; a policy (``policy.PolicyTenancy``) sets it per tenant."""
        return default

    def admit(self, tenant: str, name: str, where: str) -> None:
        """Refuse a job name that does not carry its tenant's prefix (``--job-prefix``)."""
        if self.job_prefix is None:
            return
        prefix = self.job_prefix.format(tenant=tenant)
        if not name.startswith(prefix):
            raise Refused("prefix", f"{where}: job name {show(name)!r} does not start with "
                                    f"its tenant's prefix {show(prefix)!r}")
