"""longshape: long dense pass-rate runs at 1x/2x/4x the eval frequency, and their scorer."""

import numpy as np
import pytest

from evalstop.detbench.longshape import SHAPES, long_cells
from evalstop.detbench.longshape_score import score_long

KW = {"eval_counts": (100,), "items": (500,), "freqs": (1, 2, 4)}


@pytest.fixture(scope="module")
def tuning():
    return long_cells(0, 3, held_out=False, **KW)


def test_cells_cover_every_shape_and_frequency(tuning):
    names = [s.name for s in SHAPES if not s.held_out]
    assert sorted({c.family for c in tuning}) == sorted(names)
    assert {(c.freq, c.evals) for c in tuning} == {(1, 100), (2, 200), (4, 400)}
    for c in tuning:
        assert c.part == "long-tuning" and c.noise == "binomial" and c.items == 500
        assert c.eval.shape == c.true.shape == (3, c.evals)
        assert ((c.eval >= 0) & (c.eval <= 1)).all()
        assert (c.fall_idx >= c.peak_idx).all()


def test_the_same_true_level_at_every_frequency_with_fresh_noise(tuning):
    for shape in {c.family for c in tuning}:
        one, two, four = sorted((c for c in tuning if c.family == shape), key=lambda c: c.freq)
        # eval j at 1x is eval 2j+1 at 2x and 4j+3 at 4x: the same progress point
        assert np.allclose(one.true, two.true[:, 1::2])
        assert np.allclose(one.true, four.true[:, 3::4])
        assert not np.allclose(one.eval, two.eval[:, 1::2])
        assert np.array_equal(one.hacking, four.hacking)


def test_labels_follow_the_shape(tuning):
    for c in tuning:
        hacking = next(s.hacking for s in SHAPES if s.name == c.family and not s.held_out)
        assert c.hacking.all() == hacking and c.hacking.any() == hacking


def test_deterministic_and_parts_apart(tuning):
    again = long_cells(0, 3, held_out=False, **KW)
    assert all(np.array_equal(a.eval, b.eval) for a, b in zip(tuning, again))
    held = long_cells(0, 3, held_out=True, **KW)
    assert {c.part for c in held} == {"long-held-out"}
    # the one shape both parts share (plateau) draws from its own streams in each part
    a = next(c for c in tuning if c.family == "plateau" and c.freq == 1)
    b = next(c for c in held if c.family == "plateau" and c.freq == 1)
    assert not np.allclose(a.true, b.true)


def test_a_plateau_then_a_break_counts_delay_from_the_break():
    held = long_cells(0, 6, held_out=True, eval_counts=(400,), items=(500,))
    c = next(c for c in held if c.family == "plateau-break")
    assert (c.fall_idx - c.peak_idx).max() > 50  # a long plateau before the break


def test_score_long_counts_false_stops_catches_and_frequencies(tuning):
    # a rule that never stops: no CUSUM stop, and no collapse or dead-run path
    never = score_long("default:h=1e9,fast=0,dead=0", tuning)
    assert never["false_stop"] == 0.0 and never["caught"] == 0.0
    assert never["delay_share_median"] is None and set(never["by_freq"]) == {"1", "2", "4"}
    always = score_long("evalstop:k=1", tuning)  # stops at the first lower eval
    assert always["false_stop"] > 0.9 and always["caught"] > 0.9
    assert always["tenant_harmful"] > 0.5  # stopped at the first eval, before the gain
    assert always["delay_share_median"] < 0
