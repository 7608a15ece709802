"""Follow a directory of growing JSONL eval logs (the eval-log format of ``evallog``).

Every ``*.jsonl`` file under the directory (recursively) is tailed from a byte offset
that is persisted with the detector state, so a restarted controller goes on where it
stopped instead of re-reading logs from the start. Only complete lines (ending in a
newline) are taken: a last line still being written is left for the next poll.

Hostile folders: symbolic links are never followed (a link is refused, logged once,
and its target never opened: files are opened with ``O_NOFOLLOW`` and must be the
regular file that was listed); FIFOs and devices are ignored; a file or folder whose
name is not UTF-8 or holds control characters is refused. A line longer than
``max_line`` bytes is refused without being held in memory whole.

Rotation and rewrites: an offset belongs to a file's (device, inode), not its name. A
log rotated (``a.jsonl`` -> ``a.jsonl.1`` -> ``a.jsonl.2``) is found by its inode and
drained from its offset under its new name; the new ``a.jsonl`` is read from its
start. A rename to an unrelated name is a new log (read from its start, with that
name's identity): an inode number reused by another file must not inherit an offset.
A file shorter than its offset was truncated, and one whose bytes just before the offset changed (``tail``, the last 32 bytes taken) was
truncated and rewritten past its old size: both are read again from the start (the
controller skips steps it has already taken). Rotated names (``*.jsonl.N``) are read
only when they hold a file that was being followed. The job identity stays the
original log's path (its ``source``) across a rotation.
"""

from __future__ import annotations

import os
import re
import stat as st_mod

from evalstop.integrations.watch.records import Refused, name_problem, parse_line, show
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.store import Offset
from evalstop.integrations.watch.tenants import JobKey, Tenancy

# Bound one poll's read per file, so a huge backlog is taken in several batches (each
# committed) rather than in one batch held in memory.
MAX_BYTES_PER_POLL = 4 * 1024 * 1024
MAX_LINE = 1024 * 1024  # bytes; an eval record is ~100
TAIL = 32  # bytes before the offset remembered to tell a rewritten file


