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


def evaluate(claim: Claim, rows: list[dict]) -> tuple[str, str]:
    """(our values as text, verdict): "holds", "does not hold" or "n/a" (nothing measured)."""
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
    ok = all((claim.low is None or v >= claim.low) and (claim.high is None or v <= claim.high)
             for v in vals)
    return text, "holds" if ok else "does not hold"
