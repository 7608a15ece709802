"""Each base's key is written once, in ``schedulers/``: the scheduler, the planned loop and
its compiled twin all call the same function, and compiled it gives the same floats."""

from __future__ import annotations

import math
from bisect import bisect_right

import numpy as np
import pytest

from evalstop.schedulers import loss_aware, srtf, tiresias
from evalstop.sim import loss_drops, planned

EDGES = [0.0, -0.0, 1.0, 2.5, -3.0, 3600.0, 36000.0, 1e-310, 1e308, -1e308, np.inf, -np.inf,
         np.nan]


def test_queue_level_is_bisect_right():
    rng = np.random.default_rng(0)
    for _ in range(300):
        th = tuple(np.cumsum(rng.uniform(0.1, 5.0, rng.integers(0, 4))).round(1))
        for x in [*EDGES, *th, *rng.uniform(-1.0, 20.0, 5).round(1)]:
            assert tiresias.queue_level(th, x) == bisect_right(th, x)


def test_the_loops_call_the_schedulers_keys():
    assert planned.remaining_s is srtf.remaining_s
    assert planned.queue_level is tiresias.queue_level
    assert planned.queue_key is tiresias.queue_key
    assert loss_drops.drop_key is loss_aware.drop_key
    pytest.importorskip("numba")
    from evalstop.sim import planned_jit

    for compiled, fn in ((planned_jit._remaining_s, srtf.remaining_s),
                         (planned_jit._queue_level, tiresias.queue_level),
                         (planned_jit._queue_key, tiresias.queue_key),
                         (planned_jit._drop_key, loss_aware.drop_key)):
        assert compiled.py_func is fn


def _same(got, want):
    assert got == want or (math.isnan(got) and math.isnan(want))
    assert math.copysign(1.0, got) == math.copysign(1.0, want)


def test_compiled_keys_are_the_same_floats():
    numba = pytest.importorskip("numba")
    from evalstop.sim import planned_jit

    remaining = numba.njit(lambda a, b: planned_jit._remaining_s(a, b))
    level = numba.njit(lambda th, x: planned_jit._queue_level(th, x))
    key = numba.njit(lambda lv, a: planned_jit._queue_key(lv, a))
    drop = numba.njit(lambda a, b, c: planned_jit._drop_key(a, b, c))
    th = np.array([3600.0, 36000.0])
    for a in EDGES:
        assert level(th, a) == tiresias.queue_level(tuple(th), a)
        for lv in (0, 1, 2):
            _same(key(lv, a), tiresias.queue_key(lv, a))
        for b in EDGES:
            _same(remaining(a, b), srtf.remaining_s(a, b))
            for c in EDGES:
                _same(drop(a, b, c), loss_aware.drop_key(a, b, c))
