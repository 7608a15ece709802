"""failshape: the issue-46 families (still rising under a wander, recovering dips,
collapses, dead runs) and their scorer."""

import numpy as np
import pytest

from evalstop.detbench.failshape import (
    COLLAPSE_SIGMAS,
    DEAD_SHARE,
    DIP_DEPTH,
    DIP_SPAN,
    FAIL_ITEMS,
    FAMILIES,
    SHORT_EVALS,
    fail_cells,
)
from evalstop.detbench.failshape_score import score_fail

KW = {"eval_counts": (100, 400), "items": (300, 2000)}


@pytest.fixture(scope="module")
def tuning():
    return fail_cells(0, 8, held_out=False, **KW)


def test_cells_cover_every_family(tuning):
    assert sorted({c.family for c in tuning}) == sorted(FAMILIES)
    for c in tuning:
        assert c.part == "fail-tuning" and c.noise == "binomial" and c.items in FAIL_ITEMS
        assert c.eval.shape == c.true.shape == (8, c.evals)
        assert ((c.eval >= 0) & (c.eval <= 1)).all()
        assert c.hacking.all() == (c.family in ("collapse", "dead"))
    short = fail_cells(0, 4, held_out=False, short=True)
    assert {c.family for c in short} == {"collapse", "dead"}
    assert {c.evals for c in short} == set(SHORT_EVALS)


def test_collapses_fall_half_the_gain_and_four_sigmas_within_two_evals(tuning):
    for c in (c for c in tuning if c.family == "collapse"):
        for i in range(c.runs):
            f = c.fall_idx[i]
            before, after = c.true[i, f], c.true[i, f + 2]
            sd = np.sqrt(before * (1 - before) / c.items)
            # the wander moves the level a little within two evals; the fall is the bulk
            assert before - after > 0.8 * COLLAPSE_SIGMAS * sd
            assert (c.true[i, f + 2:] < before).all()


def test_dead_runs_sit_at_their_floor_for_the_last_fifth(tuning):
    for c in (c for c in tuning if c.family == "dead"):
        assert (c.evals - c.floor_idx >= DEAD_SHARE * c.evals).all()
        for i in range(c.runs):
            tail = c.true[i, c.floor_idx[i]:]
            top = c.true[i, : c.fall_idx[i] + 1].max()
            assert tail.max() < top


def test_dips_carry_their_drawn_depth_and_span(tuning):
    for c in tuning:
        if c.family != "dip":
            assert c.dip_depth is None and c.dip_span is None
            continue
        assert ((c.dip_depth >= DIP_DEPTH[0]) & (c.dip_depth <= DIP_DEPTH[1])).all()
        assert ((c.dip_span >= DIP_SPAN[0]) & (c.dip_span <= DIP_SPAN[1])).all()
    # the trough is at the middle of the span: the level there is below where the dip
    # began by about the depth, give or take the wander (sd up to 15% of the gain) and
    # the base's own rise
    ratios = []
    for c in (c for c in tuning if c.family == "dip"):
        gain = c.true.max(axis=1) - c.true[:, 0]
        for i in range(c.runs):
            begin = c.fall_idx[i] + 1
            mid = begin + int(round(c.dip_span[i] * c.evals / 2))
            ratios.append((c.true[i, begin] - c.true[i, mid]) / gain[i] / c.dip_depth[i])
    assert 0.6 < np.median(ratios) < 1.2


def test_deterministic_and_parts_apart(tuning):
    again = fail_cells(0, 8, held_out=False, **KW)
    assert all(np.array_equal(a.eval, b.eval) for a, b in zip(tuning, again))
    held = fail_cells(0, 8, held_out=True, **KW)
    assert {c.part for c in held} == {"fail-held-out"}
    assert not any(np.allclose(a.true, b.true) for a, b in zip(tuning, held))


def test_the_scorer_tells_a_rule_that_stops_everything_from_one_that_stops_nothing(tuning):
    never = score_fail("patience:n=100000", tuning)
    always = score_fail("evalstop:k=1", tuning)
    assert never["rising"]["tenant_harmful"] == 0.0 and never["dead"]["stopped"] == 0.0
    assert always["rising"]["tenant_harmful"] > 0.5 and always["dead"]["stopped"] == 1.0
    assert always["dead"]["no_gain_left"] == 0.0  # the paper's rule gives its own reason
