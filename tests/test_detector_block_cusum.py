"""block-cusum: cusum-drop on blocks of progress, with a minimum fall relative to the gain."""

import json
import math

import numpy as np
import pytest
from conftest import run_detector
from hypothesis import given, settings
from hypothesis import strategies as st

from evalstop.detectors import BlockCusum, CusumDrop, FleetNoise, make_detector

NAN = math.nan
run = run_detector
RULE = "default"  # the frequency tests are about the default


def _binomial_run(rng, rate, n_items=1319):
    return rng.binomial(n_items, np.clip(rate, 0.0, 1.0)) / n_items


def _stop(det, values):
    return run(det, values)[0]


@pytest.mark.parametrize(
    "values, params, stop",
    [
        ([0.1 * i for i in range(30)], {}, None),
        ([1.0] * 20, {}, None),
        # a collapse to half the gain stops (clip - k = 1.5 per eval, h = 2.5: two evals)
        ([0.0] * 3 + [1.0] * 12 + [0.5] * 3, {"sigma": 0.1}, 17),
        # the same fall is 5% of the gain: no reason to stop with rel = 0.1 ...
        ([0.0] * 3 + [1.0] * 12 + [0.95] * 10, {"sigma": 0.01, "rel": 0.1}, None),
        # ... but with rel = 0.04 it is
        ([0.0] * 3 + [1.0] * 12 + [0.95] * 10, {"sigma": 0.01, "rel": 0.04}, 17),
        ([1.0] * 10 + [0.5] + [1.0] * 5, {"sigma": 0.1}, None),  # one bad eval never stops
        # after hn evals a run that has not gained (here: flat) is not stopped ...
        ([1.0] * 14 + [0.5] * 4, {"sigma": 0.1, "hn": 12}, None),
        ([1.0] * 14 + [0.5] * 4, {"sigma": 0.1, "hn": 12, "gmin": 0.0}, 16),
        ([1.0] * 14 + [0.5] * 4, {"sigma": 0.1, "hn": 16}, 16),  # ... nor before hn evals
        # the threshold grows by hg per doubling of the evals beyond hn
        ([0.0] * 3 + [1.0] * 12 + [0.5] * 4, {"sigma": 0.1, "hn": 4, "hg": 1.0}, 19),
    ],
)
def test_table(values, params, stop):
    assert _stop(BlockCusum(**params), values) == stop


@pytest.mark.parametrize(
    "kwargs, word",
    [({"h": 0.0}, "h"), ({"h": NAN}, "h"), ({"k": -1.0}, "k"), ({"clip": 1.0}, "clip"),
     ({"rel": 1.0}, "rel"), ({"rel": -0.1}, "rel"), ({"hg": -1.0}, "hg"),
     ({"gmin": NAN}, "gmin"), ({"lags": 3}, "lags"), ({"lags": 0}, "lags"),
     ({"blocks": 2}, "blocks"), ({"wblocks": 9}, "wblocks"), ({"hn": 0}, "hn"), ({"smooth_min": None, "blocks": 8}, "blocks"),
     ({"smooth": 0}, "smooth"), ({"trim": 8}, "trim"), ({"min_evals": 0}, "min_evals")],
)
def test_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=f"{word} must"):
        BlockCusum(**kwargs)


def test_spec_round_trips():
    det = make_detector("block-cusum:blocks=8,wblocks=4,rel=0.2,eval_n=500")
    assert make_detector(det.spec).spec == det.spec
    assert "blocks=8" in det.spec and "rel=0.2" in det.spec and "eval_n=500" in det.spec


@st.composite
def shared_params(draw):
    smooth = draw(st.integers(3, 15))
    k = draw(st.sampled_from([0.75, 1.5]))
    return {"h": draw(st.sampled_from([1.0, 2.5, 4.0])), "k": k,
            "clip": k + draw(st.sampled_from([0.5, 1.5])), "smooth": smooth,
            "min_evals": draw(st.integers(1, 6)), "trim": draw(st.integers(-1, (smooth - 1) // 2)),
            "smooth_min": draw(st.integers(2, smooth))}


NOISES = st.sampled_from([{}, {"sigma": 0.05}, {"eval_n": 100}])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=32), shared_params(), NOISES)
def test_is_cusum_drop_while_blocks_are_single_evals(values, kw, noise):
    """Up to 2 * blocks evals, with rel, gmin and hg at 0, the rule is cusum-drop, stop for
    stop."""
    det = BlockCusum(blocks=16, rel=0.0, gmin=0.0, hg=0.0, **kw, **noise)
    ref = CusumDrop(**kw, **noise)
    assert run(det, values) == run(ref, values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=12), shared_params(), NOISES)
