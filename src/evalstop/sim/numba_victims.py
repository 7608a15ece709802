"""The victims' heap of the planned loop's twin (``sim.planned_jit``): running jobs, worst
first, each entry Python's tuple (-key, time, call/batch, flag, order/_Rank, job) stored by
value and compared field by field, with ``_Rank``'s tie rule (``planned._chain``)."""

from __future__ import annotations

from evalstop import jit
from evalstop.sim import numba_arrays
from evalstop.sim.numba_arrays import F1, F2, I2, _helper, _step, f8, i8

jit.forget_stale(__file__, numba_arrays)

# A running job's entry in the victims' heap, ``worst``: Python's tuple
# (-key, time, call/batch, flag, order/_Rank, job). Floats (WF columns): the negated key,
# the time it was set, and (for a key set at an eval, flag 0) the segment that ``_Rank``
# walks back through. Ints (WI columns): batch, flag, ORD (the start's order for flag 1,
# the eval for flag 0), the job, a serial number (Python's ``live[i] is e`` becomes
# ``JI[i, LIVE] == serial``; 0: not running), and the segment's ints.
W_NKEY, W_TIME, W_S, W_OH, W_P0, W_D = range(6)
W_BATCH, W_FLAG, W_ORD, W_JOB, W_SERIAL, W_J0, W_CALL, W_ORDER = range(8)



@_helper(f8, f8, f8, f8, i8, i8, F1, i8)
def _round(s, oh, p0, d, j0, call, grid, j):
    """``planned._round``: the scheduling calls at its time before eval ``j`` of the
    segment was processed."""
    b = s + oh
    t = b + (grid[j] - p0) * d
    while j > j0 and b + (grid[j - 1] - p0) * d == t:
        j -= 1
    return call + 1 if j == j0 and s == t else 0


@_helper(F2, I2, i8, i8, F1)
def _rank_less(WF, WI, x, y, grid):
    """``_Rank.__lt__`` for the entries in rows x and y: their ``_chain``s from the eval
    before each entry's, compared element by element until one ends (then: not less)."""
    sx, ohx, p0x, dx = WF[x, W_S], WF[x, W_OH], WF[x, W_P0], WF[x, W_D]
    sy, ohy, p0y, dy = WF[y, W_S], WF[y, W_OH], WF[y, W_P0], WF[y, W_D]
    j0x, cx, ox = WI[x, W_J0], WI[x, W_CALL], WI[x, W_ORDER]
    j0y, cy, oy = WI[y, W_J0], WI[y, W_CALL], WI[y, W_ORDER]
    jx, jy = WI[x, W_ORD] - 1, WI[y, W_ORD] - 1
    bx, by = sx + ohx, sy + ohy
    while True:
        # An element is (eval time, round, 0) while j >= j0, then (start, call, 1, order).
        if jx >= j0x:
            tx, rx, fx = bx + (grid[jx] - p0x) * dx, _round(sx, ohx, p0x, dx, j0x, cx, grid,
                                                               jx), 0
        else:
            tx, rx, fx = sx, cx, 1
        if jy >= j0y:
            ty, ry, fy = by + (grid[jy] - p0y) * dy, _round(sy, ohy, p0y, dy, j0y, cy, grid,
                                                               jy), 0
        else:
            ty, ry, fy = sy, cy, 1
        if tx != ty:
            return tx < ty
        if rx != ry:
            return rx < ry
        if fx != fy:
            return fx < fy
        if fx == 1:  # two starts: the order decides; equal, both chains ended
            return ox < oy
        jx -= 1
        jy -= 1


@_step
def _wless(WF, WI, x, y, grid):
    """Python's comparison of the two ``worst`` tuples in rows x and y. Inlined into the
    sifts: as a call it was 4.5% of Tiresias' twin, and the sifts ran 5% faster without it
    (the keys differ in nearly every comparison, so the call was most of its cost)."""
    if WF[x, W_NKEY] != WF[y, W_NKEY]:
        return WF[x, W_NKEY] < WF[y, W_NKEY]
    if WF[x, W_TIME] != WF[y, W_TIME]:
        return WF[x, W_TIME] < WF[y, W_TIME]
    if WI[x, W_BATCH] != WI[y, W_BATCH]:
        return WI[x, W_BATCH] < WI[y, W_BATCH]
    if WI[x, W_FLAG] != WI[y, W_FLAG]:
        return WI[x, W_FLAG] < WI[y, W_FLAG]
    if WI[x, W_FLAG] == 0:
        # Two _Rank objects are never the same object, so Python asks ``<`` and stops.
        return _rank_less(WF, WI, x, y, grid)
    if WI[x, W_ORD] != WI[y, W_ORD]:
        return WI[x, W_ORD] < WI[y, W_ORD]
    return WI[x, W_JOB] < WI[y, W_JOB]


@_helper(F2, I2, i8, F2, I2, i8)
def _copy(SF, SI, x, DF, DI, y):
    # Spelled out: a loop over the columns (sizes unknown to the compiler) took a third
    # of the run.
    DF[y, 0], DF[y, 1], DF[y, 2], DF[y, 3], DF[y, 4], DF[y, 5] = (
        SF[x, 0], SF[x, 1], SF[x, 2], SF[x, 3], SF[x, 4], SF[x, 5])
    DI[y, 0], DI[y, 1], DI[y, 2], DI[y, 3], DI[y, 4], DI[y, 5], DI[y, 6], DI[y, 7] = (
        SI[x, 0], SI[x, 1], SI[x, 2], SI[x, 3], SI[x, 4], SI[x, 5], SI[x, 6], SI[x, 7])


@_helper(F2, I2, i8, i8, F1)
def _wsiftdown(WF, WI, startpos, pos, grid):
    # heapq's newitem is kept in the spare last row.
    x = WF.shape[0] - 1
    _copy(WF, WI, pos, WF, WI, x)
    while pos > startpos:
        parent = (pos - 1) >> 1
        if _wless(WF, WI, x, parent, grid):
            _copy(WF, WI, parent, WF, WI, pos)
            pos = parent
            continue
        break
    _copy(WF, WI, x, WF, WI, pos)


@_helper(F2, I2, i8, i8, F1)
def _wsiftup(WF, WI, n, pos, grid):
    x = WF.shape[0] - 1
    startpos = pos
    _copy(WF, WI, pos, WF, WI, x)
    child = 2 * pos + 1
    while child < n:
        right = child + 1
        if right < n and not _wless(WF, WI, child, right, grid):
            child = right
        _copy(WF, WI, child, WF, WI, pos)
        pos = child
        child = 2 * pos + 1
    _copy(WF, WI, x, WF, WI, pos)
    _wsiftdown(WF, WI, startpos, pos, grid)


@_helper(F2, I2, i8, F1)
def _wpop(WF, WI, n, grid):
    """heappop, the top dropped (callers read it first); returns the new size."""
    n -= 1
    if n > 0:
        _copy(WF, WI, n, WF, WI, 0)
        _wsiftup(WF, WI, n, 0, grid)
    return n


@_helper(F2, I2, i8, F2, I2, i8, F1)
def _wpush_from(SF, SI, x, WF, WI, n, grid):
    """heappush of the entry in row x of (SF, SI); returns the new size."""
    _copy(SF, SI, x, WF, WI, n)
    _wsiftdown(WF, WI, 0, n, grid)
    return n + 1


@_helper(F2, I2, i8, F1)
def _wheapify(WF, WI, n, grid):
    for i in range(n // 2 - 1, -1, -1):
        _wsiftup(WF, WI, n, i, grid)
