"""The line ``evalstop watch`` prints when it starts: what it follows, the rule per tenant,
and where its page is, so that a controller is never running silently."""

from __future__ import annotations

from typing import Any

from evalstop.detectors import make_detector
from evalstop.integrations.watch.policy import Policy
from evalstop.integrations.watch.records import show


def _followed(src: Any) -> str:
    metric = getattr(src, "tag", None) or getattr(src, "metric", None)
    return show(src.name, 300) + (f" (metric {show(metric)!r})" if metric else "")


def _rule(rule: Any, flags_action: Any) -> str:
    spec = make_detector(rule.detector_spec(), mode=rule.mode).spec
    who = "every tenant" if rule.tenant == "*" else f"tenant {rule.tenant}"
    parts = [f"{who}: {spec}, mode {rule.mode}"]
    if rule.tenant != "*":
        parts.append(f"metric {show(rule.metric)!r}")
    action = rule.action if rule.tenant != "*" else getattr(flags_action, "template", None)
    parts.append(f"action {show(action, 200)!r}" if action else "no action")
    if rule.dry_run:
        parts.append("dry run")
    return ", ".join(parts)


def startup_line(sources: list[Any], policy: Policy, *, action: Any = None,
                 page: str | None = None, dry_run: bool = False, db: str = "") -> str:
    """One line (no trailing newline): sources, rules, page, state file."""
    rules = "; ".join(_rule(r, action) for r in policy.rules)
    where = f"page {page}" if page else "no page (give --serve HOST:PORT for one)"
    said = (f"evalstop watch: following {', '.join(_followed(s) for s in sources)}; "
            f"rules: {rules}; {where}; state {show(db, 300)}")
    return said + ("; dry run: no action is run" if dry_run else "")