def test_short_runs_are_judged_as_cusum_drop(values, kw, noise):
    """Up to hn evals, whatever gmin and hg, only rel tells the rule from cusum-drop: what
    the previous default does on short runs is kept."""
    det = BlockCusum(rel=0.0, hn=12, gmin=3.0, hg=0.5, **kw, **noise)
    assert run(det, values) == run(CusumDrop(**kw, **noise), values)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(0.0, 1.0), st.just(NAN)), min_size=2, max_size=120),
       st.sampled_from([{}, {"eval_n": 200}, {"lags": 4, "gmin": 2.0, "hg": 0.5},
                        {"hn": 8, "fast": 3.5, "frel": 0.5, "dead": 0.2, "last": 0.1,
                         "wander": 2.0}]),
       st.data())
def test_state_round_trip(values, kw, data):
    cut = data.draw(st.integers(1, len(values) - 1))
    params = {"blocks": 4, "wblocks": 2, "smooth": 4, "trim": 1, "smooth_min": 2, **kw}
    whole, first = BlockCusum(**params), BlockCusum(**params)
    expected = [whole.update(i + 1, v) for i, v in enumerate(values)]
    got = [first.update(i + 1, v) for i, v in enumerate(values[:cut])]
    second = BlockCusum(**params)
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    got += [second.update(i + 1, v) for i, v in enumerate(values[cut:], start=cut)]
    assert got == expected


def test_bad_state_is_refused():
    det = BlockCusum()
    for i in range(40):
        det.update(i + 1, 0.5)
    state = det.state_dict()
    state["rule"]["b"] = 3
    with pytest.raises(ValueError, match="block"):
        BlockCusum().load_state_dict(state)


def test_state_stays_small_on_a_long_run():
    det = BlockCusum(blocks=16)
    rng = np.random.default_rng(0)
    for i, v in enumerate(_binomial_run(rng, np.full(5000, 0.5))):
        det.update(i + 1, v)
    rule = det.state_dict()["rule"]
    assert 16 <= len(rule["means"]) < 32 and rule["b"] in (128, 256)
    assert len(json.dumps(rule)) < 2000


def test_mode_min_mirrors_max():
    values = [0.0] * 3 + [1.0] * 12 + [0.5] * 3
    assert (run(BlockCusum(sigma=0.1, mode="min"), [-v for v in values])
            == run(BlockCusum(sigma=0.1), values))


def test_stop_reason_says_how_far_in_gain_and_noise_and_over_how_much():
    det = BlockCusum(sigma=0.1)
    for i, v in enumerate([0.0] * 3 + [1.0] * 12 + [0.5] * 3):
        d = det.update(i + 1, v)
    assert d.stop
    assert "of its gain" in d.reason and "noise sigmas" in d.reason
    assert "over the last" in d.reason and "of the run" in d.reason


def test_a_fall_against_a_near_zero_noise_reads_as_far_beyond_it():
    det = BlockCusum(sigma=1e-12)
    for i, v in enumerate([0.0] * 3 + [1.0] * 12 + [0.5] * 3):
        d = det.update(i + 1, v)
        if d.stop:
            break
    assert d.stop and "far beyond the noise (over 1000 sigmas of 1e-12)" in d.reason
    assert "noise sigmas" not in d.reason and "e+" not in d.reason


def test_fleet_is_fed_and_used():
    fleet = FleetNoise(name="g")
    dets = [make_detector("block-cusum", fleet=fleet) for _ in range(4)]
    for j in range(20):  # non-decreasing (never stopped) with non-zero second differences
        for d in dets:
            d.update(j + 1, 0.01 * j + 0.005 * (-1) ** j)
    assert fleet.count == 4 * 18 and fleet.sigma() is not None
    assert not dets[0].per_job


# ---- eval-frequency invariance (the same true level, fresh noise) -----------------------
def _curve(p, kind):
    if kind == "slow-rise":  # a quick rise, then a slow climb that never stops
        return 0.3 + 0.25 * (1.0 - np.exp(-p / 0.05)) + 0.1 * p
    if kind == "fall":  # a rise, a peak at 50%, then a fall by 30% of the gain that stays
        rise = 0.3 + 0.35 * np.minimum((1.0 - np.exp(-p / 0.05)) / (1 - np.exp(-10.0)), 1.0)
        return np.where(p > 0.5, rise - 0.3 * 0.35, rise)
    raise ValueError(kind)


