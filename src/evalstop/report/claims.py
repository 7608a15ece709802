"""Check the paper's multi-row claims (``experiments.paper.CLAIMS``) against our summary."""

from __future__ import annotations

import math

from evalstop.experiments.paper import Claim
from evalstop.report.fmt import pct, signed_pct


def _selected(claim: Claim, rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        if r["metric"] != claim.metric or not str(r["method"]).startswith(claim.method_prefix):
            continue
        if claim.field == "delta_pct" and r["baseline"] is None:
            continue
        x = r["x"]
        if claim.x_min is not None and not (x is not None and x >= claim.x_min - 1e-12):
            continue
        if claim.x_max is not None and not (x is not None and x <= claim.x_max + 1e-12):
            continue
        out.append(r)
    return out


def _band(claim: Claim, show) -> str:
    if claim.low is not None and claim.high is not None:
        return f"{show(claim.low)} to {show(claim.high)}"
    return f">= {show(claim.low)}" if claim.low is not None else f"<= {show(claim.high)}"


# Which way is better for the tenant and the platform: more precision and recall, fewer
# false stops, and a larger fall (more negative change) of JCT and wasted GPU-hours.
_LOWER_IS_BETTER = ("fpr", "fpr_rlhf", "harmful_rate")
# How close to a single published figure counts as reproducing it: 2 points of a rate or
# of a percent change (the paper prints no intervals).
TOLERANCE = {"mean": 0.02, "delta_pct": 2.0}


def higher_is_better(metric: str, field: str) -> bool:
    return not (field == "delta_pct" or metric in _LOWER_IS_BETTER)


def compare(metric: str, field: str, ours: float, paper: float) -> str:
    """Our value against one published figure: "as claimed" within ``TOLERANCE``, else
    "better than claimed" or "worse than claimed"."""
    if not math.isfinite(ours):
        return "n/a"
    diff = ours - paper
    if abs(diff) <= TOLERANCE[field] + 1e-12:
        return "as claimed"
    return "better than claimed" if (diff > 0) == higher_is_better(metric, field) \
        else "worse than claimed"


def evaluate(claim: Claim, rows: list[dict]) -> tuple[str, str]:
    """(our values as text, verdict). The verdict is "holds" (every value in the claimed
    band), "n/a" (nothing measured), or which side of the band the values fall on, read
    as "better than claimed" or "worse than claimed" (a larger JCT saving than the band
    is better, a precision below its floor worse), with how many of them."""
    sel = [r for r in _selected(claim, rows) if math.isfinite(r[claim.field])]
    if not sel:
        return "n/a", "n/a"
    show = pct if claim.field == "mean" else signed_pct
    vals = [r[claim.field] for r in sel]
    lo_r, hi_r = sel[vals.index(min(vals))], sel[vals.index(max(vals))]

    def where(r):
        return r["method"] if r["x"] is None else f"{r['point']}"

    text = (show(lo_r[claim.field]) if len(sel) == 1 else
            f"{show(lo_r[claim.field])} ({where(lo_r)}) to {show(hi_r[claim.field])} ({where(hi_r)})")
    below = sum(1 for v in vals if claim.low is not None and v < claim.low)
    above = sum(1 for v in vals if claim.high is not None and v > claim.high)
    if below == 0 and above == 0:
        return text, "holds"
    up = higher_is_better(claim.metric, claim.field)
    better, worse = (above, below) if up else (below, above)
    band = _band(claim, show)
    sides = [(better, "better than claimed", "above" if up else "below"),
             (worse, "worse than claimed", "below" if up else "above")]
    parts = [f"{k} of {len(vals)} values {side} the claimed range ({band})"
             for k, _, side in sides if k]
    if better and worse:
        head = "mixed"
    else:
        head = "better than claimed" if better else "worse than claimed"
    if len(vals) - better - worse:
        parts.append(f"{len(vals) - better - worse} within it")
    return text, f"{head}: {'; '.join(parts)}"
