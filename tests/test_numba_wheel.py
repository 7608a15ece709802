"""The timing wheel of the planned loop's twin (``numba_wheel``): its bitmap finds the
first slot holding entries from any slot, cyclically, as a scan of the slots does; each
slot's list holds exactly the entries whose bucket falls in it, its earliest first,
whatever the order of puts and takes; rows freed are used again; the lower bound and its
row follow the puts. And the twin, whose evals' index it is, decides as the Python loop
does where evals fall turns of the wheel ahead (slots skipped as a later turn, the search
past the whole wheel, stale first entries dropped: each was seen to happen on this
workload)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from numba import njit  # noqa: E402

from evalstop.sim import numba_wheel as W  # noqa: E402
from evalstop.sim.numba_wheel import C_FREE, C_MIN, C_N, C_USED, NB  # noqa: E402


@njit(cache=False)
def _ctz_all(xs):
    out = np.empty(xs.shape[0], np.int64)
    for k in range(xs.shape[0]):
        out[k] = W._ctz(xs[k])
    return out


@njit(cache=False)
def _next_all(slots, taken, starts):
    """Slots ``slots`` linked (one row each), then those in ``taken`` emptied; the first
    slot holding entries from each of ``starts``."""
    KN, KH = np.empty(slots.shape[0], np.int64), np.full(NB + W.WORDS + 1, -1, np.int64)
    KF = np.arange(slots.shape[0], dtype=np.float64)
    KH[NB:] = 0
    for e in range(slots.shape[0]):
        W._link(KF, KN, KH, e, slots[e])
    for s in taken:
        W._take(KH, s)
    out = np.empty(starts.shape[0], np.int64)
    for k in range(starts.shape[0]):
        out[k] = W._next_slot(KH, starts[k])
    return out


@njit(cache=False)
def _fill(times, drop_every, width):
    """Puts (times[k], k, -k) in one wheel; every ``drop_every``-th put, the slot of the
    time before it is taken and its rows freed. Returns the wheel's arrays."""
    KF, KI, KH, CK = W.new(1, times.shape[0], width)
    for k in range(times.shape[0]):
        W._put(CK[0], KF[0], KI[0, 0], KI[1, 0], KI[2, 0], KH[0], times[k], k, -k)
        if drop_every and k % drop_every == drop_every - 1:
            e = W._take(KH[0], W._bucket(times[k - 1], KF[0]) & W.MASK)
            while e >= 0:
                nx = KI[2, 0, e]
                W._free(CK[0], KI[2, 0], e)
                e = nx
    return KF, KI, KH, CK


def _lists(KF, KI, KH):
    """Each slot's (time, a, b) entries, as a dict of sets; checks that each list's first
    entry is its earliest."""
    out = {}
    for s in range(NB):
        e = KH[0, s]
        if e >= 0:
            first, rest = KF[0, e], []
        while e >= 0:
            rest.append(KF[0, e])
            out.setdefault(s, set()).add((KF[0, e], KI[0, 0, e], KI[1, 0, e]))
            e = KI[2, 0, e]
        if KH[0, s] >= 0:
            assert first == min(rest), s
    return out


def test_ctz_is_the_lowest_set_bit():
    rng = np.random.default_rng(1)
    xs = np.concatenate([np.int64(1) << np.arange(63, dtype=np.int64),
                         rng.integers(1, 2**62, 500), -rng.integers(1, 2**62, 500),
                         np.array([np.iinfo(np.int64).min])])
    want = [(int(x) & -int(x)).bit_length() - 1 for x in xs]
    assert _ctz_all(xs.astype(np.int64)).tolist() == want


