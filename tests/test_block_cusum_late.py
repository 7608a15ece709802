"""block-cusum's paths after hn evals (issue 46): the collapse test, the dead-run path, the
never-rose option, the dip knob ``last`` and the wander gate. Off, the rule is issue 21's
stop for stop; up to hn evals they change nothing; the planned stops still match."""

import math

import numpy as np
import pytest
from conftest import run_detector
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, scores
from test_block_cusum_plan import jit_env

from evalstop.detectors import DEFAULT_SPEC, RULE21_DEFAULT_SPEC, BlockCusum, make_detector
from evalstop.detectors.block_cusum_array import stop_index
from evalstop.detectors.stop_arrays import SUM_IN_ORDER

run = run_detector


def spec(**kw):
    """The default's spec with some options replaced."""
    head, _, rest = DEFAULT_SPEC.partition(":")
    keep = [p for p in rest.split(",") if p.split("=")[0] not in kw]
    return f"{head}:" + ",".join(keep + [f"{k}={v}" for k, v in kw.items()])


def decide(det, values):
    """(stop step or None, the last Decision)."""
    for step, v in enumerate(values, start=1):
        d = det.update(step, v)
        if d.stop:
            return step, d
    return None, d
LATE = {"fast": 3.5, "frel": 0.5, "dead": 0.2, "last": 0.1, "wander": 2.0}


def _rng_run(seed, rate, n_items=700):
    rng = np.random.default_rng(seed)
    return (rng.binomial(n_items, np.clip(rate, 0.0, 1.0)) / n_items).tolist()


def _rise(m, top=0.6, start=0.2, tau=0.1):
    x = np.arange(1, m + 1) / m
    return start + (top - start) * (1.0 - np.exp(-x / tau))


def test_bad_arguments():
    for kw, word in (({"last": 1.0}, "last"), ({"fast": -1.0}, "fast"),
                     ({"frel": -0.1}, "frel"), ({"dead": 1.5}, "dead"),
                     ({"idle": -1}, "idle"), ({"wander": math.nan}, "wander")):
        with pytest.raises(ValueError, match=word):
            BlockCusum(**kw)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(KINDS), st.integers(0, 2**32), st.integers(1, 20))
def test_up_to_hn_evals_the_late_paths_change_nothing(kind, seed, m):
    obs = scores(np.random.default_rng(seed), kind, 1, m)[0].tolist()
    assert run(BlockCusum(**LATE), obs) == run(BlockCusum(), obs)


def test_off_they_are_issue_21s_rule():
    off = make_detector(f"{RULE21_DEFAULT_SPEC},fast=0,dead=0,last=0,wander=0,idle=0")
    values = _rng_run(3, np.r_[_rise(300), np.full(100, 0.45)])
    assert run(off, values) == run(make_detector(RULE21_DEFAULT_SPEC), values)
    assert "pairs" not in off.state_dict()["rule"]  # its state is issue 21's too


@pytest.mark.parametrize("steps", [1, 2])
@pytest.mark.parametrize("evals", [60, 400])
def test_a_collapse_is_stopped_within_two_evals_of_its_start(evals, steps):
    rate = _rise(evals)
    top = int(evals * 0.6)
    fall = 0.3 * np.clip((np.arange(evals) - top) / steps, 0.0, 1.0)
    values = _rng_run(evals + steps, rate - fall)
    det = make_detector(spec(eval_n=700))
    stop, d = decide(det, values)
    assert stop is not None and 0 <= (stop - 1) - (top + 1) <= 2  # steps are 1-based
    assert "collapse" in d.reason and d.best_step <= top + 1
    # without the collapse test the CUSUM waits for its blocks
    later, _ = run(make_detector(spec(eval_n=700, fast=0)), values)
    assert later is None or later > stop


def test_one_wild_eval_is_no_collapse():
    values = _rng_run(5, _rise(300))
    values[200] = 0.0
    stop, _ = run(make_detector(spec(eval_n=700)), values)
    assert stop is None


def test_a_dead_run_is_stopped_with_no_gain_left_and_its_best_kept():
    m = 300
    rate = _rise(m, top=0.4, start=0.05)
    rate[150:] = 0.0  # to the metric's floor, and it stays there
    values = _rng_run(7, rate)
    for text in (spec(eval_n=700), DEFAULT_SPEC):
        stop, d = decide(make_detector(text), values)
        assert stop is not None and stop > 150
        assert d.reason.startswith("no gain left") and d.best_step <= 150


