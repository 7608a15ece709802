"""``StopSignal``: SIGTERM/SIGINT end a wait at once, a signal that came before the wait
ends it without waiting, short waits in a tight loop never hang on a signal (the old
``Event.set()`` from a handler could deadlock there), and the previous handlers return."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from evalstop.stop_signal import StopSignal


def _kill_later(sig, after):
    t = threading.Timer(after, os.kill, (os.getpid(), sig))
    t.start()
    return t


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_long_wait_at_once(sig):
    with StopSignal() as stop:
        assert stop.wait(0.01) is False
        t = _kill_later(sig, 0.2)
        t0 = time.monotonic()
        assert stop.wait(60) is True
        assert time.monotonic() - t0 < 30
        t.join()


def test_a_signal_before_the_wait_ends_it_without_waiting():
    with StopSignal() as stop:
        os.kill(os.getpid(), signal.SIGTERM)
        t0 = time.monotonic()
        assert stop.wait(60) is True
        assert time.monotonic() - t0 < 30


def test_short_waits_in_a_loop_see_the_signal():
    with StopSignal() as stop:
        t = _kill_later(signal.SIGTERM, 0.3)
        deadline = time.monotonic() + 60
        while not stop.wait(0.0005):
            assert time.monotonic() < deadline
        t.join()


def test_the_previous_handlers_come_back():
    before = signal.getsignal(signal.SIGTERM)
    with StopSignal():
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    assert signal.set_wakeup_fd(-1) == -1  # no wakeup fd left behind
