"""Listing and opening a tenant tree without ever leaving it.

Every folder is opened relative to its parent's descriptor with ``O_NOFOLLOW |
O_DIRECTORY`` and listed with ``os.scandir(fd)``; every file is opened relative to its
folder's descriptor with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before a
byte is read. So a tenant that swaps one of its folders (or files) for a symbolic link
between listing and reading gets an error, never a file outside the root, and a FIFO or
device met anywhere is refused without blocking.

Errors are kept apart: a folder that vanished while walked (``ENOENT``) is simply not
listed; any other error (``EIO``, ``EMFILE``) marks the folder *unreadable*, so that the
caller keeps the offsets of the logs under it instead of taking them as deleted.
"""

from __future__ import annotations

import errno
import os
import stat as st_mod
from collections.abc import Callable
from dataclasses import dataclass, field

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
MAX_DEPTH = 32  # folders below the root; deeper ones are refused, not walked
GONE = (errno.ENOENT, errno.ENOTDIR)
OUT_OF_FDS = (errno.EMFILE, errno.ENFILE)


class NotRegular(OSError):
    """The path is not a regular file (a FIFO, a device, a socket, a folder)."""


@dataclass(slots=True)
class Entry:
    """A non-folder entry met in the walk: ``rel`` is its path under the root (``/``
    separators); ``stat`` is ``lstat``'s, so a link is a link."""

    rel: str
    name: str
    stat: os.stat_result


@dataclass(slots=True)
class Listing:
    """What one walk found: ``entries`` (files, links, FIFOs: the caller picks),
    ``unreadable`` the folders (``rel``, ``""`` for the root) whose listing failed with
    something other than "gone", with the error; ``too_deep`` the folders not entered."""

    entries: list[Entry] = field(default_factory=list)
    unreadable: dict[str, OSError] = field(default_factory=dict)
    too_deep: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # folder links met (never entered)

    def under_unreadable(self, rel: str) -> bool:
        """Whether ``rel`` lies in a folder that could not be listed this time."""
        for d in self.unreadable:
            if d == "" or rel == d or rel.startswith(d + "/"):
                return True
        return False


def open_root(root: str) -> int:
    return os.open(root, DIR_FLAGS)


def walk(root: str, admit: Callable[[str], bool] | None = None) -> Listing:
    """Walk ``root`` (trusted: the operator's path) depth first, one open descriptor per
    level, each folder's entries in name order (so the walk's order is the order of the
    paths' parts). ``admit(rel)``, when given, is asked before a non-folder entry is
    looked at (``lstat``): one it refuses is left out of the listing (a budget)."""
    out = Listing()
    try:
        fd = open_root(root)
    except OSError as exc:
        out.unreadable[""] = exc
        return out
    try:
        _walk(fd, "", 0, out, admit)
    finally:
        os.close(fd)
    return out


def _walk(fd: int, rel: str, depth: int, out: Listing,
          admit: Callable[[str], bool] | None) -> None:
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        if exc.errno not in GONE:
            out.unreadable[rel] = exc
        return
    for e in entries:
        path = f"{rel}/{e.name}" if rel else e.name
        try:
            is_dir = e.is_dir(follow_symlinks=False)  # the entry's type: no lstat needed
            if not is_dir and admit is not None and not admit(path):
                continue
            st = None if is_dir else e.stat(follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in GONE:
                out.unreadable[path] = exc
            continue
        if st is None:
            _enter(fd, e.name, path, depth, out, admit)
        else:
            out.entries.append(Entry(path, e.name, st))


def _enter(fd: int, name: str, path: str, depth: int, out: Listing,
           admit: Callable[[str], bool] | None) -> None:
    if depth + 1 > MAX_DEPTH:
        out.too_deep.append(path)
        return
    try:
        child = os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP or exc.errno == errno.ENOTDIR:
            out.links.append(path)  # swapped for a link (or a file) since listing
        elif exc.errno not in GONE:
            out.unreadable[path] = exc
        return
    try:
        _walk(child, path, depth + 1, out, admit)
    finally:
        os.close(child)


def open_file(root: str, rel: str) -> int:
    """A descriptor on the regular file ``rel`` under ``root``, reached one folder at a
    time without following any link; ``NotRegular`` for anything but a regular file
    (checked on the open descriptor: opening with ``O_NONBLOCK`` never blocks on a
    FIFO). ``OSError`` (``ELOOP`` for a link) otherwise."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, f"not a plain relative path: {rel!r}")
    d = open_root(root)
    try:
        for part in parts[:-1]:
            nxt = os.open(part, DIR_FLAGS, dir_fd=d)
            os.close(d)
            d = nxt
        fd = os.open(parts[-1], FILE_FLAGS, dir_fd=d)
    finally:
        os.close(d)
    try:
        if not st_mod.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(errno.EINVAL, "not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_n(fd: int, n: int) -> bytes:
    """Up to ``n`` bytes from ``fd``'s position (fewer at the end of the file)."""
    parts, left = [], n
    while left > 0:
        b = os.read(fd, min(left, 1 << 20))
        if not b:
            break
        parts.append(b)
        left -= len(b)
    return b"".join(parts)


def describe(exc: OSError) -> str:
    """An OS error in words; running out of descriptors is said as such."""
    if exc.errno in OUT_OF_FDS:
        return ("out of file descriptors (raise the open-file limit: LimitNOFILE= in the "
                "systemd unit, ulimit -n)")
    name = errno.errorcode.get(exc.errno or 0, "error")
    return f"{name}: {exc.strerror or exc}"