@pytest.mark.parametrize("n_slots", [0, 1, 3, 64, 700])
def test_next_slot_is_the_first_nonempty_slot_cyclically(n_slots):
    rng = np.random.default_rng(n_slots)
    slots = rng.choice(NB, n_slots, replace=False).astype(np.int64)
    slots = np.concatenate([slots, slots[: n_slots // 3]])  # (some slots hold two rows)
    taken = slots[: n_slots // 4].copy()
    held = set(slots.tolist()) - set(taken.tolist())
    starts = np.concatenate([rng.integers(0, NB, 300), [0, 63, 64, NB - 1]]).astype(np.int64)
    got = _next_all(slots, taken, starts)
    for s, g in zip(starts.tolist(), got.tolist()):
        want = next(((s + d) % NB for d in range(NB) if (s + d) % NB in held), -1)
        assert g == want, (s, g, want)


@pytest.mark.parametrize("drop_every", [0, 5])
def test_each_slot_holds_the_entries_of_its_buckets(drop_every):
    rng = np.random.default_rng(7 + drop_every)
    width = 2.5
    times = rng.uniform(0, 3 * NB * width, 2000)  # (three turns of the wheel)
    KF, KI, KH, CK = _fill(times, drop_every, width)
    dropped = set()
    if drop_every:
        for k in range(drop_every - 1, len(times), drop_every):
            slot = int(times[k - 1] / width) % NB
            dropped |= {j for j in range(k + 1) if int(times[j] / width) % NB == slot}
    want = {}
    for k, f in enumerate(times.tolist()):
        if k not in dropped:
            want.setdefault(int(f / width) % NB, set()).add((f, k, -k))
    assert _lists(KF, KI, KH) == want
    assert CK[0, C_N] == len(times) - len(dropped)
    free, e = 0, CK[0, C_FREE]
    while e >= 0:
        free, e = free + 1, KI[2, 0, e]
    assert free + CK[0, C_N] == CK[0, C_USED]  # (every row used is held or free)
    if drop_every:
        assert CK[0, C_USED] < len(times)  # (freed rows were used again)
    low = KF[0].shape[0] - 2
    assert KF[0, low] == times.min() and KF[0, CK[0, C_MIN]] == times.min()


def test_width_is_a_quarter_of_the_mean_gap_between_arrivals():
    arrival, dur = np.arange(0.0, 1000.0, 10.0), np.full(100, 10.0)
    assert W.width_for(arrival, dur) == pytest.approx((990.0 + 10.0) / 400)


@njit(cache=False)
def _shuffled_back(times, order, width):
    """The entries put in one wheel, every slot's list then taken and put back with
    ``_relink`` in the order ``order`` gives its slots."""
    KF, KI, KH, CK = W.new(1, times.shape[0], width)
    for k in range(times.shape[0]):
        W._put(CK[0], KF[0], KI[0, 0], KI[1, 0], KI[2, 0], KH[0], times[k], k, -k)
    for s in order:
        W._relink(KF[0], KI[2, 0], KH[0], W._take(KH[0], s), s)
    return KF, KI, KH


def test_lists_put_back_keep_their_entries_earliest_first():
    rng = np.random.default_rng(3)
    width = 0.5
    times = rng.uniform(0, 2 * NB * width, 3000)
    before = _lists(*_fill(times, 0, width)[:3])
    after = _lists(*_shuffled_back(times, rng.permutation(NB).astype(np.int64), width))
    assert after == before


def _turns_workload(seed):
    """Short jobs arriving each second, with a few jobs thousands of times longer: the
    long jobs' evals fall turns of the wheel ahead, and once the short jobs are done every
    entry left is a turn or more ahead."""
    from conftest import make_workload

    rng = np.random.default_rng(seed)
    n, n_long = 300, 12
    dur = rng.uniform(5.0, 60.0, n)
    dur[rng.choice(n, n_long, replace=False)] = rng.uniform(2e5, 5e5, n_long)
    return make_workload(np.arange(n, dtype=float), dur, rng.integers(1, 4, n),
                         evals=np.cumsum(rng.normal(0.01, 0.02, (n, 8)), axis=1),
                         losses=np.cumsum(-rng.random((n, 8)), axis=1) + 10)


@pytest.mark.parametrize("base", ["tiresias", "loss-aware"])
def test_the_twin_matches_python_when_evals_are_turns_of_the_wheel_ahead(monkeypatch, base):
    from tie_traces import FIELDS

    from evalstop.schedulers import build
    from evalstop.sim import planned_jit
    from evalstop.sim.engine import simulate

    w = _turns_workload(5)
    width = W.width_for(w.arrival_s, w.duration_s)
    assert w.duration_s.max() / len(w.eval_progress) > NB * width  # (turns ahead)
    ran = []
    kernel = planned_jit.run_kernel
    monkeypatch.setattr(planned_jit, "run_kernel", lambda *a: ran.append(1) or kernel(*a))
    for rule in ("evalstop:k=2", "default", None):
        monkeypatch.setenv("EVALSTOP_JIT", "1")
        tw = simulate(w, 6, build(base, rule))
        monkeypatch.setenv("EVALSTOP_JIT", "0")
        py = simulate(w, 6, build(base, rule))
        for f in FIELDS:
            assert np.array_equal(getattr(py, f), getattr(tw, f), equal_nan=True), (rule, f)
        assert py.n_preemptions.sum() > 0
    assert len(ran) == 3


def test_a_yield_at_an_eval_a_turn_ahead_is_found(monkeypatch):
    """A job that needs the whole cluster arrives once the short jobs are done; the long
    job holding half of it yields at one of its evals, each eight turns of the wheel or more
    ahead of the last query, its entry the only one left: only the search past the whole
    wheel finds that eval."""
    from conftest import make_workload

    from evalstop.schedulers import build
    from evalstop.sim.engine import simulate

    rng = np.random.default_rng(0)
    n = 600
    arr, dur, gpus = np.arange(n) / 10, rng.uniform(5.0, 60.0, n), rng.integers(1, 3, n)
    arr[0], dur[0], gpus[0] = 0.0, 3e6, 4  # (evals every 375,000 s)
    arr[-1], dur[-1], gpus[-1] = 20000.0, 100.0, 8
    w = make_workload(arr, dur, gpus, evals=np.cumsum(rng.normal(0.01, 0.02, (n, 8)), axis=1),
                      losses=np.cumsum(-rng.random((n, 8)), axis=1) + 10)
    assert 375000.0 - 20000.0 > 8 * NB * W.width_for(w.arrival_s, w.duration_s)
    for rule in ("evalstop:k=2", None):
        monkeypatch.setenv("EVALSTOP_JIT", "1")
        tw = simulate(w, 8, build("loss-aware", rule))
        monkeypatch.setenv("EVALSTOP_JIT", "0")
        py = simulate(w, 8, build("loss-aware", rule))
        assert tw.start_s[-1] == py.start_s[-1] == 750000.0  # (at the long job's 2nd eval)
        assert np.array_equal(tw.finish_s, py.finish_s)
