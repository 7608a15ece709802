"""Reading text input one line at a time, never a whole line of any length.

Iterating over a file reads each line whole, so a single 1 GB line without a newline
(tenant data is hostile) used to be read into memory before any check. ``bounded_lines``
reads at most ``MAX_LINE_CHARS + 1`` characters per line and refuses a longer one with a
one-line error naming the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

from evalstop.errors import InputError

# Far above any eval record or trace row (a few hundred characters), far below memory.
MAX_LINE_CHARS = 16 * 1024 * 1024


def bounded_lines(fh: TextIO, where: str, limit: int | None = None) -> Iterator[str]:
    """The lines of ``fh`` (newline included, as iteration gives them), each at most
    ``limit`` characters (default ``MAX_LINE_CHARS``, read when called so tests can lower
    it); ``where`` names the file in the error."""
    limit = MAX_LINE_CHARS if limit is None else limit
    n = 0
    while line := fh.readline(limit + 1):
        n += 1
        if len(line) > limit:
            raise InputError(f"{where}: line {n} is longer than {limit} characters; "
                             "refusing to read it")
        yield line
