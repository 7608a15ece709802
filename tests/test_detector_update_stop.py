"""``Detector.update_stop`` (the simulator's path) and ``update`` are one rule: same stops,
same state, step by step, for every registered detector."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evalstop.detectors import available, make_detector


def _scores(seed: int, n: int = 40) -> list[float]:
    rng = np.random.default_rng(seed)
    x = (np.sin(np.linspace(0, 3, n)) + rng.normal(0, 0.2, n)).tolist()
    for k in rng.choice(n, 4, replace=False):  # non-finite evals are ignored, not stops
        x[int(k)] = [math.nan, math.inf, -math.inf][int(k) % 3]
    return x


# Rules with a required parameter get one; every other rule runs on its defaults.
REQUIRED = {"cusum-known": "cusum-known:sigma=0.2"}


@pytest.mark.parametrize("spec", [REQUIRED.get(name, name) for name in available()])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("seed", range(5))
def test_update_stop_matches_update(spec, mode, seed):
    a, b = make_detector(spec, mode=mode), make_detector(spec, mode=mode)
    for j, score in enumerate(_scores(seed)):
        extras = {"loss": 1.0 / (j + 1), "proxy": 0.1 * j, "progress": (j + 1) / 40}
        d = a.update(j + 1, score, **extras)
        s = b.update_stop(j + 1, score, *extras.values())
        assert (s is None) == (not d.stop)
        if s is not None:
            assert s == d
        assert a.state_dict() == b.state_dict()
    # After a stop both are frozen and answer the same stop again.
    if a.stopped:
        assert b.update_stop(100, 0.0) == a.update(100, 0.0)


def test_a_score_that_is_not_a_number_does_not_use_up_its_step():
    det = make_detector("evalstop:k=2")
    det.update(1, 0.5)
    with pytest.raises((TypeError, ValueError)):
        det.update(2, "n/a")
    assert det.update(2, 0.4).stop is False  # step 2 is still free
