"""Misconfigurations that would make an integration silently never stop.

A loss watched with ``mode="max"`` and a metric name that no evaluation reports both
leave a detector that is fed nothing useful and never fires, with no error. The
integrations call these checks with ``strict=True`` (their default) and raise; users with
a legitimate reason (a maximised quantity named "loss...", a metric reported on some
evaluations only) pass ``strict=False``.
"""

from __future__ import annotations

from collections.abc import Iterable

# Names that are lower-is-better in every training stack we integrate with.
_LOWER_IS_BETTER = ("loss", "perplexity")


def looks_lower_is_better(metric: str) -> bool:
    name = metric.lower()
    return any(word in name for word in _LOWER_IS_BETTER)


def check_direction(who: str, metric: str | None, mode: str | None, strict: bool) -> None:
    """ValueError when a loss-like metric is maximised (the detector would wait for the
    loss to fall k times, i.e. for training to go well, before stopping)."""
    if strict and metric and mode == "max" and looks_lower_is_better(metric):
        raise ValueError(
            f"{who}: metric {metric!r} looks like a loss (lower is better) but mode='max'; "
            f"pass mode='min', or strict=False if higher really is better"
        )


def missing_metric_error(who: str, metric: str, available: Iterable[str], hint: str) -> ValueError:
    names = ", ".join(repr(k) for k in sorted(set(available)))
    return ValueError(
        f"{who}: metric {metric!r} is not in the first evaluation's metrics ({names}); "
        f"fix the name, or pass strict=False {hint}"
    )
