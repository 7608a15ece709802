"""The paper's baselines: StopAt-p and loss plateau."""

import math

import pytest

from evalstop.detectors import LossPlateau, StopAt


@pytest.mark.parametrize("p, progresses, stop_at", [
    (0.65, [0.25, 0.5, 0.75, 1.0], 3),
    (0.5, [0.25, 0.5, 0.75, 1.0], 2),
    (1.0, [0.25, 0.5, 0.75, 1.0], 4),
])
def test_stopat(p, progresses, stop_at):
    det = StopAt(p=p)
    stops = [det.update(i, 0.5, progress=q).stop for i, q in enumerate(progresses, 1)]
    assert stops.index(True) + 1 == stop_at


def test_stopat_acts_on_nan_eval_and_needs_progress():
    det = StopAt(p=0.5)
    assert det.update(1, math.nan, progress=0.6).stop
    with pytest.raises(ValueError, match="progress"):
        StopAt(p=0.5).update(1, 0.3)
    for bad in (0.0, 1.5, math.nan):
        with pytest.raises(ValueError):
            StopAt(p=bad)


@pytest.mark.parametrize("losses, window, eps, stop_at", [
    ([1.0, 0.8, 0.6, 0.5, 0.49, 0.488], 2, 0.05, 6),
    ([1.0, 0.8, 0.6, 0.5, 0.4, 0.3], 2, 0.05, None),
    ([1.0, 1.0], 1, 0.0, None),  # eps = 0: only a loss that rises (gain < 0) stops
    ([1.0, 1.1], 1, 0.0, 2),
])
def test_loss_plateau(losses, window, eps, stop_at):
    det = LossPlateau(window=window, eps=eps)
    got = None
    for i, loss in enumerate(losses, 1):
        if det.update(i, 0.5, loss=loss).stop:
            got = i
            break
    assert got == stop_at


def test_loss_plateau_skips_missing_loss_and_round_trips():
    a = LossPlateau(window=1, eps=0.05)
    for i, loss in enumerate([1.0, None, 0.9, math.nan], 1):
        assert not a.update(i, 0.5, loss=loss).stop
    b = LossPlateau(window=1, eps=0.05)
    b.load_state_dict(a.state_dict())
    assert a.update(5, 0.5, loss=0.89) == b.update(5, 0.5, loss=0.89)
    assert b.stopped


def test_rejected_update_leaves_state_unchanged():
    det = StopAt(p=0.5)
    det.update(1, 0.3, progress=0.1)
    before = det.state_dict()
    with pytest.raises(ValueError, match="progress"):
        det.update(2, 0.9)
    assert det.state_dict() == before
    assert not det.update(2, 0.9, progress=0.2).stop  # step 2 is still free
