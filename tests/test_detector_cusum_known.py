"""cusum-known:sigma=S: cusum-drop measured in a noise sigma the platform gives."""

import json
import math

import numpy as np
import pytest
from conftest import run_detector as run

from evalstop.detectors import CusumKnown, make_detector
from evalstop.detectors.noise import sigma_hat

RAW = {"smooth": 1, "trim": 0, "min_evals": 1}  # the level is the best single eval


@pytest.mark.parametrize(
    "values, params, stop",
    [
        # drops of 0.5 with sigma 0.1: each clipped at 2.5, adds 1.25; two reach h = 1.75
        ([0, 1, 2, 3, 2.5, 2.5], {"sigma": 0.1}, 6),
        ([0, 1, 2, 3, 2.5], {"sigma": 0.1}, None),  # one eval never stops
        # the same drops measured in sigma 1.0 add 0.5 - 1.25 < 0: never a stop
        ([0, 1, 2, 3, 2.5, 2.5, 2.5, 2.5], {"sigma": 1.0}, None),
        ([0, 1, 2, 3, 2.5, 2.5], {"sigma": 0.0}, 6),  # noise-free: any drop is full size
    ],
)
def test_drops_are_measured_in_the_given_sigma(values, params, stop):
    assert run(CusumKnown(**params, **RAW), values)[0] == stop


def test_uses_the_given_sigma_not_the_jobs_own_scatter():
    # Early evals zig-zag (a large own-noise estimate); a later clear decline of 0.3.
    values = [0.0, 1.0, 0.2, 1.2, 0.4] + [1.0] * 10 + [0.7] * 4
    assert sigma_hat(values) > 0.15
    assert run(make_detector("cusum-drop"), values)[0] is None  # the estimate hides the fall
    stop, best = run(make_detector("cusum-known:sigma=0.05"), values)
    assert stop == 17 and best == 4  # two evals 6 sigmas below the level


def test_flat_noisy_plateaus_stop_rarely_and_less_than_with_an_estimate():
    # 20 evals of pure noise around a constant: the worst case for false stops.
    rng = np.random.default_rng(11)
    runs = [1.0 + 0.05 * rng.standard_normal(20) for _ in range(400)]
    known = sum(run(CusumKnown(sigma=0.05), x)[0] is not None for x in runs)
    estimated = sum(run(make_detector("cusum-drop"), x)[0] is not None for x in runs)
    assert known <= 40  # about 5%
    assert estimated > 2 * known  # about 15%: low noise estimates stop plateaus


@pytest.mark.parametrize("spec, word", [("cusum-known", "sigma is required"),
                                         ("cusum-known:sigma=-1", "sigma must"),
                                         ("cusum-known:sigma=nan", "sigma must"),
                                         ("cusum-known:sigma=inf", "sigma must"),
                                         ("cusum-known:sigma=0.1,h=0", "h must")])
def test_bad_specs(spec, word):
    with pytest.raises(ValueError, match=word):
        make_detector(spec)


def test_spec_and_state_round_trip():
    det = make_detector("cusum-known:sigma=0.02")
    assert det.spec == "cusum-known:sigma=0.02,h=1.75,k=1.25,clip=2.5,smooth=9,min_evals=6,trim=2"
    values = [0.1 * i for i in range(12)] + [0.9, 0.8]
    for step, v in enumerate(values[:-1], start=1):
        det.update(step, v)
    state = json.loads(json.dumps(det.state_dict()))
    other = make_detector(det.spec)
    other.load_state_dict(state)
    assert other.update(len(values), values[-1]) == det.update(len(values), values[-1])
    assert math.isfinite(det.best_score)
