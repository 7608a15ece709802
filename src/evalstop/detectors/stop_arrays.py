"""Shared parts of the rules' array ``stop_index`` methods (the simulator's planned stops,
``evalstop.sim.stops``): the contract is ``KDecline.stop_index``'s, ``(stop_at, kept,
done)`` per row, or None where only the detector objects can answer."""

from __future__ import annotations

import sys

import numpy as np

# Python 3.12's ``sum`` of floats is compensated, not left to right: the array versions
# that repeat a rule's ``sum`` decline there (the objects decide, correct and slower).
SUM_IN_ORDER = sys.version_info < (3, 12)


def same_parts(det, cls, parts) -> bool:
    """Whether ``det``'s class keeps ``cls``'s methods named in ``parts`` and knows no
    option ``cls`` lacks that is set (a subclass may change the rule or add to it)."""
    sub = type(det)
    if any(getattr(sub, f) is not getattr(cls, f) for f in parts):
        return False
    return all(k in cls.PARAMS or getattr(det, k, None) is None for k in sub.PARAMS)


def higher_better(det, obs) -> tuple[np.ndarray, np.ndarray]:
    """``(raw, v)``: the scores as float64 and as the rule sees them (higher is better)."""
    raw = np.asarray(obs, dtype=np.float64)
    return raw, (-raw if det._sign < 0 else raw)


def finite_rows(raw: np.ndarray) -> np.ndarray:
    """Rows whose values are all finite (others go to the objects, which skip them)."""
    return np.isfinite(raw).all(axis=1)


def first_hit(hit: np.ndarray, offset: int = 0) -> np.ndarray:
    """Per row of ``hit`` (row, column), ``offset`` plus the first True column, or -1."""
    stop_at = np.full(hit.shape[0], -1, dtype=np.int64)
    if hit.shape[1] == 0:
        return stop_at
    first = hit.argmax(axis=1)
    rows = np.flatnonzero(hit[np.arange(hit.shape[0]), first])
    stop_at[rows] = first[rows] + offset
    return stop_at


def best_upto(v: np.ndarray, stop_at: np.ndarray) -> np.ndarray:
    """The eval index of each row's best value up to its stop, the earliest on ties (the
    objects' ``value > best``; argmax takes the first); -1 for rows without a stop."""
    kept = np.full(v.shape[0], -1, dtype=np.int64)
    rows = np.flatnonzero(stop_at >= 0)
    if rows.size:
        upto = v[rows]
        np.copyto(upto, -np.inf, where=np.arange(v.shape[1]) > stop_at[rows, None])
        kept[rows] = upto.argmax(axis=1)
    return kept


def sum_in_order(cols) -> np.ndarray:
    """Python's ``sum`` over a sequence of arrays, elementwise: it starts from the int 0,
    so the first float is added to 0.0 (a -0.0 becomes 0.0), then left to right."""
    acc = cols[0] + 0.0
    for c in cols[1:]:
        acc += c
    return acc