class JsonlDirSource:
    def __init__(self, root: str, *, tenancy: Tenancy | None = None,
                 pattern_suffix: str = ".jsonl", max_bytes: int = MAX_BYTES_PER_POLL,
                 max_line: int = MAX_LINE) -> None:
        if not os.path.isdir(root):
            raise ValueError(f"--jsonl {root!r} is not a directory")
        if max_bytes < 1 or max_line < 1:
            raise ValueError(f"max_bytes and max_line must be >= 1, got {max_bytes}, {max_line}")
        self.root = os.path.realpath(root)
        self.suffix = pattern_suffix
        self._rotated = re.compile(re.escape(pattern_suffix) + r"\.[0-9]{1,6}$")
        self.max_bytes = max_bytes
        self.max_line = min(max_line, max_bytes)
        self.tenancy = tenancy if tenancy is not None else Tenancy()
        self.offsets: dict[str, Offset] = {}
        self._announced: set[str] = set()  # refused files, logged once per run
        self.name = f"jsonl:{self.root}"

    def load(self, offsets: dict[str, Offset]) -> None:
        """Take this source's offsets from the persisted state."""
        prefix = self.root + os.sep
        self.offsets = {p: o for p, o in offsets.items() if p.startswith(prefix)}

    # ---- listing ------------------------------------------------------------------------
    def _refuse_once(self, batch: Batch, path: str, reason: str, message: str) -> None:
        if path not in self._announced:
            self._announced.add(path)
            batch.refused.append(Refused(reason, message).refusal)

    def _files(self, batch: Batch) -> tuple[dict[str, os.stat_result], dict[str, os.stat_result]]:
        """(live ``*.jsonl`` files, rotated ``*.jsonl.N`` files): regular files only."""
        live: dict[str, os.stat_result] = {}
        rotated: dict[str, os.stat_result] = {}
        stack = [self.root]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue  # a directory removed while we walk
            for e in entries:
                try:
                    is_dir = e.is_dir(follow_symlinks=False)
                    ours = (e.is_dir() or e.name.endswith(self.suffix)  # is_dir(): dir links too
                            or self._rotated.search(e.name))
                    if not ours:
                        continue
                    # Not UTF-8 shows up as lone surrogates (surrogateescape): refused too.
                    problem = name_problem(e.name, "file name")
                    if problem is not None:
                        self._refuse_once(batch, e.path, "file-name",
                                          f"{show(e.path)}: {problem}; not read")
                        continue
                    if e.is_symlink():
                        self._refuse_once(batch, e.path, "symlink",
                                          f"{show(e.path)}: symbolic link; not followed")
                    elif is_dir:
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        (live if e.name.endswith(self.suffix) else rotated)[e.path] = \
                            e.stat(follow_symlinks=False)
                except OSError:
                    continue
        return live, rotated

    def _source_of(self, path: str) -> str:
        m = self._rotated.search(path)
        return path[: m.start() + len(self.suffix)] if m else path

    # ---- one poll -----------------------------------------------------------------------
    def poll(self) -> Batch:
        batch = Batch(self.name)
        live, rotated = self._files(batch)
        listed = {**rotated, **live}
        self._follow_inodes(listed, batch)
        for path in sorted(listed):
            if path in live or path in self.offsets:  # rotated: only files we followed
                self._read(path, listed[path], batch)
        return batch

    def _follow_inodes(self, listed: dict[str, os.stat_result], batch: Batch) -> None:
        """Offsets follow their file's inode: a file still at its path keeps its offset; a
        file renamed (rotated) takes its offset to its new name and is drained there; a
        file gone is dropped. Paths that now hold a new file start from 0 in _read."""
        kept: dict[str, Offset] = {}
        lost: dict[tuple[int, int], tuple[str, Offset]] = {}
        for path, off in self.offsets.items():
            s = listed.get(path)
            if s is not None and (s.st_dev, s.st_ino) == (off.dev, off.ino):
                kept[path] = off
            else:
                lost[(off.dev, off.ino)] = (path, off)
        for path, s in sorted(listed.items()):
            found = lost.get((s.st_dev, s.st_ino))
            # Only a rotation of the same log (a.jsonl -> a.jsonl.N) keeps its offset and
            # identity: an inode number reused by another file (another tenant's, even)
            # must not inherit them.
            if (found is not None and path not in kept
                    and self._source_of(path) == found[1].source):
                del lost[(s.st_dev, s.st_ino)]
                old, off = found
                kept[path] = batch.offsets[path] = off
                batch.problems.append(f"{show(old)}: log rotated to {show(path)}; draining it")
        for path, _off in sorted(lost.values()):
            if path in listed:
                batch.problems.append(f"{show(path)}: log replaced; reading it from the start")
            elif not self._rotated.search(path):  # a drained rotated log removed: quiet
                batch.problems.append(f"{show(path)}: log deleted; its jobs keep their state")
        for path in self.offsets:
            if path not in kept:
                batch.gone.append(path)
        if batch.gone or batch.offsets:
            batch.progressed = True
        self.offsets = kept

    def _start(self, path: str, st: os.stat_result, batch: Batch) -> Offset | None:
        source = self._source_of(path)
        try:
            self.tenancy.tenant(self.root, source, suffix=self.suffix)
        except Refused as exc:
            self._refuse_once(batch, path, exc.refusal.reason, exc.refusal.message)
            return None
        return Offset(st.st_dev, st.st_ino, 0, 0, source, b"", False)

    def _read(self, path: str, st: os.stat_result, batch: Batch) -> None:
        off = self.offsets.get(path)
        if off is not None and st.st_size < off.pos:
            batch.problems.append(f"{show(path)}: log truncated; reading it from the start")
            off = None
        if off is None:
            off = self._start(path, st, batch)
            if off is None:
                return
            self.offsets[path] = batch.offsets[path] = off
            batch.progressed = True
        if st.st_size <= off.pos:
            return
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return  # deleted or swapped for a link since listing: the next poll sees it
        try:
            got = os.fstat(fd)
            if (not st_mod.S_ISREG(got.st_mode)
                    or (got.st_dev, got.st_ino) != (off.dev, off.ino)):
                return  # not the file that was listed (swapped mid-poll)
            if off.pos and off.tail:
                os.lseek(fd, off.pos - len(off.tail), os.SEEK_SET)
                if _read_n(fd, len(off.tail)) != off.tail:
                    batch.problems.append(f"{show(path)}: log rewritten; reading it from "
                                          "the start")
                    off = Offset(off.dev, off.ino, 0, 0, off.source, b"", False)
                    self.offsets[path] = batch.offsets[path] = off
            os.lseek(fd, off.pos, os.SEEK_SET)
            chunk = _read_n(fd, self.max_bytes)
        finally:
            os.close(fd)
        self._take(path, off, chunk, batch)

    def _take(self, path: str, off: Offset, chunk: bytes, batch: Batch) -> None:
        skipping = off.skipping
        end = chunk.rfind(b"\n")
        if end < 0:
            if skipping or len(chunk) > self.max_line or len(chunk) >= self.max_bytes:
                # The middle of an over-long line: drop it, never hold it whole.
                if not skipping:
                    batch.refused.append(Refused(
                        "too-long", f"{show(path)}:{off.line + 1}: line longer than "
                                    f"{self.max_line} bytes; skipped").refusal)
                self._advance(path, off, chunk, 0, True, batch)
            return  # a partial last line: wait for the rest
        complete = chunk[: end + 1]
        try:  # the tenant rules may have changed since this offset was saved
            tenant = self.tenancy.tenant(self.root, off.source, suffix=self.suffix)
        except Refused as exc:
            self._refuse_once(batch, path, exc.refusal.reason, exc.refusal.message)
            return
        line = off.line
        shown = show(path)
        metric = self.tenancy.metric(tenant)
        for raw in complete.split(b"\n")[:-1]:
            line += 1
            where = f"{shown}:{line}"
            if skipping:  # the end of an over-long line refused in an earlier poll
                skipping = False
                continue
            if len(raw) > self.max_line:
                batch.refused.append(Refused(
                    "too-long", f"{where}: line longer than {self.max_line} bytes; "
                                "skipped").refusal)
                continue
            if not raw.strip():
                continue
            try:
                rec = parse_line(raw, where, metric)
                self.tenancy.admit(tenant, rec.job, where)
            except Refused as exc:
                batch.refused.append(exc.refusal)
                continue
            batch.records.append(Item(rec, where, JobKey(off.source, rec.job), tenant))
        self._advance(path, off, complete, line - off.line, False, batch)

    def _advance(self, path: str, off: Offset, taken: bytes, nlines: int, skipping: bool,
                 batch: Batch) -> None:
        new = Offset(off.dev, off.ino, off.pos + len(taken), off.line + nlines, off.source,
                     (off.tail + taken)[-TAIL:], skipping)
        self.offsets[path] = batch.offsets[path] = new
        batch.progressed = True


def _read_n(fd: int, n: int) -> bytes:
    parts, left = [], n
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            break
        parts.append(b)
        left -= len(b)
    return b"".join(parts)
