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


def evaluate(claim: Claim, rows: list[dict]) -> tuple[str, str]:
    """(our values as text, verdict). The verdict is "holds", "n/a" (nothing measured), or
    "does not hold" with how many values fall below or above the claimed band."""
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
    parts = [f"{k} of {len(vals)} values {side}" for k, side in ((below, "below"), (above, "above"))
             if k]
    return text, f"does not hold: {' and '.join(parts)} the claimed range ({_band(claim, show)})"
