"""The multi-GPU wait queue of the planned loop's twin (``numba_arrays._insort``,
``_delete``, ``_bisect_left``): a sorted list of (key, seq, job) stored last first from a
moving base row, each insert or delete moving its shorter side. Whatever the order of
operations, and wherever the list starts in its rows (at the bottom, the top or the
middle), it holds what a Python list with ``bisect.insort`` and ``del`` holds."""

from __future__ import annotations

import bisect

import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

from evalstop.sim.numba_arrays import _bisect_left, _delete, _insort, _row  # noqa: E402


@njit(cache=False)
def _drive(ops, base0, cap, out):
    """Runs ``ops`` rows (0: insert (key, seq, job); 1: delete at position a % nb; 2:
    bisect_left of (key, seq, job) from a % (nb + 1)) on one list whose first row is
    ``base0`` in arrays of ``cap`` rows; ``out`` gets, per op, the deleted job or the
    bisect's answer (-1 for an insert); returns the list's rows, head first, and the least
    and most rows it used."""
    BK, BS, BJ = np.empty(cap), np.empty(cap, np.int64), np.empty(cap, np.int64)
    base, nb, low, high = base0, 0, cap, -1
    for p in range(ops.shape[0]):
        op, a, key, seq, job = ops[p, 0], ops[p, 1], ops[p, 2], ops[p, 3], ops[p, 4]
        out[p] = -1
        if op == 0 or nb == 0:
            base, nb = _insort(BK, BS, BJ, base, nb, float(key), seq, job)
        elif op == 1:
            at = a % nb
            out[p] = BJ[_row(base, nb, at)]
            base, nb = _delete(BK, BS, BJ, base, nb, at)
        else:
            out[p] = _bisect_left(BK, BS, BJ, base, nb, float(key), seq, job, a % (nb + 1))
        low, high = min(low, base), max(high, base + nb - 1)
    rows = np.empty((nb, 3))
    for b in range(nb):
        r = _row(base, nb, b)
        rows[b, 0], rows[b, 1], rows[b, 2] = BK[r], BS[r], BJ[r]
    return rows, low, high


def _reference(ops):
    lst, out = [], []
    for op, a, key, seq, job in ops.tolist():
        if op == 0 or not lst:
            bisect.insort(lst, (float(key), seq, job))
            out.append(-1)
        elif op == 1:
            out.append(lst.pop(a % len(lst))[2])
        else:
            out.append(bisect.bisect_left(lst, (float(key), seq, job), a % (len(lst) + 1)))
    return lst, out


def _ops(rng, n, p_insert):
    kind = np.where(rng.random(n) < p_insert, 0, rng.integers(1, 3, n))
    return np.column_stack([kind, rng.integers(0, 1000, n), rng.integers(0, 3, n),
                            rng.integers(0, 4, n), np.arange(n)]).astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("where", ["bottom", "middle", "top"])
def test_it_holds_what_a_sorted_python_list_holds(seed, where):
    rng = np.random.default_rng(seed)
    n = 400
    ops = _ops(rng, n, p_insert=(0.5, 0.7, 0.9)[seed % 3])
    cap = 2 * (n + 1)  # as the twin allocates: every side a move takes has room
    base0 = {"bottom": 0, "middle": n + 1, "top": cap}[where]
    out = np.empty(n, np.int64)
    rows, low, high = _drive(ops, base0, cap, out)
    lst, ref_out = _reference(ops)
    assert out.tolist() == ref_out
    assert [tuple(r) for r in rows.tolist()] == [(k, float(s), float(j)) for k, s, j in lst]
    assert 0 <= low and high < cap


def test_inserts_behind_and_ahead_move_the_short_side():
    # Entries pushed alternately far behind and at the head: with the base free to move,
    # neither kind of insert moves the whole list, so the rows used spread both ways.
    n = 200
    ops = np.array([[0, 0, 2 if p % 2 else 0, p, p] for p in range(n)], np.int64)
    out = np.empty(n, np.int64)
    rows, low, high = _drive(ops, n + 1, 2 * (n + 1), out)
    assert rows[:, 0].tolist() == sorted(rows[:, 0].tolist())
    assert low < n + 1 < high
