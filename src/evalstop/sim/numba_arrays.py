"""Compiled arrays for the simulator's numba twin (``sim.planned_jit``): how its helpers
are compiled (without reference counts), a heap of (float, int, int) and a sorted list of
the same, each ordered as Python orders those tuples, with ``heapq``'s and ``bisect``'s
algorithms step for step (so equal entries sit where Python's would); a 4-ary heap of the
same ordered by its float alone, for entries whose order at one time nobody reads; and
arrays grown between calls.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

F1, I1, F2, I2 = types.float64[::1], types.int64[::1], types.float64[:, ::1], types.int64[:, ::1]
f8, i8 = types.float64, types.int64


def _helper(*argtypes):
    """A compiled helper, called from compiled code only (no Python or C entry points),
    with its argument types given: left to infer them, numba also compiled a copy for
    each constant argument (``pos=0``...), which nearly doubled the first compilation.
    It makes no arrays, so it runs without numba's reference counting: its caller keeps
    the arrays alive, yet every use counted them, a call each, which was a quarter of
    SRTF-Est's loop."""
    return njit(argtypes, cache=True, no_cpython_wrapper=True, no_cfunc_wrapper=True,
                _nrt=False)


def _step(fn):
    """A step of the loop (``run_kernel``'s or a helper's), inlined where it is called
    (numba IR inlining, ``inline="always"``): split out for reading, compiled as one
    function, so the loop pays no call, and no passing of its arrays, per instant."""
    return njit(inline="always", cache=True, no_cpython_wrapper=True,
                no_cfunc_wrapper=True)(fn)


# ---- heaps of (float, int, int), compared as Python compares those tuples -------------
# The level crossings, (time, job, 0), and the one-GPU wait queue, (key, seq, job).


@_step
def _tless(f1, a1, b1, f2, a2, b2):
    if f1 != f2:
        return f1 < f2
    if a1 != a2:
        return a1 < a2
    return b1 < b2


@_step
def _tsiftdown(F, A, B, startpos, pos):
    f, a, b = F[pos], A[pos], B[pos]
    while pos > startpos:
        parent = (pos - 1) >> 1
        if _tless(f, a, b, F[parent], A[parent], B[parent]):
            F[pos], A[pos], B[pos] = F[parent], A[parent], B[parent]
            pos = parent
            continue
        break
    F[pos], A[pos], B[pos] = f, a, b


@_step
def _tsiftup(F, A, B, n, pos):
    startpos = pos
    f, a, b = F[pos], A[pos], B[pos]
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _tless(F[child], A[child], B[child], F[right], A[right],
                                    B[right]):
            child = right
        F[pos], A[pos], B[pos] = F[child], A[child], B[child]
        pos = child
        child = 2 * pos + 1
    F[pos], A[pos], B[pos] = f, a, b
    _tsiftdown(F, A, B, startpos, pos)


@_helper(F1, I1, I1, i8, f8, i8, i8)
def _tpush(F, A, B, n, f, a, b):
    F[n], A[n], B[n] = f, a, b
    _tsiftdown(F, A, B, 0, n)
    return n + 1


@_helper(F1, I1, I1, i8)
def _tpop(F, A, B, n):
    """heappop: returns the top (f, a, b) and the new size."""
    n -= 1
    f, a, b = F[n], A[n], B[n]
    if n == 0:
        return f, a, b, n
    rf, ra, rb = F[0], A[0], B[0]
    F[0], A[0], B[0] = f, a, b
    _tsiftup(F, A, B, n, 0)
    return rf, ra, rb, n


