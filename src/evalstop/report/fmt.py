"""How numbers are written in the report. NaN (an undefined ratio) is always "n/a"."""

from __future__ import annotations

import math


def _ok(v) -> bool:
    return v is not None and math.isfinite(float(v))


def pct(v, digits: int = 1) -> str:
    """A fraction as a percentage: 0.983 -> "98.3%"."""
    return f"{100 * float(v):.{digits}f}%" if _ok(v) else "n/a"


def signed_pct(v, digits: int = 1) -> str:
    """A percent change: -9.4 -> "-9.4%"."""
    return f"{float(v):+.{digits}f}%" if _ok(v) else "n/a"


def num(v, digits: int = 2) -> str:
    return f"{float(v):.{digits}f}" if _ok(v) else "n/a"


def pvalue(p) -> str:
    if not _ok(p):
        return "n/a"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def with_ci(row: dict | None, kind: str = "pct", digits: int = 1, scale: float = 1.0,
            n_total: int | None = None) -> str:
    """``mean [lo, hi]`` of a summary row; ``kind`` "pct" (fractions), "num" or "delta".

    A fraction's t interval can reach past 0 or 1 when the seeds agree closely near a bound;
    it is clipped to [0, 100%] for display. With ``n_total``, a mean over fewer seeds (the
    others undefined, e.g. no stops there) says over how many.
    """
    if row is None:
        return "n/a"
    text = _with_ci(row, kind, digits, scale)
    n = row.get("n")
    if n_total is not None and n is not None and 0 < n < n_total:
        text += f" ({n} of {n_total} seeds)"
    return text


def _with_ci(row: dict, kind: str, digits: int, scale: float) -> str:
    if kind == "delta":
        m, lo, hi = row["delta_pct"], row["delta_lo"], row["delta_hi"]
        head = signed_pct(m, digits)
        if _ok(lo) and _ok(hi):
            return f"{head} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
        return head
    if kind not in ("pct", "num"):
        raise ValueError(f"unknown kind {kind!r}; expected 'pct', 'num' or 'delta'")
    m, lo, hi = row["mean"], row["lo"], row["hi"]
    if kind == "pct":
        head, scale = pct(m, digits), 100.0
        if _ok(lo) and _ok(hi):
            lo, hi = max(0.0, lo), min(1.0, hi)
    else:
        head = num(m * scale, digits) if _ok(m) else "n/a"
    if _ok(lo) and _ok(hi):
        return f"{head} [{lo * scale:.{digits}f}, {hi * scale:.{digits}f}]"
    return head
