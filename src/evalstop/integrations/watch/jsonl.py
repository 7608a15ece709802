"""Follow a directory of growing JSONL eval logs (the eval-log format of ``evallog``).

Every ``*.jsonl`` file under the directory (recursively) is tailed from a byte offset
that is persisted with the detector state, so a restarted controller goes on where it
stopped instead of re-reading logs from the start. Only complete lines (ending in a
newline) are taken: a last line still being written is left for the next poll, and a
file whose size has not changed since is not read again.

Hostile folders (see ``walk``): folders and files are opened one level at a time
relative to their parent's descriptor, never following a link, so nothing outside the
root can be read even if a tenant swaps a folder for a link mid-poll. A symbolic link,
FIFO or device is refused (logged once) and never opened for reading; a file or folder
whose name is not UTF-8 or holds control characters is refused. A line longer than
``max_line`` bytes is refused without being held in memory whole.

Fair share (``budget``): each tenant's logs are read within its per-poll budget, its
files round-robin, so one tenant's backlog drains over several polls while every other
tenant is read on every poll.

Rotation and rewrites: an offset belongs to a file's (device, inode), not its name. A
log rotated (``a.jsonl`` -> ``a.jsonl.1`` -> ``a.jsonl.2``) is found by its inode and
drained from its offset under its new name; a generation newer than one being followed
(several rotations between two polls) is read from its start; the new ``a.jsonl`` is
read from its start. A rename to an unrelated name is a new log (read from its start,
with that name's identity): an inode number reused by another file must not inherit an
offset. A log truncated in place (``copytruncate``) or rewritten (its bytes before the
offset, ``tail``, changed) is read again from the start, after the rest of its old
content is drained from the rotated copy whose bytes before the offset match
(``a.jsonl.N``, or ``a.jsonl.N.gz`` with ``compressed=True``, or any name of the
``rotated`` patterns, and of the owning tenant's own, see ``rotation``). The job identity
stays the original log's path (its ``source``) across a rotation.

Passing errors: a folder that cannot be listed or a file that cannot be read (``EIO``,
out of file descriptors) keeps its offsets and is retried, said in one line; a log is
taken as deleted only after it is absent from ``missing_polls`` listings in a row.
"""

from __future__ import annotations

import errno
import gzip
import os
import stat as st_mod
from collections.abc import Sequence

from evalstop.integrations.watch import rotation, walk
from evalstop.integrations.watch.budget import Budget, Share, Shares, Windows
from evalstop.integrations.watch.records import Refused, name_problem, parse_line, show
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.store import Offset
from evalstop.integrations.watch.tenants import JobKey, Tenancy

# Bound one poll's read per file, so a huge backlog is taken in several batches (each
# committed) rather than in one batch held in memory.
MAX_BYTES_PER_POLL = 4 * 1024 * 1024
MAX_LINE = 1024 * 1024  # bytes; an eval record is ~100
TAIL = 32  # bytes before the offset remembered to tell a rewritten file
MISSING_POLLS = 3  # listings in a row a log must be absent from to count as deleted
_DONE, _MORE, _NO_FDS = 0, 1, 2  # what one file's read left
_ALL, _CUT, _WAIT = 0, 1, 2  # what one chunk's parse did