def _wander(rng, runs, grid=4000, sd=0.006, tau=0.05):
    phi = math.exp(-1.0 / (grid * tau))
    out = np.empty((runs, grid))
    out[:, 0] = sd * rng.standard_normal(runs)
    eps = sd * math.sqrt(1 - phi ** 2) * rng.standard_normal((runs, grid))
    for j in range(1, grid):
        out[:, j] = phi * out[:, j - 1] + eps[:, j]
    return out


def _false_stops(freq, runs=40, evals=150, seed=7):
    """Non-hacking slow-rise runs with a wandering level at one eval frequency."""
    wander = _wander(np.random.default_rng([seed, 0]), runs)
    m = evals * freq
    p = np.arange(1, m + 1) / m
    idx = np.ceil(p * wander.shape[1]).astype(int) - 1
    rng = np.random.default_rng([seed, freq])
    stops = 0
    for r in range(runs):
        obs = _binomial_run(rng, _curve(p, "slow-rise") + wander[r, idx], 1319)
        stops += _stop(make_detector(f"{RULE}:eval_n=1319"), obs) is not None
    return stops / runs


def test_denser_evals_do_not_raise_the_false_stop_rate():
    """Margin: at most 5 points (2 of 40 runs) more false stops at 2x and 4x than at 1x."""
    base = _false_stops(1)
    assert _false_stops(2) <= base + 0.05
    assert _false_stops(4) <= base + 0.05


@pytest.mark.parametrize("seed", range(5))
def test_a_slow_rise_with_stated_noise_runs_1000_evals(seed):
    rng = np.random.default_rng(seed)
    p = np.arange(1, 1001) / 1000
    obs = _binomial_run(rng, _curve(p, "slow-rise"), 1319)
    assert _stop(make_detector(f"{RULE}:eval_n=1319"), obs) is None


@pytest.mark.parametrize("freq", [1, 2, 4])
@pytest.mark.parametrize("seed", range(3))
def test_a_fall_by_30_percent_of_the_gain_is_stopped_at_any_frequency(freq, seed):
    m = 200 * freq
    p = np.arange(1, m + 1) / m
    obs = _binomial_run(np.random.default_rng([seed, freq]), _curve(p, "fall"), 1319)
    stop = _stop(make_detector(f"{RULE}:eval_n=1319"), obs)
    assert stop is not None and 0.5 * m < stop <= 0.6 * m


def test_a_cold_fleet_is_waited_for_up_to_hn_evals():
    """A drop before the fleet is ready: no stop on the job's own few-eval estimate, which
    the same rule without a fleet uses."""
    values = [0.0] * 3 + [1.0, 1.02, 0.98, 1.01, 0.99] + [0.5] * 4
    assert _stop(BlockCusum(), values) is not None
    assert _stop(BlockCusum(fleet=FleetNoise(name="cold")), values) is None


def test_noise_precedence_and_the_block_floor():
    """b = 1: stated > fleet > own, as cusum-drop. b >= 2: the stated noise / sqrt(b) is a
    floor the job's own block estimate can raise (a wandering level), never lower."""
    fleet = FleetNoise()
    for d in [0.5, -0.5] * 30:
        fleet.add(d)
    own, with_fleet = BlockCusum(), BlockCusum(fleet=fleet)
    stated = BlockCusum(sigma=0.01, fleet=fleet)
    for i, v in enumerate([0.5, 0.52, 0.49, 0.51, 0.5, 0.48]):
        for det in (own, with_fleet, stated):
            det.update(i + 1, v)
    assert stated._block_sigma() == 0.01
    assert with_fleet._block_sigma() == pytest.approx(fleet.sigma())
    assert own._block_sigma() not in (0.01, pytest.approx(fleet.sigma()))
    rng = np.random.default_rng(4)
    quiet, wander = BlockCusum(sigma=0.01), BlockCusum(sigma=0.01, h=1e9)  # never stops
    steps = np.cumsum(0.02 * rng.standard_normal(200))  # a random-walk level
    for i in range(200):
        quiet.update(i + 1, 0.5 + 0.01 * rng.standard_normal())
        wander.update(i + 1, 0.5 + steps[i])
    assert quiet._b == 8 and wander._b == 8 and not quiet.stopped
    assert quiet._block_sigma() == pytest.approx(0.01 / math.sqrt(8), rel=0.5)
    assert quiet._block_sigma() >= 0.01 / math.sqrt(8)
    assert wander._block_sigma() > 3 * 0.01 / math.sqrt(8)
