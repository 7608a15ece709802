"""Progress of a batch of tasks, shown to suit where stderr goes.

On a terminal: a tqdm bar, redrawn in place. Anywhere else (a CI log, a file, a pipe) a
bar is either nothing or a smear of carriage returns, so there the progress is plain
lines instead: one when the batch starts, one each time another tenth of it is done, and
one at least every ``HEARTBEAT_S`` seconds while tasks finish, each with the count and the
elapsed time. A 3-minute ``evalstop reproduce`` in CI thus says how far it got.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, Any

from tqdm.auto import tqdm

STEP = 0.1  # a line each time another tenth of the tasks is done
HEARTBEAT_S = 30.0  # and one at least this often while tasks finish


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
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=False,
                    file=stream)
    return ProgressLines(total=total, initial=initial, desc=desc, unit=unit, stream=stream)


def note(text: str, *, enabled: bool = True, stream: IO[str] | None = None) -> None:
    """A line saying which phase a long command has reached, where progress shows as lines
    (not on a terminal, where the bars say enough)."""
    stream = sys.stderr if stream is None else stream
    if enabled and not is_terminal(stream):
        stream.write(text + "\n")
        stream.flush()


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
