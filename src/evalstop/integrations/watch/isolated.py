"""A source's poll in a thread of its own, so a slow or dead server holds up only itself.

:class:`Isolated` runs one call at a time in a daemon thread. The controller's poll asks
for its result and waits at most ``wait`` seconds: a call that is not done by then is
left running, and its result is handed over by a later poll (which the controller makes
at once while the call is young: ``Batch.pending``); no other source waits for it
longer. A call running longer than ``stuck_after`` seconds makes the source *stuck*: said
once in the log, by ``/healthz`` while it lasts, and once again when it ends. A call may
``wake`` the waiting caller early, when it has a part of its result to hand over before
it ends (the caller takes that part by its own means).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_WAIT = 1.0  # seconds a controller poll waits for a source's poll
DEFAULT_STUCK_AFTER = 30.0


class Isolated(Generic[T]):
    def __init__(self, call: Callable[[], T], *, name: str, wait: float | None = DEFAULT_WAIT,
                 stuck_after: float = DEFAULT_STUCK_AFTER,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not (wait is None or wait >= 0) or not stuck_after > 0:
            raise ValueError(f"wait must be >= 0 and stuck_after > 0, got {wait}, "
                             f"{stuck_after}")
        self.call, self.name, self.wait, self.stuck_after = call, name, wait, stuck_after
        self.clock = clock
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ping = threading.Event()  # the call ended, or woke the caller
        self._started: float | None = None  # the running call's start; None when idle
        self._result: tuple[T | None, BaseException | None] | None = None

    def take(self) -> tuple[bool, T | None]:
        """(True, result) of a finished call (starting one first if none is running), or
        (False, None) while it runs. Each take waits up to ``wait`` s for the call (None:
        until it ends), none once the call is stuck, so a stuck call costs the caller
        nothing more. A call that raised re-raises here, in the caller's thread."""
        with self._lock:
            if self._started is None and self._result is None:
                self._done.clear()
                self._ping.clear()
                self._started = self.clock()
                threading.Thread(target=self._run, name=f"evalstop-{self.name}",
                                 daemon=True).start()
        if self.wait is None:
            self._done.wait()
        elif self.stuck() is None:
            self._ping.wait(self.wait)
        with self._lock:
            self._ping.clear()
            if self._result is None:
                return False, None
            (value, error), self._result = self._result, None
        if error is not None:
            raise error
        return True, value

    def wake(self) -> None:
        """From the call: end the caller's wait now (it has a part to take)."""
        self._ping.set()

    def running_for(self) -> float | None:
        """Seconds the current call has been running, None when idle."""
        started = self._started
        return None if started is None else self.clock() - started

    def stuck(self) -> float | None:
        """Seconds the current call has been running, when over ``stuck_after``."""
        t = self.running_for()
        return t if t is not None and t > self.stuck_after else None

    def _run(self) -> None:
        value, error = None, None
        try:
            value = self.call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            error = exc
        with self._lock:
            self._result = (value, error)
            self._started = None
        self._done.set()
        self._ping.set()
