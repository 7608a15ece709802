"""The 4-ary heaps ordered by time alone (``numba_arrays._kpush`` and friends), which hold
the planned loop twin's ends and evals' index: whatever order pushes, pops, in-place
replacements and heapifies come in, the top is always the earliest time, and every entry
leaves with its own payload."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

from evalstop.sim.numba_arrays import _kheapify, _kpop, _kpush, _ksift_leaf  # noqa: E402


@njit(cache=False)
def _leave(F, A, B, n, out_t, out_a, p):
    """Records the top as leaving; -1 if it was not the earliest, -2 if its payload split."""
    for r in range(n):
        if F[r] < F[0]:
            return -1
    if B[0] != -A[0]:
        return -2
    out_t[p], out_a[p] = F[0], A[0]
    return p + 1


@njit(cache=False)
def _drive(ops, times, out_t, out_a):
    """Runs ``ops`` (0: push the next time, 1: pop, 2: replace the top by the next time,
    3: heapify what is there) on one heap, then pops the rest; records each entry that
    leaves (popped or replaced) as (time, payload)."""
    n_cap = ops.shape[0] + 1
    F, A, B = np.empty(n_cap), np.empty(n_cap, np.int64), np.empty(n_cap, np.int64)
    n = k = p = 0
    for op in ops:
        if op == 0 or (n == 0 and op != 3):
            n = _kpush(F, A, B, n, times[k], k, -k)
            k += 1
        elif op == 1 or op == 2:
            p = _leave(F, A, B, n, out_t, out_a, p)
            if p < 0:
                return p
            if op == 1:
                n = _kpop(F, A, B, n)
            else:
                F[0], A[0], B[0] = times[k], k, -k
                k += 1
                _ksift_leaf(F, A, B, n, 0)
        else:
            _kheapify(F, A, B, n)
    while n:
        p = _leave(F, A, B, n, out_t, out_a, p)
        if p < 0:
            return p
        n = _kpop(F, A, B, n)
    return p


@pytest.mark.parametrize("seed", range(6))
def test_the_top_is_the_earliest_and_payloads_stay_whole(seed):
    rng = np.random.default_rng(seed)
    ops = rng.choice(4, size=3000, p=[0.45, 0.3, 0.2, 0.05]).astype(np.int64)
    # Ties on purpose: few distinct times.
    times = rng.integers(0, 40 if seed % 2 else 10_000, size=4000).astype(np.float64)
    out_t, out_a = np.empty(4000), np.empty(4000, np.int64)
    p = _drive(ops, times, out_t, out_a)
    assert p >= 0, {-1: "top not the earliest", -2: "payload split"}.get(p)
    # Each entry pushed left once, with the time it was given.
    assert sorted(out_a[:p].tolist()) == list(range(p))
    assert np.array_equal(out_t[:p], times[out_a[:p]])
