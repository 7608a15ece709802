"""``block-cusum``'s progress-aware start (``plong``): with progress saying the run is long,
the gain gate holds from the first eval; without progress it is the plain rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalstop.detectors import DEFAULT_SPEC, make_detector
from evalstop.detectors.block_cusum import BlockCusum
from evalstop.detectors.block_cusum_array import stop_index as plan
from evalstop.sim.stops import stop_index as planned

STATED = ",sigma=0.01"
GATED = f"{DEFAULT_SPEC},plong=100"


def feed(spec: str, values, progress=None):
    """Every decision, fed with the step j + 1 and ``progress(j)`` (or None)."""
    det = make_detector(spec)
    out = []
    for j, v in enumerate(values):
        out.append(det.update(j + 1, v, progress=None if progress is None else progress(j)))
        if out[-1].stop:
            break
    return out


def stop_eval(decisions) -> int | None:
    last = decisions[-1]
    return len(decisions) if last.stop else None


def rising_with_early_dip(n: int = 400) -> list[float]:
    """A run still rising at its end whose level wanders down 4 sigmas (sigma 0.01) at
    evals 9-16, before it has gained 5 sigmas: in its first 20 evals it looks like a short
    run that fell."""
    out = []
    for j in range(n):
        if j < 8:
            out.append(0.50 + 0.03 * j / 7)
        elif j < 16:
            out.append(0.49)
        else:
            out.append(0.49 + 0.31 * (j - 16) / (n - 17))
    return out


def test_long_rising_run_with_early_wander_is_not_stopped_with_progress():
    values = rising_with_early_dip()
    n = len(values)
    plain = feed(GATED + STATED, values)  # no progress: today's rule
    assert stop_eval(plain) is not None and stop_eval(plain) <= 20
    with_progress = feed(GATED + STATED, values, lambda j: (j + 1) / n)
    assert stop_eval(with_progress) is None  # not early, and not later either
    # the default (plong off) stops it whether or not progress is given
    assert stop_eval(feed(DEFAULT_SPEC + STATED, values, lambda j: (j + 1) / n)) == \
        stop_eval(plain)


def test_long_run_that_collapses_after_a_gain_is_still_stopped_early():
    """The gate only asks for a gain: a long run that rose 30 sigmas and falls back is
    stopped in its first 20 evals as before."""
    values = [0.3 + 0.03 * j for j in range(10)] + [0.3] * 390
    n = len(values)
    gated = feed(GATED + STATED, values, lambda j: (j + 1) / n)
    assert stop_eval(gated) is not None and stop_eval(gated) <= 20
    assert stop_eval(gated) == stop_eval(feed(DEFAULT_SPEC + STATED, values))


@pytest.mark.parametrize("evals", [6, 10, 12])
def test_short_hacking_run_is_stopped_as_today(evals):
    values = [0.50, 0.55, 0.60] + [0.50] * (evals - 3)
    today = feed(DEFAULT_SPEC + STATED, values)
    assert stop_eval(today) is not None and stop_eval(today) <= 8
    short = feed(GATED + STATED, values, lambda j: (j + 1) / evals)
    assert [tuple(d) for d in short] == [tuple(d) for d in today]


def random_runs(rng: np.random.Generator, count: int):
    """Pass-rate-like runs of 6-60 evals: a rise, a wander, sometimes a drop."""
    for _ in range(count):
        n = int(rng.integers(6, 61))
        x = np.cumsum(rng.normal(0.0, 0.01, n)) + 0.4 + rng.uniform(0.0, 0.2) * np.sqrt(
            np.arange(n) / n)
        if rng.random() < 0.4:
            at = int(rng.integers(2, n))
            x[at:] -= rng.uniform(0.02, 0.2)
        yield np.clip(x + rng.normal(0.0, 0.01, n), 0.0, 1.0).tolist()


@pytest.mark.parametrize("extra", ["", STATED, ",eval_n=700"])
def test_without_progress_it_is_the_plain_rule(extra):
    rng = np.random.default_rng(46)
    stops = 0
    for values in random_runs(rng, 300):
        today = feed(DEFAULT_SPEC + extra, values)
        stops += today[-1].stop
        assert [tuple(d) for d in feed(GATED + extra, values)] == [tuple(d) for d in today]
        # unusable progress (0, NaN, above 1, not a number) is no progress
        for bad in (0.0, math.nan, 1.5, "x"):
            got = feed(GATED + extra, values, lambda j, bad=bad: bad)
            assert [tuple(d) for d in got] == [tuple(d) for d in today]
    assert stops > 30  # the comparison covers stops, not only runs that go on


def test_progress_changes_decisions_only_on_long_runs():
    """Run lengths under plong: the same decisions with progress as without; over it the
    gate takes stops away (never adds one) within the first hn evals."""
    rng = np.random.default_rng(7)
    differ = 0
    for values in random_runs(rng, 300):
        n = len(values)
        today = feed(DEFAULT_SPEC + STATED, values)
        short = feed(f"{DEFAULT_SPEC},plong={n + 1}{STATED}", values, lambda j: (j + 1) / n)
        assert [tuple(d) for d in short] == [tuple(d) for d in today]
        long = feed(f"{DEFAULT_SPEC},plong={n}{STATED}", values, lambda j: (j + 1) / n)
        if stop_eval(long) != stop_eval(today):
            differ += 1
            assert stop_eval(today) is not None
            assert stop_eval(long) is None or stop_eval(long) > stop_eval(today)
    assert differ > 0


def test_spec_and_bad_values():
    assert "plong" not in make_detector("default").spec
    assert make_detector("default:plong=0").spec == make_detector("default").spec
    assert make_detector("default:plong=100").spec.endswith("plong=100")
    with pytest.raises(ValueError, match="plong"):
        make_detector("default:plong=-1")
    det = make_detector(GATED)
    det.update(1, 0.5, progress=0.01)
    again = make_detector(GATED)
    again.load_state_dict(det.state_dict())
    assert again.state_dict() == det.state_dict()


def test_plan_matches_the_objects():
    """The simulator's planned stops: a grid that keeps the job under plong is planned in
    arrays (as without the option); a long grid is left to the objects, which read it."""
    rng = np.random.default_rng(3)
    m = 40  # past hn and the first merge: the plan's twin (or the objects) takes over
    short = np.array([v[:m] for v in random_runs(rng, 600) if len(v) >= m])
    grid = (np.arange(m) + 1) / m
    det = BlockCusum(plong=100, sigma=0.01)
    got = plan(det, short, grid)
    assert got is not None
    base = plan(BlockCusum(sigma=0.01), short, grid)
    for a, b in zip(got, base):
        assert np.array_equal(a, b)
    assert base[0].max() >= 0  # some rows stop
    assert plan(det, short) is None  # no grid: the objects decide
    long_grid = grid / 100.0  # the same evals, a run 100 times as long
    assert plan(det, short, long_grid) is None
    zeros = np.zeros_like(short)
    for g in (grid, long_grid):
        p = planned(lambda: BlockCusum(plong=100, sigma=0.01), short, zeros, zeros, g)
        for i, row in enumerate(short.tolist()):
            d = feed("block-cusum:plong=100,sigma=0.01", row, lambda j, g=g: g[j])
            assert p.stopped[i] == d[-1].stop
            if d[-1].stop:
                assert p.end_eval[i] == len(d) - 1
                assert p.kept_eval[i] == d[-1].best_step - 1


@pytest.mark.parametrize("rule", ["default:plong=10", "default:plong=40"])
def test_simulator_planned_stops_match_the_event_path(rule):
    """The simulator feeds each eval its grid point: the planned stops (arrays where the
    grid keeps a job under plong, the objects where it makes it long) are the event
    path's, stop for stop."""
    from evalstop.schedulers import SCHEDULERS, build
    from evalstop.sim.engine import simulate
    from evalstop.workload import synthetic_workload

    w = synthetic_workload(np.random.default_rng(0), n_jobs=300, n_gpus=64)
    fast = simulate(w, 64, build(SCHEDULERS[0], rule))
    slow = simulate(w, 64, build(SCHEDULERS[0], rule), plan_stops=False)
    for f in ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress"):
        assert np.array_equal(getattr(fast, f), getattr(slow, f), equal_nan=True), f
    assert fast.stopped.any()
    plain = simulate(w, 64, build(SCHEDULERS[0], "default"))
    if w.n_evals < int(rule.split("=")[1]):  # the grid keeps every job short: as without
        assert np.array_equal(fast.stop_eval, plain.stop_eval)