class JsonlDirSource:
    def __init__(self, root: str, *, tenancy: Tenancy | None = None,
                 pattern_suffix: str = ".jsonl", max_bytes: int = MAX_BYTES_PER_POLL,
                 max_line: int = MAX_LINE, budget: Budget | None = None,
                 missing_polls: int = MISSING_POLLS, compressed: bool = False,
                 rotated: Sequence[str] = ()) -> None:
        if not os.path.isdir(root):
            raise ValueError(f"--jsonl {root!r} is not a directory")
        if max_bytes < 1 or max_line < 1:
            raise ValueError(f"max_bytes and max_line must be >= 1, got {max_bytes}, {max_line}")
        if missing_polls < 1:
            raise ValueError(f"missing_polls must be >= 1, got {missing_polls}")
        self.root = os.path.realpath(root)
        self._prefix = self.root + os.sep
        self.suffix = pattern_suffix
        self.tenancy = tenancy if tenancy is not None else Tenancy()
        # Rotated names everyone's logs may take; a tenant's policy may add its own.
        common = [rotation.DEFAULT, *([rotation.GZ] if compressed else []), *rotated]
        self._common = frozenset(common)
        names = dict.fromkeys([*common, *self.tenancy.rotated_names()])
        self._rotations = [rotation.RotatedName.of(p, pattern_suffix) for p in names]
        self._matched: dict[str, tuple[str, int] | None] = {}  # path -> (source, gen)
        self.max_bytes = max_bytes
        self.max_line = min(max_line, max_bytes)
        self.budget = budget if budget is not None else Budget()
        self._windows = Windows(self.budget.entries)
        self.missing_polls = missing_polls
        self.offsets: dict[str, Offset] = {}
        self._announced: set[str] = set()  # refused files, logged once per run
        self._missing: dict[str, int] = {}  # path -> listings in a row it was absent from
        self._waiting: dict[str, tuple] = {}  # path -> (ino, size, mtime) with no full line
        self._cursors: dict[str, str] = {}  # tenant -> last file read (round-robin)
        self._failing: set[tuple[str, int]] = set()  # (path, errno) already said
        self._examined: set[tuple] = set()  # rotated files already looked at as copies
        self._names: dict[str, str | None] = {}  # file and folder name -> its problem
        self._tenants: dict[str, str | Refused] = {}  # source -> its tenant
        self.name = f"jsonl:{self.root}"

    def load(self, offsets: dict[str, Offset]) -> None:
        """Take this source's offsets from the persisted state."""
        self.offsets = {p: o for p, o in offsets.items() if p.startswith(self._prefix)}

    def _rel(self, path: str) -> str:
        return path[len(self._prefix):].replace(os.sep, "/")

    # ---- listing ------------------------------------------------------------------------
    def _refuse_once(self, batch: Batch, path: str, reason: str, message: str,
                     tenant: str = "") -> None:
        if path not in self._announced:
            self._announced.add(path)
            batch.refuse(Refused(reason, message).refusal, tenant or self._owner(path))

    def _owner(self, path: str) -> str:
        try:
            return self._tenant(self._source_of(path))
        except Refused:
            return ""

    def _fail_once(self, batch: Batch, path: str, exc: OSError, what: str) -> None:
        """One line per (path, error) until the path works again."""
        key = (path, exc.errno or 0)
        if key not in self._failing:
            self._failing.add(key)
            batch.problems.append(f"{show(path)}: cannot {what} ({walk.describe(exc)}); "
                                  "its offsets are kept and it is retried")

    def _files(self, batch: Batch) -> tuple[dict, dict, walk.Listing]:
        """(live ``*.jsonl`` files, rotated ``*.jsonl.N`` files, the listing)."""
        self._windows.begin()
        listing = walk.walk(self.root, self._admit)
        self._windows.end()
        for rel, exc in sorted(listing.unreadable.items()):
            self._fail_once(batch, os.path.join(self.root, rel) if rel else self.root, exc,
                            "list it")
        for rel in listing.too_deep:
            self._refuse_once(batch, self._prefix + rel, "depth",
                              f"{show(self._prefix + rel)}: deeper than {walk.MAX_DEPTH} "
                              "folders; not read")
        for rel in listing.links:
            self._refuse_once(batch, self._prefix + rel, "symlink",
                              f"{show(self._prefix + rel)}: symbolic link; not followed")
        live: dict[str, os.stat_result] = {}
        rotated: dict[str, os.stat_result] = {}
        for e in listing.entries:
            path = self._prefix + e.rel
            mode = e.stat.st_mode
            if st_mod.S_ISLNK(mode):
                self._refuse_once(batch, path, "symlink",
                                  f"{show(path)}: symbolic link; not followed")
                continue
            is_live = e.name.endswith(self.suffix)
            if not (is_live or self._match(path)):
                continue
            # Not UTF-8 shows up as lone surrogates (surrogateescape): refused too.
            problem = self._name_problem(e.rel)
            if problem is not None:
                self._refuse_once(batch, path, "file-name", f"{show(path)}: {problem}; not read")
            elif not st_mod.S_ISREG(mode):
                self._refuse_once(batch, path, "special",
                                  f"{show(path)}: not a regular file (a FIFO or device); "
                                  "not read")
            else:
                (live if is_live else rotated)[path] = e.stat
        return live, rotated, listing

    def _admit(self, rel: str) -> bool:
        """Whether this poll looks at entry ``rel``: within its tenant's window."""
        return self._windows.admit(self._owner(self._prefix + rel), tuple(rel.split("/")))

    def _covered(self, path: str) -> bool:
        """Whether this poll's listing looked where ``path`` would be."""
        rel = self._rel(path)
        return self._windows.covered(self._owner(path), tuple(rel.split("/")))

    def _name_problem(self, rel: str) -> str | None:
        """The first problem of any name on ``rel``'s path (cached: each poll meets the
        same folder names again)."""
        cache = _bounded(self._names)
        for part in rel.split("/"):
            if part not in cache:
                cache[part] = name_problem(part, "file name")
            if cache[part] is not None:
                return cache[part]
        return None

    def _tenant(self, source: str) -> str:
        """``source``'s tenant (cached per source), or :class:`Refused`."""
        cache = _bounded(self._tenants)
        got = cache.get(source)
        if got is None:
            try:
                got = self.tenancy.tenant(self.root, source, suffix=self.suffix)
            except Refused as exc:
                got = exc
            cache[source] = got
        if isinstance(got, Refused):
            raise got
        return got

    def _match(self, path: str) -> tuple[str, int] | None:
        """(its live log's path, its generation) for a rotated log's ``path``, else None.
        A pattern of one tenant's policy names only that tenant's rotated logs."""
        cache = _bounded(self._matched)
        if path not in cache:
            cache[path] = self._rotated_of(path)
        return cache[path]

    def _rotated_of(self, path: str) -> tuple[str, int] | None:
        folder, _, base = path.rpartition(os.sep)
        for rot in self._rotations:
            got = rot.match(base)
            if got is None:
                continue
            source = folder + os.sep + got[0]
            if rot.pattern in self._common or rot.pattern in self._owner_rotations(source):
                return source, got[1]
        return None

    def _owner_rotations(self, source: str) -> tuple[str, ...]:
        try:
            return self.tenancy.rotated(self._tenant(source))
        except Refused:
            return ()

    def _source_of(self, path: str) -> str:
        m = self._match(path)
        return m[0] if m else path

    def _generation(self, path: str) -> int:
        m = self._match(path)
        return m[1] if m else 0

    # ---- one poll -----------------------------------------------------------------------
    def poll(self) -> Batch:
        batch = Batch(self.name)
        live, rotated, listing = self._files(batch)
        listed = {**rotated, **live}
        self._gens: dict[str, list[str]] = {}
        for path in sorted(rotated, key=self._generation):
            self._gens.setdefault(self._source_of(path), []).append(path)
        lost = self._follow_inodes(listed, listing, batch)
        self._find_copies(listed, lost, batch)
        self._newer_generations(listed, batch)
        wanted = [p for p in sorted(listed) if p in live or p in self.offsets]
        self._read_fairly(wanted, listed, batch)
        return batch

    def _read_fairly(self, paths: list[str], listed: dict, batch: Batch) -> None:
        """Each tenant within its share, its logs round-robin; a log's generations oldest
        first, a newer one only once the older is drained (a job's steps in order)."""
        by_tenant: dict[str, dict[str, list[str]]] = {}
        for path in paths:
            source = self._source_of(path)
            try:
                tenant = self._tenant(source)
            except Refused as exc:
                self._refuse_once(batch, path, exc.refusal.reason, exc.refusal.message)
                continue
            by_tenant.setdefault(tenant, {}).setdefault(source, []).append(path)
        shares = Shares(self.budget, self._cursors)
        for tenant, logs in sorted(by_tenant.items()):
            share = shares.of(tenant)
            for source in shares.order(tenant, sorted(logs)):
                if share.spent:
                    share.short = True
                    break
                gens = sorted(logs[source], key=self._generation, reverse=True)
                for path in gens:
                    got = self._read(path, listed[path], tenant, share, batch)
                    if got == _NO_FDS:
                        return  # every further open would fail the same way: next poll
                    if got == _MORE:
                        break
                shares.read(tenant, source)
        batch.over_budget.update(shares.short())

    def _follow_inodes(self, listed: dict[str, os.stat_result], listing: walk.Listing,
                       batch: Batch) -> dict[str, Offset]:
        """Offsets follow their file's inode: a file still at its path keeps its offset; a
        file renamed (rotated) takes its offset to its new name and is drained there; a
        file absent from ``missing_polls`` listings in a row (or from a folder that could
        not be listed: never) is dropped. Returns the offsets whose file went away this
        poll or was replaced (a rotated copy may still hold the rest: ``_find_copies``)."""
        kept: dict[str, Offset] = {}
        lost: dict[tuple[int, int], tuple[str, Offset]] = {}
        for path, off in self.offsets.items():
            s = listed.get(path)
            if s is not None and (s.st_dev, s.st_ino) == (off.dev, off.ino):
                kept[path] = off
                self._missing.pop(path, None)
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
                self._missing.pop(old, None)
                batch.problems.append(f"{show(old)}: log rotated to {show(path)}; draining it")
        gone_now: dict[str, Offset] = {}
        for path, off in sorted(lost.values()):
            if path in listed:
                batch.problems.append(f"{show(path)}: log replaced; reading it from the start")
                gone_now[path] = off
            elif listing.under_unreadable(self._rel(path)) or not self._covered(path):
                kept[path] = off  # not listed this time: nothing is known, keep it
            elif self._missing.get(path, 0) + 1 < self.missing_polls:
                self._missing[path] = self._missing.get(path, 0) + 1
                kept[path] = gone_now[path] = off
            else:
                self._missing.pop(path, None)
                gone_now[path] = off
                if not self._match(path):  # a drained rotated log removed: quiet
                    batch.problems.append(f"{show(path)}: log deleted; its jobs keep their "
                                          "state")
        for path in self.offsets:
            if path not in kept:
                batch.gone.append(path)
                self._waiting.pop(path, None)
        if batch.gone or batch.offsets:
            batch.progressed = True
        self.offsets = kept
        return gone_now

    def _unfollowed(self, listed: dict, source: str) -> list[str]:
        """Rotated generations of ``source`` listed and not followed, newest first."""
        return [p for p in self._gens.get(source, ()) if p not in self.offsets]

    def _find_copies(self, listed: dict, lost: dict[str, Offset], batch: Batch) -> None:
        """A log truncated or rewritten in place (``copytruncate``) or gone: drain the
        rest of it from the rotated copy holding the same bytes before the offset."""
        for path, off in list(self.offsets.items()):
            s = listed.get(path)
            if path != off.source or s is None or not off.pos:
                continue
            fresh = [c for c in self._unfollowed(listed, path) if _sig(listed[c])
                     not in self._examined]
            if fresh and (s.st_size < off.pos or not self._holds(path, off)):
                lost[path] = off
            if len(self._examined) > 100_000:  # bounded: a copy looked at again is cheap
                self._examined.clear()
            self._examined.update(_sig(listed[c]) for c in fresh)
        for path, off in sorted(lost.items()):
            if not off.pos or not off.tail:
                continue
            for cand in self._unfollowed(listed, off.source):
                if self._holds(cand, off):
                    self._claim(path, cand, listed[cand], off, batch)
                    break

    def _claim(self, path: str, cand: str, s: os.stat_result, off: Offset,
               batch: Batch) -> None:
        """Follow ``cand`` (a copy of ``path``'s log) from ``path``'s offset."""
        new = Offset(s.st_dev, s.st_ino, off.pos, off.line, off.source, off.tail, off.skipping)
        self.offsets[cand] = batch.offsets[cand] = new
        if path in self._missing:  # gone from its name: the copy holds the rest
            del self._missing[path]
            del self.offsets[path]
            batch.gone.append(path)
        batch.progressed = True
        batch.problems.append(f"{show(path)}: log copied to {show(cand)}; draining the copy")

    def _holds(self, cand: str, off: Offset) -> bool:
        """Whether ``cand``'s bytes just before ``off.pos`` are ``off.tail``."""
        start = off.pos - len(off.tail)
        try:
            fd = walk.open_file(self.root, self._rel(cand))
        except OSError:
            return False
        try:
            if cand.endswith(".gz"):
                with gzip.GzipFile(fileobj=os.fdopen(os.dup(fd), "rb")) as gz:
                    gz.seek(start)
                    return gz.read(len(off.tail)) == off.tail
            os.lseek(fd, start, os.SEEK_SET)
            return walk.read_n(fd, len(off.tail)) == off.tail
        except (OSError, EOFError, gzip.BadGzipFile):
            return False
        finally:
            os.close(fd)

    def _newer_generations(self, listed: dict, batch: Batch) -> None:
        """Several rotations between two polls: a generation newer than one followed was
        never seen; it is read from its start."""
        oldest: dict[str, int] = {}
        for path, off in self.offsets.items():
            if path in listed:
                oldest[off.source] = max(oldest.get(off.source, 0), self._generation(path))
        for source, gen in oldest.items():
            for cand in self._unfollowed(listed, source):
                if self._generation(cand) < gen:
                    s = listed[cand]
                    self.offsets[cand] = batch.offsets[cand] = Offset(
                        s.st_dev, s.st_ino, 0, 0, source, b"", False)
                    batch.progressed = True
                    batch.problems.append(f"{show(cand)}: rotated before it was read; "
                                          "reading it from the start")

    def _start(self, path: str, st: os.stat_result) -> Offset:
        return Offset(st.st_dev, st.st_ino, 0, 0, self._source_of(path), b"", False)

    def _read(self, path: str, st: os.stat_result, tenant: str, share: Share,
              batch: Batch) -> int:
        """Read what ``path`` has that is new, within ``share``: ``_DONE`` (drained),
        ``_MORE`` (left unread: budget, error) or ``_NO_FDS`` (out of descriptors)."""
        off = self.offsets.get(path)
        gz = path.endswith(".gz")
        if off is not None and not gz and st.st_size < off.pos:
            batch.problems.append(f"{show(path)}: log truncated; reading it from the start")
            off = None
        if off is None:
            off = self.offsets[path] = batch.offsets[path] = self._start(path, st)
            batch.progressed = True
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if (not gz and st.st_size <= off.pos) or self._waiting.get(path) == seen:
            return _DONE
        if share.spent:
            share.short = True
            return _MORE
        share.files -= 1
        # Never less than a longest line, so that one is always told from a partial one.
        want = min(self.max_bytes, max(share.bytes, self.max_line + 1))
        try:
            chunk = self._chunk(path, off, want, batch)
        except walk.NotRegular:
            self._refuse_once(batch, path, "special", f"{show(path)}: not a regular file; "
                                                      "not read", tenant)
            return _DONE
        except OSError as exc:
            if exc.errno in walk.GONE:
                return _MORE  # moved since listing: the next listing finds it
            if exc.errno == errno.ELOOP:
                self._refuse_once(batch, path, "symlink", f"{show(path)}: symbolic link; "
                                                          "not followed", tenant)
                return _DONE
            self._fail_once(batch, path, exc, "read it")
            return _NO_FDS if exc.errno in walk.OUT_OF_FDS else _MORE
        if chunk is None:
            return _MORE
        if self._failing:
            self._failing = {k for k in self._failing if k[0] != path}
        share.bytes -= len(chunk)
        took = self._take(path, self.offsets[path], chunk, tenant, share, batch)
        if took == _WAIT:
            self._waiting[path] = seen
            return _DONE  # a partial last line: all there is for now
        self._waiting.pop(path, None)
        if took == _ALL and len(chunk) < want:  # read to its end (but a partial line)
            return _DONE
        share.short = True  # more is there (a huge line being skipped, say): poll again soon
        return _MORE

    def _chunk(self, path: str, off: Offset, n: int, batch: Batch) -> bytes | None:
        """Up to ``n`` bytes of ``path`` from its offset, or None when it is not the file
        that was listed (swapped mid-poll). A changed tail restarts it from 0."""
        fd = walk.open_file(self.root, self._rel(path))
        try:
            got = os.fstat(fd)
            if (got.st_dev, got.st_ino) != (off.dev, off.ino):
                return None
            if path.endswith(".gz"):
                with gzip.GzipFile(fileobj=os.fdopen(os.dup(fd), "rb")) as fh:
                    return self._from(fh.seek, fh.read, path, off, n, batch)
            return self._from(lambda p: os.lseek(fd, p, os.SEEK_SET),
                              lambda k: walk.read_n(fd, k), path, off, n, batch)
        except (EOFError, gzip.BadGzipFile) as exc:
            raise OSError(errno.EIO, f"bad compressed file: {exc}") from None
        finally:
            os.close(fd)

    def _from(self, seek, read, path: str, off: Offset, n: int, batch: Batch) -> bytes:
        if off.pos and off.tail:
            seek(off.pos - len(off.tail))
            if read(len(off.tail)) != off.tail:
                batch.problems.append(f"{show(path)}: log rewritten; reading it from the start")
                off = Offset(off.dev, off.ino, 0, 0, off.source, b"", False)
                self.offsets[path] = batch.offsets[path] = off
                batch.progressed = True
        seek(off.pos)
        return read(n)

    def _take(self, path: str, off: Offset, chunk: bytes, tenant: str, share: Share,
              batch: Batch) -> int:
        """Parse the complete lines of ``chunk`` within ``share.lines``: ``_ALL`` taken,
        ``_CUT`` short for want of budget, ``_WAIT`` nothing to take (a partial last line:
        wait for the file to change)."""
        skipping = off.skipping
        end = chunk.rfind(b"\n")
        if end < 0:
            if skipping or len(chunk) > self.max_line or len(chunk) >= self.max_bytes:
                # The middle of an over-long line: drop it, never hold it whole.
                if not skipping:
                    batch.refuse(Refused(
                        "too-long", f"{show(path)}:{off.line + 1}: line longer than "
                                    f"{self.max_line} bytes; skipped").refusal, tenant)
                self._advance(path, off, len(chunk), chunk, 0, True, batch)
                return _ALL
            return _WAIT  # a partial last line: wait for the rest
        line, pos = off.line, 0
        shown = show(path)
        metric = self.tenancy.metric(tenant)
        got = _ALL
        while pos <= end:
            if share.lines <= 0:
                share.short, got = True, _CUT
                break
            nl = chunk.index(b"\n", pos)
            raw = chunk[pos:nl]
            pos = nl + 1
            line += 1
            if skipping:  # the end of an over-long line refused in an earlier poll
                skipping = False
                continue
            self._line(raw, f"{shown}:{line}", off, tenant, metric, share, batch)
        self._advance(path, off, pos, chunk, line - off.line, False, batch)
        return got

    def _line(self, raw: bytes, where: str, off: Offset, tenant: str, metric: str,
              share: Share, batch: Batch) -> None:
        if not raw.strip():
            return
        share.lines -= 1
        if len(raw) > self.max_line:
            batch.refuse(Refused("too-long", f"{where}: line longer than {self.max_line} "
                                             "bytes; skipped").refusal, tenant)
            return
        try:
            rec = parse_line(raw, where, metric)
            self.tenancy.admit(tenant, rec.job, where)
        except Refused as exc:
            batch.refuse(exc.refusal, tenant)
            return
        batch.records.append(Item(rec, where, JobKey(off.source, rec.job), tenant))

    def _advance(self, path: str, off: Offset, n: int, chunk: bytes, nlines: int,
                 skipping: bool, batch: Batch) -> None:
        taken = chunk[max(0, n - TAIL):n]
        tail = (off.tail + taken)[-TAIL:] if n < TAIL else taken
        new = Offset(off.dev, off.ino, off.pos + n, off.line + nlines, off.source, tail,
                     skipping)
        self.offsets[path] = batch.offsets[path] = new
        batch.progressed = True


def _bounded(cache: dict, limit: int = 200_000) -> dict:
    if len(cache) > limit:  # a tree of many names: start afresh rather than grow
        cache.clear()
    return cache


def _sig(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
