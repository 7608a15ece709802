"""Progress of a batch of tasks, and of the stages of a long command, shown to suit where
stderr goes.

On a terminal: a tqdm bar, redrawn in place at least every ``TICK_S`` seconds (its clock
runs on while a long task holds the count still), and left on screen when done; a stage
without a count (``stage``) shows its name, its current step and a clock, redrawn the
same way, then one line saying how long it took. Anywhere else (a CI log, a file, a pipe) a
bar is either nothing or a smear of carriage returns, so there the progress is plain
lines instead: one when the batch starts, one each time another tenth of it is done, and
one at least every ``HEARTBEAT_S`` seconds while tasks finish, each with the count and the
elapsed time. A 3-minute ``evalstop reproduce`` in CI thus says how far it got.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from tqdm.auto import tqdm

STEP = 0.1  # a line each time another tenth of the tasks is done
HEARTBEAT_S = 30.0  # and one at least this often while tasks finish
TICK_S = 1.0  # on a terminal, a bar or a stage is redrawn at least this often
_ERASE = "\r\x1b[K"  # back to the line's start and clear it (any ANSI terminal)


def is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def progress_bar(*, total: int, initial: int = 0, desc: str, unit: str, enabled: bool = True,
                 stream: IO[str] | None = None):
    """Something with ``update(n=1)`` and ``close()``: a tqdm bar when ``stream`` (default
    stderr) is a terminal, ``ProgressLines`` when it is not, a silent one when not
    ``enabled``."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        return _Silent()
    if is_terminal(stream):
        return _TickingBar(total=total, initial=initial, desc=desc, unit=unit, leave=True,
                           file=stream)
    return ProgressLines(total=total, initial=initial, desc=desc, unit=unit, stream=stream)


def note(text: str, *, enabled: bool = True, stream: IO[str] | None = None) -> None:
    """A line saying which phase a long command has reached (on a terminal too: a phase
    that the user cannot see start looks like a hang)."""
    stream = sys.stderr if stream is None else stream
    if enabled:
        stream.write(text + "\n")
        stream.flush()


class _TickingBar(tqdm):
    """tqdm redraws only on an update, so a bar whose next task takes a minute would sit
    frozen, elapsed time and all; a daemon thread redraws it every ``TICK_S``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._halt = threading.Event()
        self._ticker = threading.Thread(target=self._tick, daemon=True)
        self._ticker.start()

    def _tick(self) -> None:
        while not self._halt.wait(TICK_S):
            try:
                self.refresh()
            except (OSError, ValueError):  # a closed stream: nothing left to draw on
                return

    def close(self) -> None:
        halt = getattr(self, "_halt", None)
        if halt is not None and not halt.is_set():
            halt.set()
            self._ticker.join(timeout=2 * TICK_S)
        super().close()


class Stage:
    """A stage of a command that has no count to show, only a name and, as it goes, the
    step it is on (``step``). Made by ``stage``."""

    def __init__(self, label: str, stream: IO[str], terminal: bool,
                 clock: Callable[[], float]):
        self.label, self.stream, self.terminal, self.clock = label, stream, terminal, clock
        self.t0 = self.last = clock()
        self.current = ""
        self._lock = threading.Lock()

    def step(self, text: str) -> None:
        """Say what the stage is doing now: redrawn on a terminal, a line elsewhere."""
        with self._lock:
            self.current = text
            if not self.terminal:
                self._line(f"{self.label}: {text}")
            else:
                self._draw()

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def _line(self, text: str) -> None:
        self.last = self.clock()
        self.stream.write(f"{text}, {self.elapsed():.0f} s\n")
        self.stream.flush()

    def _draw(self) -> None:
        doing = f": {self.current}" if self.current else ""
        self.stream.write(f"{_ERASE}{self.label}{doing}, {self.elapsed():.0f} s")
        self.stream.flush()

    def _tick(self) -> None:
        with self._lock:
            if self.terminal:
                self._draw()
            elif self.clock() - self.last >= HEARTBEAT_S:
                doing = f": {self.current}" if self.current else ""
                self._line(f"{self.label}{doing} (still working)")

    def _finish(self, ok: bool) -> None:
        with self._lock:
            end = f"done in {self.elapsed():.1f} s" if ok else "stopped"
            self.stream.write((_ERASE if self.terminal else "") + f"{self.label}: {end}\n")
            self.stream.flush()


class _SilentStage:
    def step(self, text: str) -> None:
        pass


@contextlib.contextmanager
def stage(label: str, *, enabled: bool = True, stream: IO[str] | None = None,
          clock: Callable[[], float] = time.monotonic, tick_s: float = TICK_S) -> Iterator:
    """Show a stage while the block runs. On a terminal: ``label``, the current step and a
    clock, redrawn every ``tick_s``, then ``label: done in N s``. Elsewhere: a line at the
    start, one per step, one at least every ``HEARTBEAT_S`` while nothing else is said,
    and the same last line. Yields an object whose ``step(text)`` names the current step."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        yield _SilentStage()
        return
    st = Stage(label, stream, is_terminal(stream), clock)
    if st.terminal:
        st._draw()
    else:
        stream.write(label + "\n")
        stream.flush()
    halt = threading.Event()

    def tick() -> None:
        while not halt.wait(tick_s):
            try:
                st._tick()
            except (OSError, ValueError):  # a closed stream
                return

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    ok = False
    try:
        yield st
        ok = True
    finally:
        halt.set()
        ticker.join(timeout=2 * tick_s)
        st._finish(ok)


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class ProgressLines:
    """Progress as whole lines, each written with one ``write`` call (so the lines of two
    processes sharing stderr do not mix)."""

    def __init__(self, *, total: int, initial: int = 0, desc: str, unit: str,
                 stream: IO[str], clock: Callable[[], float] = time.monotonic):
        self.total, self.done, self.initial = total, initial, initial
        self.desc, self.units = desc, unit + "s"
        self.stream, self.clock = stream, clock
        self.t0 = self.last = clock()
        self.tenth = self._tenth()
        self._line()

    def _tenth(self) -> int:
        return int(self.done / self.total / STEP + 1e-9) if self.total else 0

    def update(self, n: int = 1) -> None:
        self.done += n
        tenth = self._tenth()
        if tenth > self.tenth or self.clock() - self.last >= HEARTBEAT_S:
            self.tenth = tenth
            self._line()

    def close(self) -> None:
        pass  # the last update already wrote 100%; an interrupted batch says so elsewhere

    def _line(self) -> None:
        now = self.last = self.clock()
        elapsed = now - self.t0
        pct = 100.0 * self.done / self.total if self.total else 100.0
        # No estimate of the time left: tasks differ in size (in `reproduce --quick` the
        # last fifth took three times as long as the rest), so the rate so far misleads.
        self.stream.write(f"{self.desc}: {self.done}/{self.total} {self.units} ({pct:.0f}%), "
                          f"{elapsed:.0f} s\n")
        self.stream.flush()
