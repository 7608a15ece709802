"""Argument checks shared by the workload generators: ValueError naming the bad value."""

from __future__ import annotations

import numbers

import numpy as np


def real(name: str, value, *, low: float | None = None, high: float | None = None,
         low_open: bool = False) -> float:
    """``value`` as a float, finite and within [low, high] (or (low, high] if low_open)."""
    # bool is an int subclass; True as a noise level is a mistake, not 1.0.
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    v = float(value)
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {value!r}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}")
    return v


def count(name: str, value, *, low: int = 1) -> int:
    """``value`` as an int >= low (numpy integers accepted, bools and floats not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)
