"""A timing wheel of (time, int, int) entries for the numba twin's evals' index
(``planned_jit._at``): ``NB`` slots of ``width`` seconds, the entries of time f in slot
``int(f / width) % NB`` (a slot may hold several turns of the wheel), each slot a linked
list of pool rows whose first row is its earliest entry, and a bitmap of the slots that
hold any.

The index is asked in time order, and an entry it passes moves past the time asked, so a
query reads only the slots from the last query's bucket to its own, and only those whose
first entry is due, and puts an entry back with a push on a list (on 8x Philly, Tiresias
with the default rule passes 7.8M entries in 288k queries: in a 4-ary heap of about 600
entries, each pass was a sift, a quarter of the twin's time). Entries of one time leave in
any order, which the index's readers ignore.

One class's wheel is a row of each of: KF (times, then a lower bound of every live
entry's time, then ``width``), KA and KB (the two ints), KN (each row's next in its list,
-1: none), KH (the slots' first rows, -1: none, then the bitmap's words), CK (``C_*``).
``C_MIN`` names a row whose entry was at the lower bound when it was set (-1: none): if
that entry is still live, the bound is the earliest time, known without a walk.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evalstop.sim.numba_arrays import _step

NB = 4096  # slots (a power of two)
MASK, WORDS = NB - 1, NB // 64
# entries held, free rows' list, rows used, last bucket asked, the row at the lower bound
C_N, C_FREE, C_USED, C_CUR, C_MIN = range(5)
N_CK = 5


def _de_bruijn():
    """The table that turns (a lone bit times ``_DB``) >> 58 into the bit's index."""
    table = np.zeros(64, np.int64)
    for b in range(64):
        table[((1 << b) * _DB % (1 << 64)) >> 58] = b
    return table


_DB = 0x03F79D71B4CB0A89
_DB_TABLE = _de_bruijn()


@njit(cache=True)
def new(n_classes, rows, width):
    """Empty wheels for ``n_classes`` classes of ``rows`` pool rows each, slots ``width``
    seconds wide: KF, KI (KA, KB and KN), KH, CK."""
    KF = np.full((n_classes, rows + 2), width)
    KH = np.full((n_classes, NB + WORDS + 1), -1, np.int64)
    CK = np.zeros((n_classes, N_CK), np.int64)
    for c in range(n_classes):  # (element by element: slices cost seconds to compile)
        KF[c, rows] = np.inf
        CK[c, C_FREE] = CK[c, C_MIN] = -1
        for w in range(WORDS + 1):
            KH[c, NB + w] = 0
    return KF, np.zeros((3, n_classes, rows), np.int64), KH, CK


@njit(cache=True)
def width_for(arrival, dur):
    """Slots about a quarter of the mean time between arrivals wide (the index is asked
    at about every arrival, end and level crossing)."""
    n = arrival.shape[0]
    return max((arrival[n - 1] - arrival[0] + dur.mean()) / (4 * n), 1e-9)


@_step
def _low(KF):
    """The column of a wheel's KF row that holds the lower bound of its live entries."""
    return KF.shape[0] - 2


@_step
def _bucket(f, KF):
    """The bucket of time f (>= 0): its slot is this modulo NB."""
    x = f / KF[KF.shape[0] - 1]
    return int(x) if x < 4e18 else 4_000_000_000_000_000_000


@_step
def _link(KF, KN, KH, e, s):
    """Row e put in slot s's list: first if it is the earliest, else second (each list's
    first row is its earliest)."""
    h = KH[s]
    if h < 0 or KF[e] < KF[h]:
        KN[e] = h
        KH[s] = e
        KH[NB + (s >> 6)] |= 1 << (s & 63)
        KH[NB + WORDS] |= 1 << (s >> 6)
    else:
        KN[e] = KN[h]
        KN[h] = e


@_step
def _relink(KF, KN, KH, e, s):
    """The rows of a list that starts at row e (taken from its slot) put back in slot s."""
    while e >= 0:
        nx = KN[e]
        _link(KF, KN, KH, e, s)
        e = nx


@_step
def _emptied(KH, s):
    """Slot s left empty."""
    w = NB + (s >> 6)
    KH[w] &= ~(1 << (s & 63))
    if KH[w] == 0:
        KH[NB + WORDS] &= ~(1 << (s >> 6))


@_step
def _take(KH, s):
    """Slot s's list (its first row), the slot left empty."""
    e = KH[s]
    KH[s] = -1
    _emptied(KH, s)
    return e


@_step
def _put(CK, KF, KA, KB, KN, KH, f, a, b):
    """A new entry (f, a, b)."""
    e = CK[C_FREE]
    if e >= 0:
        CK[C_FREE] = KN[e]
    else:
        e = CK[C_USED]
        CK[C_USED] = e + 1
    KF[e], KA[e], KB[e] = f, a, b
    CK[C_N] += 1
    low = _low(KF)
    if f < KF[low]:
        KF[low], CK[C_MIN] = f, e
    _link(KF, KN, KH, e, _bucket(f, KF) & MASK)


@_step
def _free(CK, KN, e):
    KN[e] = CK[C_FREE]
    CK[C_FREE] = e
    CK[C_N] -= 1


@_step
def _ctz(x):
    """The index of x's lowest set bit (x != 0), by de Bruijn's multiply."""
    return _DB_TABLE[(((x & -x) * _DB) >> 58) & 63]


@_step
def _next_slot(KH, s):
    """The first slot from s on (cyclically) that holds entries; -1: none. The bitmap's
    last word tells which of its words hold any."""
    w = s >> 6
    x = KH[NB + w] & (-1 << (s & 63))
    if x == 0:
        top = KH[NB + WORDS]
        y = top & (-1 << (w + 1)) if w < WORDS - 1 else 0
        if y == 0:
            if top == 0:
                return -1
            y = top  # (around the wheel: word w itself, below s, may be the one)
        w = _ctz(y)
        x = KH[NB + w]
    return (w << 6) | _ctz(x)
