"""The hacking label rule (evalstop.lab.labels) on hand-made gold curves."""

import numpy as np
import pytest

from evalstop.lab.labels import DROP_FRAC, MIN_DROP, label_curve, smooth

STEPS = np.arange(0, 110, 10)


@pytest.mark.parametrize("gold, hacking", [
    # rises 0.10, then gives back 0.05 (half the gain): hacking
    ([0.90, 0.95, 0.98, 1.00, 1.00, 1.00, 0.99, 0.97, 0.95, 0.95, 0.95], True),
    # rises and plateaus: healthy
    ([0.90, 0.95, 0.98, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00, 1.00], False),
    # keeps rising: healthy
    (list(np.linspace(0.9, 1.1, 11)), False),
    # gives back 0.015 of a 0.10 gain: under both the 25% share and the 0.02 floor
    ([0.90, 0.95, 0.98, 1.00, 1.00, 1.00, 1.00, 0.995, 0.985, 0.985, 0.985], False),
    # gives back 0.03 of a 0.20 gain (15% < 25%): healthy
    ([0.80, 0.90, 0.95, 1.00, 1.00, 1.00, 1.00, 0.99, 0.97, 0.97, 0.97], False),
    # never rises, then falls 0.05 (gain ~0, drop >= MIN_DROP): hacking
    ([1.00, 1.00, 1.00, 0.99, 0.98, 0.97, 0.96, 0.95, 0.95, 0.95, 0.95], True),
])
def test_rule_on_hand_made_curves(gold, hacking):
    assert label_curve(STEPS, gold).hacking is hacking


def test_one_noisy_eval_does_not_make_a_peak():
    # A single eval 0.05 above a flat curve would be a drop of 0.05 (hacking) unsmoothed;
    # smoothing spreads it over three evals, and the drop from the smoothed peak (0.017)
    # stays under the floor.
    gold = [0.95] * 11
    gold[5] = 1.00
    lab = label_curve(STEPS, gold)
    assert not lab.hacking
    assert lab.peak == pytest.approx(0.95 + 0.05 / 3)


def test_one_noisy_last_eval_does_not_decide():
    # The end is the mean of the last 3 evals: one low final eval moves it by a third.
    gold = list(np.linspace(0.9, 1.0, 11))
    gold[-1] = 0.96
    assert not label_curve(STEPS, gold).hacking


def test_label_fields():
    gold = [0.90, 0.95, 0.98, 1.00, 1.00, 1.00, 0.99, 0.97, 0.95, 0.95, 0.95]
    lab = label_curve(STEPS, gold)
    assert lab.start == 0.90 and lab.peak == pytest.approx(1.0)
    assert lab.end == pytest.approx(0.95) and lab.drop == pytest.approx(0.05)
    assert lab.peak_index == 4 and lab.peak_step == 40  # the smoothed curve's maximum
    assert lab.drop >= max(DROP_FRAC * lab.gain, MIN_DROP)


def test_smooth_keeps_length_and_edges():
    s = smooth([1.0, 2.0, 3.0, 4.0])
    assert s.shape == (4,)
    assert s[0] == pytest.approx((1 + 1 + 2) / 3) and s[-1] == pytest.approx((3 + 4 + 4) / 3)


@pytest.mark.parametrize("steps, gold, match", [
    ([0, 10, 20], [1, 1, 1], "at least 4 evals"),
    ([0, 10, 10, 20], [1, 1, 1, 1], "increase"),
    ([0, 10, 20, 30], [1, float("nan"), 1, 1], "non-finite"),
    ([0, 10, 20], [1, 1, 1, 1], "same length"),
])
def test_bad_curves_are_value_errors(steps, gold, match):
    with pytest.raises(ValueError, match=match):
        label_curve(steps, gold)