def test_a_small_rise_then_pinned_at_zero_is_dead_but_not_with_dead_off():
    # the issue's public run: 0.03 to 0.04, then exactly 0 for good. The gain is about one
    # noise sigma, so the CUSUM's gain gate (gmin) never lets it stop the run
    m = 120
    rate = 0.03 + 0.01 * np.clip(np.arange(m) / 40, 0, 1)
    rate[70:] = 0.0
    values = _rng_run(11, rate, n_items=300)
    stop, d = decide(make_detector(spec(eval_n=300)), values)
    assert stop is not None and stop > 70 and d.reason.startswith("no gain left")
    assert d.best_step <= 70
    assert run(make_detector(spec(eval_n=300, dead=0)), values)[0] is None


def test_a_run_that_never_rose_is_stopped_only_with_idle():
    values = _rng_run(13, np.full(300, 0.3))
    assert run(make_detector(spec(eval_n=700)), values)[0] is None
    stop, d = decide(make_detector(spec(eval_n=700, idle=100)), values)
    assert stop == 100 and d.reason.startswith("no gain yet")


def test_a_shallow_dip_must_last_a_share_of_the_run():
    # a plateau, then a dip of 20% of the gain that stays: last holds the stop back
    m = 400
    rate = _rise(m, top=0.5, start=0.2, tau=0.05)
    rate[200:] -= 0.06
    values = _rng_run(17, rate, n_items=2000)
    early, _ = decide(make_detector(spec(eval_n=2000, last=0)), values)
    late, d1 = decide(make_detector(spec(eval_n=2000, last=0.3)), values)
    assert early is not None and late is not None and late > early
    assert "noise sigmas" in d1.reason


def test_the_wander_gate_needs_a_fall_beyond_the_levels_wander():
    # an AR(1) level wander of 10% of a 0.3 gain on a plateau, no fall
    rng = np.random.default_rng(19)
    w = np.zeros(600)
    for i in range(1, 600):
        w[i] = 0.97 * w[i - 1] + rng.normal(0, 0.03 * math.sqrt(1 - 0.97 ** 2))
    rate = _rise(600, top=0.5, start=0.2, tau=0.05) + w
    values = _rng_run(23, rate, n_items=2000)
    gated = BlockCusum(eval_n=2000, wander=3.0)
    plain = BlockCusum(eval_n=2000)
    a, b = run(gated, values)[0], run(plain, values)[0]
    assert b is not None and (a is None or a > b)


@pytest.mark.skipif(not SUM_IN_ORDER, reason="the arrays decline on 3.12+")
@pytest.mark.parametrize("twin", [True, False], ids=["twin", "numpy"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_plan_covers_hn_evals_and_the_twin_the_rest(kind, twin):
    """Without the twin the rows not stopped in hn evals are left to the objects; with it
    every row is planned, the stops after hn evals included (``test_block_cusum_late_plan``
    compares them on many more rows)."""
    det = make_detector(DEFAULT_SPEC)
    rng = np.random.default_rng(29)
    obs = scores(rng, kind, 24, 60)
    with jit_env(twin):
        stop_at, kept, done = stop_index(det, obs)
    assert done.all() or not twin
    for j in range(obs.shape[0]):
        stop, d = decide(make_detector(DEFAULT_SPEC), obs[j].tolist())
        if done[j]:
            assert stop_at[j] == (-1 if stop is None else stop - 1)
            assert kept[j] == (-1 if stop is None else d.best_step - 1)
            assert twin or stop_at[j] < det.hn
        else:
            assert stop is None or stop > det.hn


def test_a_stop_at_the_floor_in_the_first_hn_evals_says_no_gain_left():
    """A pass rate that rose to 0.038 and fell to exactly 0 (issue 46's public RL run) is
    stopped by the short-run CUSUM before its 20th eval; the reason names the floor, as a
    stop after 20 evals does. The decision is the issue-21 rule's, stop for stop. (With
    the noise stated the CUSUM stops it at its second 0, which may be chance: no note.)"""
    rise = [0.0, 0.005, 0.01, 0.02, 0.025, 0.03, 0.033, 0.038, 0.036, 0.034]
    vals = rise + [0.0] * 10
    for extra, note in (("", True), (",eval_n=500", False)):
        got = {}
        for spec in (DEFAULT_SPEC, RULE21_DEFAULT_SPEC):
            det = make_detector(spec + extra)
            got[spec] = next((j + 1, d) for j, v in enumerate(vals)
                             if (d := det.update_stop(j + 1, v)) is not None)
        (stop, d), (stop21, d21) = got[DEFAULT_SPEC], got[RULE21_DEFAULT_SPEC]
        assert stop == stop21 < 20 and d.best_step == d21.best_step
        assert d.reason.startswith("no gain left") is note and "no gain" not in d21.reason
