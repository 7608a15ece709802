"""SIGINT/SIGTERM as a wait that the signal ends, for a loop that must finish its step.

The handler only sets a flag; the wait is a ``select`` on a pipe that the interpreter
writes to the moment a signal arrives (``signal.set_wakeup_fd``). An ``Event.set()``
called from a handler instead can deadlock: when the signal lands while the main thread
holds the Event's own lock inside ``Event.wait`` (as a short poll interval makes likely
under load), the handler blocks on that lock forever.
"""

from __future__ import annotations

import os
import select
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal:
    """``wait(timeout)`` returns True once SIGINT or SIGTERM has arrived (at once if it
    came earlier), else False after ``timeout`` seconds. Use as a context manager, in the
    main thread: the previous handlers and wakeup fd come back on exit."""

    def __init__(self) -> None:
        self.stopped = False
        self._r, self._w = os.pipe()
        for fd in (self._r, self._w):
            os.set_blocking(fd, False)
        self._old_fd = signal.set_wakeup_fd(self._w)
        self._old = {sig: signal.signal(sig, self._on_signal) for sig in SIGNALS}

    def _on_signal(self, signum, frame) -> None:
        self.stopped = True

    def wait(self, timeout: float) -> bool:
        if not self.stopped:
            # A signal after the test above has already written to the pipe: no wait.
            select.select([self._r], [], [], timeout)
        try:
            while os.read(self._r, 512):
                pass
        except BlockingIOError:
            pass
        return self.stopped

    def close(self) -> None:
        for sig, handler in self._old.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(self._old_fd)
        os.close(self._r)
        os.close(self._w)

    def __enter__(self) -> StopSignal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
