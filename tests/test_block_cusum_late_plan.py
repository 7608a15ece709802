"""block-cusum's planned stops with the paths after hn evals on (issue 46: the collapse
test, the dead-run path, the never-rose option, the dip knob and the wander gate) are the
objects' on long rows: the compiled twin runs the whole rule for the rows the first hn
evals leave. Tables of the failure shapes (``detbench.failshape``: collapses, dead runs at
the start floor or pinned at 0, dips, risers under a wandering level) and random rows."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planned_stops import KINDS, object_stops, scores
from test_block_cusum_plan import jit_env, specs

from evalstop.detbench.failshape import fail_cells
from evalstop.detectors import BlockCusum
from evalstop.detectors.block_cusum_array import stop_index
from evalstop.detectors.stop_arrays import SUM_IN_ORDER

pytestmark = pytest.mark.skipif(not SUM_IN_ORDER, reason="the arrays decline on 3.12+")

DEFAULT_LATE = {"fast": 3.5, "frel": 0.35, "dead": 0.2}
LATE_LIKE = [
    {},  # the default's
    {"eval_n": 700},
    {"sigma": 0.02},
    {"wander": 2.0, "last": 0.1},
    {"idle": 60, "fast": 0.0},
    {"hn": 8, "blocks": 8, "frel": 0.5, "dead": 0.4},
]


def _reasons(kw, obs):
    """The objects' (stop eval index, kept eval index) and stop reasons, row by row."""
    out, why = [], []
    for row in obs:
        det = BlockCusum(**kw)
        found, reason = (-1, -1), ""
        for j, x in enumerate(row):
            d = det.update_stop(j + 1, x)
            if d is not None:
                found, reason = (j, d.best_step - 1), d.reason
                break
        out.append(found)
        why.append(reason)
    return out, why


@pytest.mark.parametrize("extra", LATE_LIKE)
def test_failure_shapes_are_planned_as_the_objects_stop_them(extra):
    kw = {**DEFAULT_LATE, **extra}
    cells = (fail_cells(3, 5, held_out=False, eval_counts=(100, 200), items=(300, 2000))
             + fail_cells(3, 5, held_out=False, short=True, items=(700,)))
    paths = set()
    for cell in cells:
        with jit_env(True):
            stop_at, kept, done = stop_index(BlockCusum(**kw), cell.eval)
        assert done.all()  # no row is left to the objects
        want, why = _reasons(kw, cell.eval)
        assert list(zip(stop_at.tolist(), kept.tolist())) == want, cell.family
        for (stop, _), reason in zip(want, why):
            if stop >= kw.get("hn", 20):
                paths.add("collapse" if "collapse:" in reason else
                          "dead" if reason.startswith("no gain left") else
                          "idle" if reason.startswith("no gain yet") else "cusum")
    # the table reaches the paths it is about, after hn evals (the dead-run test needs a
    # noise of one eval: stated, or the job's own over the collapse test's last evals)
    want_paths = {"cusum"} | ({"collapse"} if kw["fast"] else set()) | \
        ({"idle"} if kw.get("idle") else set())
    if kw["dead"] and (kw["fast"] or "sigma" in kw or "eval_n" in kw):
        want_paths.add("dead")
    assert want_paths <= paths


@st.composite
def late_specs(draw):
    kw = draw(specs())
    kw.update(fast=draw(st.sampled_from([0.0, 2.0, 3.5])),
              frel=draw(st.sampled_from([0.0, 0.35, 0.8])),
              dead=draw(st.sampled_from([0.0, 0.2, 0.5])),
              idle=draw(st.sampled_from([0, 0, 10, 40])),
              wander=draw(st.sampled_from([0.0, 0.0, 1.0, 3.0])),
              last=draw(st.sampled_from([0.0, 0.0, 0.1, 0.5])))
    return kw


@settings(max_examples=80, deadline=None)
@given(late_specs(), st.sampled_from(["max", "min"]), st.sampled_from(KINDS),
       st.integers(0, 2**32))
def test_the_plan_is_the_rule_with_the_late_paths(kw, mode, kind, seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 4 * kw["blocks"] + 40))
    obs = scores(rng, kind, 12, m)
    if "eval_n" in kw:
        obs = np.clip(obs, 0.0, 1.0)
    if rng.random() < 0.5:  # a fall to the start floor or to 0 that stays: dead runs
        at = int(rng.integers(0, m))
        obs[: 6, at:] = np.where(rng.random((6, 1)) < 0.5, 0.0, obs[:6, :1])
    with jit_env(True):
        stop_at, kept, done = stop_index(BlockCusum(mode=mode, **kw), obs)
    assert done.all()
    assert list(zip(stop_at.tolist(), kept.tolist())) == object_stops(BlockCusum, kw, mode,
                                                                       obs)