@_helper(F1, I1, I1, i8)
def _theapify(F, A, B, n):
    for i in range(n // 2 - 1, -1, -1):
        _tsiftup(F, A, B, n, i)


# ---- 4-ary heaps of (time, int, int) ordered by time alone: the ends ------------------
# Entries of one time may leave these in any order (see ``planned_jit._end_events``), so
# the heap compares times only, has four children per node, and moves a replaced top
# toward the leaves only as far as it must: on a heap of 203 entries a replaced top took
# 22 ns, against 52 ns for the binary heap of tuples above.


@_step
def _ksift_root(F, A, B, pos):
    """Entry ``pos`` moved toward the root past every later parent."""
    f, a, b = F[pos], A[pos], B[pos]
    while pos > 0:
        parent = (pos - 1) >> 2
        if not f < F[parent]:
            break
        F[pos], A[pos], B[pos] = F[parent], A[parent], B[parent]
        pos = parent
    F[pos], A[pos], B[pos] = f, a, b


@_step
def _ksift_leaf(F, A, B, n, pos):
    """Entry ``pos`` moved toward the leaves while a child comes earlier."""
    f, a, b = F[pos], A[pos], B[pos]
    while True:
        c = 4 * pos + 1
        if c >= n:
            break
        m, fm = c, F[c]
        for x in range(c + 1, min(c + 4, n)):
            if F[x] < fm:
                m, fm = x, F[x]
        if not fm < f:
            break
        F[pos], A[pos], B[pos] = fm, A[m], B[m]
        pos = m
    F[pos], A[pos], B[pos] = f, a, b


@_helper(F1, I1, I1, i8, f8, i8, i8)
def _kpush(F, A, B, n, f, a, b):
    F[n], A[n], B[n] = f, a, b
    _ksift_root(F, A, B, n)
    return n + 1


@_helper(F1, I1, I1, i8)
def _kpop(F, A, B, n):
    """The top removed; returns the new size."""
    n -= 1
    if n:
        F[0], A[0], B[0] = F[n], A[n], B[n]
        _ksift_leaf(F, A, B, n, 0)
    return n


@_helper(F1, I1, I1, i8)
def _kheapify(F, A, B, n):
    for i in range((n - 2) // 4, -1, -1):
        _ksift_leaf(F, A, B, n, i)


# ---- the multi-GPU wait queue: a sorted list of (key, seq, job) -----------------------
# Stored last first from row ``base``: entry b of the list (b = 0: the smallest) is row
# base + nb - 1 - b, so the head leaves without moving the rest. An insert or a delete
# moves the entries on its shorter side: those before it (toward the top), or those after
# it (toward the bottom, ``base`` moving). Tiresias puts a demoted job behind nearly every
# waiting one and an arrival near the head; on 8x Philly with the default rule its queue
# held 1,951 entries on average, an insert 197 entries before it and 8 on its shorter
# side. The arrays hold 2 (n + 1) rows and ``base`` starts at n + 1, so the side each
# move takes always has room: at most n jobs wait.


@_step
def _row(base, nb, b):
    return base + nb - 1 - b


@_helper(F1, I1, I1, i8, i8, f8, i8, i8)
def _insort(BK, BS, BJ, base, nb, k, s, j):
    """``bisect.insort`` (after its equals); returns the new (base, nb)."""
    lo, hi = 0, nb
    while lo < hi:
        mid = (lo + hi) // 2
        r = base + nb - 1 - mid
        if _tless(k, s, j, BK[r], BS[r], BJ[r]):
            hi = mid
        else:
            lo = mid + 1
    top = base + nb
    if base == 0 or (lo <= nb - lo and top < BK.shape[0]):
        for x in range(top, top - lo, -1):  # the lo entries before it move up one row
            BK[x], BS[x], BJ[x] = BK[x - 1], BS[x - 1], BJ[x - 1]
        r = top - lo
    else:
        r = top - 1 - lo
        for x in range(base - 1, r):  # the nb - lo entries after it move down one row
            BK[x], BS[x], BJ[x] = BK[x + 1], BS[x + 1], BJ[x + 1]
        base -= 1
    BK[r], BS[r], BJ[r] = k, s, j
    return base, nb + 1


@_helper(F1, I1, I1, i8, i8, f8, i8, i8, i8)
def _bisect_left(BK, BS, BJ, base, nb, k, s, j, lo):
    hi = nb
    while lo < hi:
        mid = (lo + hi) // 2
        r = base + nb - 1 - mid
        if _tless(BK[r], BS[r], BJ[r], k, s, j):
            lo = mid + 1
        else:
            hi = mid
    return lo


@_helper(F1, I1, I1, i8, i8, i8)
def _delete(BK, BS, BJ, base, nb, at):
    """``del list[at]``; returns the new (base, nb)."""
    r = base + nb - 1 - at
    if at <= nb - 1 - at:
        for x in range(r, base + nb - 1):  # the entries before it move down one row
            BK[x], BS[x], BJ[x] = BK[x + 1], BS[x + 1], BJ[x + 1]
        return base, nb - 1
    for x in range(r, base, -1):  # the entries after it move up one row
        BK[x], BS[x], BJ[x] = BK[x - 1], BS[x - 1], BJ[x - 1]
    return base + 1, nb - 1

@njit([(F1, i8), (I1, i8), (F2, i8), (I2, i8)], cache=True, no_cpython_wrapper=True,
      no_cfunc_wrapper=True)
def _grow(A, rows):
    """A copy of A with at least ``rows`` rows (double its own, to grow rarely)."""
    out = np.empty((max(rows, 2 * A.shape[0]),) + A.shape[1:], A.dtype)
    # Element by element: numba's slice assignment costs seconds to compile.
    flat_out, flat = out.reshape(-1), A.reshape(-1)
    for k in range(flat.shape[0]):
        flat_out[k] = flat[k]
    return out

@_step
def _mark(tl_t, tl_used, tl_n, t, used):
    """The GPU timeline (its first ``tl_n`` points, room for one more) with ``used`` GPUs
    from t on; returns its length."""
    if tl_t[tl_n - 1] == t:
        tl_used[tl_n - 1] = used
        return tl_n
    tl_t[tl_n], tl_used[tl_n] = t, used
    return tl_n + 1
