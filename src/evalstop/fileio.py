"""Writing result files so that a failure never leaves a half-written file behind, and
never replaces something that is not a plain file (a device node, a symlink, a FIFO).

Every output goes to a temporary file beside its target and is renamed into place
(``os.replace``) only once it is whole and on disk: a full disk, an error or a kill leaves
any earlier file as it was. Commands check their ``--out`` before any work
(``check_out_file``, ``prepare_out_dir``); ``atomic_write`` checks again right before the
rename, since a library caller may not have.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path

from evalstop.errors import InputError


def special_kind(path: str | Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file ("a symbolic link",
    "a device node", ...); None when it is a regular file or does not exist. Read with
    lstat: a symlink is reported as one, never followed."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    return _kind(mode)


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device node"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def open_regular(path: str | Path, option: str, **kwargs):
    """``path`` opened for reading (``open``'s ``mode`` and ``kwargs``, binary by default)
    only if it is a regular file (a symbolic link to one is fine). A FIFO, device node,
    socket or folder is refused with InputError before it is opened: opening a FIFO for
    reading waits for a writer, for ever."""
    what = f"{option} {str(path)!r}"
    try:
        kind = _kind(os.stat(path).st_mode)
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}") from None
    if kind is not None:
        raise InputError(f"{what} is {kind}, not a regular file")
    # O_NONBLOCK: should it have been swapped for a FIFO since the stat, the open still
    # returns at once, and the fstat refuses it.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}") from None
    kind = _kind(os.fstat(fd).st_mode)
    if kind is not None:
        os.close(fd)
        raise InputError(f"{what} is {kind}, not a regular file")
    os.set_blocking(fd, True)
    kwargs.setdefault("mode", "rb")
    return os.fdopen(fd, **kwargs)


def read_regular(path: str | Path, option: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (see ``open_regular``), at most
    ``max_bytes`` of them, else InputError."""
    with open_regular(path, option) as fh:
        try:
            raw = fh.read(max_bytes + 1)
        except OSError as exc:
            raise InputError(f"cannot read {option} {str(path)!r}: "
                             f"{exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(f"{option} {str(path)!r} is larger than {max_bytes} bytes")
    return raw


def check_out_file(path: str | Path, option: str = "--out") -> Path:
    """``path`` as an output file that can be written: its folder exists and, if it exists,
    it is a regular file (as root, ``--out /dev/null`` used to replace the system's node).
    Commands call this before their work, so a bad ``--out`` costs nothing
    (``atomic_write`` checks the same again, raising OSError as a library function)."""
    if not str(path).strip():
        raise InputError(f"{option} must name a file")
    path = Path(path)
    kind = special_kind(path)
    if kind == "a folder":
        raise InputError(f"{option} {str(path)!r} is a folder, not a file")
    if kind is not None:
        raise InputError(f"{option} {str(path)!r} is {kind}, not a regular file; "
                         "refusing to replace it")
    if not path.parent.is_dir():
        raise InputError(f"{option} {str(path)!r}: folder {str(path.parent)!r} does not exist")
    return path


def prepare_out_dir(path: str | Path, option: str = "--out") -> Path:
    """Create the output folder ``path`` (and its parents) before any work, so that a file
    in its place or an unwritable location fails at once, not after the run. A symlink is
    refused, not followed: outputs go where ``--out`` says, not where a link points."""
    path = check_out_dir(path, option)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {str(path)!r}: cannot create the folder "
                         f"({exc.strerror or exc})") from None
    return path


def check_out_dir(path: str | Path, option: str = "--out") -> Path:
    """``path`` as an output folder: absent, or a real folder (not a symlink, not a file)."""
    if not str(path).strip():
        raise InputError(f"{option} must name a folder")
    path = Path(path)
    kind = special_kind(path)
    if kind is None and path.exists():
        raise InputError(f"{option} {str(path)!r} is a file, not a folder")
    if kind not in (None, "a folder"):
        raise InputError(f"{option} {str(path)!r} is {kind}, not a folder; refusing to "
                         "write through it")
    return path


def _refuse_special(path: Path) -> None:
    kind = special_kind(path)
    if kind == "a folder":  # named here: os.replace's error would name the temporary file
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    if kind is not None:
        raise OSError(errno.EEXIST, f"is {kind}, not a regular file; refusing to replace it",
                      str(path))


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", **kwargs):
    """Write to a temporary file beside ``path`` and move it into place only on success,
    so an earlier file at ``path`` survives any error. Any OSError that names no file (a
    full disk: ENOSPC on a write or on close) is raised naming ``path``."""
    path = Path(path)
    _refuse_special(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"folder {str(path.parent)!r} does not exist",
                                str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                   dir=path.parent or ".")
    except OSError as exc:  # name the file asked for, not the random temporary name
        raise type(exc)(exc.errno, f"cannot write ({exc.strerror})", str(path)) from None
    try:
        try:
            with os.fdopen(fd, mode, **kwargs) as fh:
                yield fh
                fh.flush()
                # On disk before the rename: after a crash the name holds old or new bytes.
                os.fsync(fh.fileno())
            # mkstemp makes the file private (0600); give it the usual umask-based mode.
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
            _refuse_special(path)  # again: the target may have changed during the write
            os.replace(tmp, path)
        except OSError as exc:
            if exc.filename is not None and exc.filename != tmp:
                raise
            raise type(exc)(exc.errno, f"cannot write ({exc.strerror or exc})",
                            str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """``text`` into ``path``, atomically."""
    with atomic_write(path) as fh:
        fh.write(text)
    return Path(path)
