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


def with_ci(row: dict | None, kind: str = "pct", digits: int = 1, scale: float = 1.0) -> str:
    """``mean [lo, hi]`` of a summary row; ``kind`` "pct" (fractions), "num" or "delta"."""
    if row is None:
        return "n/a"
    if kind == "delta":
        m, lo, hi = row["delta_pct"], row["delta_lo"], row["delta_hi"]
        head = signed_pct(m, digits)
        if _ok(lo) and _ok(hi):
            return f"{head} [{lo:+.{digits}f}, {hi:+.{digits}f}]"
        return head
    m, lo, hi = row["mean"], row["lo"], row["hi"]
    if kind == "pct":
        head = pct(m, digits)
        scale, digits_ci = 100.0, digits
    else:
        head = num(float(m) * scale if _ok(m) else m, digits)
        digits_ci = digits
    if _ok(lo) and _ok(hi):
        return f"{head} [{lo * scale:.{digits_ci}f}, {hi * scale:.{digits_ci}f}]"
    return head
