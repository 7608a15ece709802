"""Shared by the tests of the rules' array ``stop_index``: tables the simulator could feed
(noisy curves, ties, plateaus, quantised scores, constant runs) and the comparison of the
planned stops with the detector objects fed eval by eval (``stops._by_objects``)."""

import numpy as np

from evalstop.detectors import make_detector
from evalstop.sim.stops import _by_objects, no_stops, stop_index

KINDS = ("curve", "steps", "grid", "decimal", "plateau", "constant", "wide")


def scores(rng, kind, n, m):
    """``n`` rows of ``m`` evals of one kind, in [0, 1] except ``wide``."""
    if kind == "curve":  # rise, peak, maybe a fall, with noise
        x = np.arange(m)[None, :] / max(m, 1)
        peak = rng.uniform(0.2, 1.2, (n, 1))
        obs = np.where(x < peak, x, 2 * peak - x) * 0.8 + rng.normal(
            0, rng.uniform(0.001, 0.1, (n, 1)), (n, m))
        return np.clip(obs, 0.0, 1.0)
    if kind == "steps":  # a random walk on a grid: ties, constant stretches
        walk = np.cumsum(rng.integers(-1, 2, (n, m)), axis=1).astype(float)
        return (walk - walk.min()) / (np.ptp(walk) + 1)
    if kind == "grid":  # scores on a 1/8 grid falling now and then: exact drops
        return np.clip(rng.integers(0, 9, (n, 1)) / 8
                       - np.cumsum(rng.random((n, m)) < 0.3, axis=1) / 8, 0.0, 1.0)
    if kind == "decimal":  # pass rates over 100 items, moving a few points: decimal ties
        walk = rng.integers(20, 80, (n, 1)) + np.cumsum(rng.integers(-6, 7, (n, m)), axis=1)
        return np.clip(walk, 0, 100) / 100
    if kind == "plateau":  # a rise to a tied top, then drops on a grid
        top = rng.integers(2, 9, (n, 1)) / 8
        rise = np.minimum(np.arange(m)[None, :] / 8, top)
        drop = np.cumsum(rng.random((n, m)) < 0.4, axis=1) * (np.arange(m) > m // 2) / 8
        return np.clip(rise - drop, 0.0, 1.0)
    if kind == "constant":  # constant, then maybe a drop of a few tenths
        obs = np.full((n, m), 0.5)
        obs[:, m // 2:] -= rng.integers(0, 3, (n, 1)) * 0.1
        return obs
    # any finite values: signs, large and tiny sizes, exact zeros
    size = 10.0 ** rng.integers(-40, 40, (n, 1)).astype(float)
    obs = rng.normal(0, 1, (n, m)) * size
    obs[rng.random((n, m)) < 0.1] = 0.0
    return obs


def spec_scores(rng, kind, spec, n, m_hi, nan_rows=0.0):
    """``n`` rows of between 1 and ``m_hi - 1`` evals of one kind for ``spec``: pass rates in
    [0, 1] when the spec states ``eval_n``, and about ``nan_rows`` of the rows with a NaN
    (left to the objects)."""
    m = int(rng.integers(1, m_hi))
    obs = scores(rng, kind, n, m)
    if "eval_n" in spec:
        obs = np.clip(obs, 0.0, 1.0)
    if nan_rows:
        obs[rng.random(n) < nan_rows, rng.integers(0, m)] = np.nan
    return obs


def by_objects(spec, mode, obs, loss, grid):
    """The objects' plan, eval by eval, as ``stops`` runs them when no array answers."""
    n, m = obs.shape
    plan = no_stops(n, m)
    _by_objects(plan, lambda: make_detector(spec, mode=mode), obs, loss, loss, grid,
                np.arange(n))
    return plan


def assert_same_plan(spec, mode, obs, loss=None, grid=None, answered=None):
    """The planned stops of ``spec`` equal the objects', and the array answered at least
    ``answered`` of the rows (all finite rows by default) rather than leaving them."""
    n, m = obs.shape
    loss = np.zeros_like(obs) if loss is None else loss
    grid = np.arange(1, m + 1) / m if grid is None else grid
    det = make_detector(spec, mode=mode)
    found = _call(det, obs, loss, grid)
    want = np.isfinite(obs).all(axis=1).sum() if answered is None else answered
    assert (0 if found is None else found[2].sum()) >= want
    fast = stop_index(lambda: make_detector(spec, mode=mode), obs, loss, loss, grid)
    slow = by_objects(spec, mode, obs, loss, grid)
    for a, b, name in zip(fast, slow, fast._fields):
        assert a.tolist() == b.tolist(), name


def _call(det, obs, loss, grid):
    import inspect
    params = inspect.signature(det.stop_index).parameters
    extra = {k: t for k, t in (("loss", loss), ("progress", grid)) if k in params}
    return det.stop_index(obs, **extra)


def object_stops(cls, kw, mode, obs):
    """(stop_at, kept) per row from fresh ``cls(mode=mode, **kw)`` detectors fed eval by
    eval (-1, -1: no stop)."""
    out = []
    for row in obs:
        det = cls(mode=mode, **kw)
        found = (-1, -1)
        for j, x in enumerate(row):
            d = det.update_stop(j + 1, x)
            if d is not None:
                found = (j, d.best_step - 1)
                break
        out.append(found)
    return out
