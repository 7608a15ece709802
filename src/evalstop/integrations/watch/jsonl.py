"""Follow a directory of growing JSONL eval logs (the DESIGN.md eval-log format).

Every ``*.jsonl`` file under the directory (recursively) is tailed from a byte offset
that is persisted with the detector state, so a restarted controller goes on where it
stopped instead of re-reading logs from the start. Only complete lines (ending in a
newline) are taken: a last line still being written is left for the next poll. A file
whose (device, inode) changed was replaced, and one shorter than its offset was
truncated: both are read again from the start (the controller then skips the steps it
has already taken). Malformed lines are reported in one line each and skipped.
"""

from __future__ import annotations

import os

from evalstop.errors import InputError
from evalstop.evallog import parse_record
from evalstop.integrations.watch.sources import Batch
from evalstop.integrations.watch.store import Offset

# Bound one poll's read per file, so a huge backlog is taken in several batches (each
# committed) rather than in one batch held in memory.
MAX_BYTES_PER_POLL = 4 * 1024 * 1024


class JsonlDirSource:
    def __init__(self, root: str, *, pattern_suffix: str = ".jsonl",
                 max_bytes: int = MAX_BYTES_PER_POLL) -> None:
        if not os.path.isdir(root):
            raise ValueError(f"--jsonl {root!r} is not a directory")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes}")
        self.root = os.path.abspath(root)
        self.suffix = pattern_suffix
        self.max_bytes = max_bytes
        self.offsets: dict[str, Offset] = {}
        self.name = f"jsonl:{self.root}"

    def load(self, offsets: dict[str, Offset]) -> None:
        """Take this source's offsets from the persisted state."""
        prefix = self.root + os.sep
        self.offsets = {p: o for p, o in offsets.items() if p.startswith(prefix)}

    def _files(self) -> dict[str, os.stat_result]:
        found: dict[str, os.stat_result] = {}
        stack = [self.root]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue  # a directory removed while we walk
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.name.endswith(self.suffix) and e.is_file():
                        found[e.path] = e.stat()
                except OSError:
                    continue
        return found

    def poll(self) -> Batch:
        batch = Batch(self.name)
        files = self._files()
        for path in sorted(set(self.offsets) - set(files)):
            batch.gone.append(path)
            batch.problems.append(f"{path}: log deleted; its jobs keep their state")
            del self.offsets[path]
        for path in sorted(files):
            self._read(path, files[path], batch)
        return batch

    def _read(self, path: str, st: os.stat_result, batch: Batch) -> None:
        off = self.offsets.get(path)
        if off is not None and (off.dev, off.ino) != (st.st_dev, st.st_ino):
            batch.problems.append(f"{path}: log replaced; reading it from the start")
            off = None
        elif off is not None and st.st_size < off.pos:
            batch.problems.append(f"{path}: log truncated; reading it from the start")
            off = None
        if off is None:
            off = Offset(st.st_dev, st.st_ino, 0, 0)
            self.offsets[path] = off
            batch.offsets[path] = off
        if st.st_size <= off.pos:
            return
        try:
            with open(path, "rb") as fh:
                fh.seek(off.pos)
                chunk = fh.read(self.max_bytes)
        except FileNotFoundError:
            return  # deleted between listing and reading: the next poll reports it
        end = chunk.rfind(b"\n")
        if end < 0:
            if len(chunk) >= self.max_bytes:
                # One line longer than a whole read: it can never be completed in a poll.
                batch.problems.append(
                    f"{path}:{off.line + 1}: line longer than {self.max_bytes} bytes; skipped"
                )
                self._advance(path, off, len(chunk), 0, batch)
            return  # a partial last line: wait for the rest
        complete = chunk[: end + 1]
        line = off.line
        for raw in complete.split(b"\n")[:-1]:
            line += 1
            if not raw.strip():
                continue
            where = f"{path}:{line}"
            try:
                text = raw.decode("utf-8")
                batch.records.append((parse_record(text, where), where))
            except UnicodeDecodeError:
                batch.problems.append(f"{where}: not UTF-8 text; skipped")
            except InputError as exc:
                batch.problems.append(f"{exc}; skipped")
        self._advance(path, off, len(complete), line - off.line, batch)

    def _advance(self, path: str, off: Offset, nbytes: int, nlines: int, batch: Batch) -> None:
        new = Offset(off.dev, off.ino, off.pos + nbytes, off.line + nlines)
        self.offsets[path] = new
        batch.offsets[path] = new
        batch.progressed = True
