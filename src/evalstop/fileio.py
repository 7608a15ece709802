"""Writing result files so that a failure never leaves a half-written file behind."""

from __future__ import annotations

import errno
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from evalstop.errors import InputError


def check_out_file(path: str | Path, option: str = "--out") -> Path:
    """``path`` as an output file that can be written: its folder exists and it is not a
    folder itself. Commands call this before their work, so a bad ``--out`` costs nothing
    (``atomic_write`` checks the same again, raising OSError as a library function)."""
    if not str(path).strip():
        raise InputError(f"{option} must name a file")
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{option} {str(path)!r} is a folder, not a file")
    if not path.parent.is_dir():
        raise InputError(f"{option} {str(path)!r}: folder {str(path.parent)!r} does not exist")
    return path


def prepare_out_dir(path: str | Path, option: str = "--out") -> Path:
    """Create the output folder ``path`` (and its parents) before any work, so that a file
    in its place or an unwritable location fails at once, not after the run."""
    if not str(path).strip():
        raise InputError(f"{option} must name a folder")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{option} {str(path)!r} is a file, not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{option} {str(path)!r}: cannot create the folder "
                         f"({exc.strerror or exc})") from None
    return path


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", **kwargs):
    """Write to a temporary file beside ``path`` and move it into place only on success,
    so an earlier file at ``path`` survives any error."""
    path = Path(path)
    # Checked here, not left to os.replace: its error would name the temporary file.
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", str(path))
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, f"folder {str(path.parent)!r} does not exist",
                                str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    except OSError as exc:  # name the file asked for, not the random temporary name
        raise type(exc)(exc.errno, f"cannot write ({exc.strerror})", str(path)) from None
    try:
        with os.fdopen(fd, mode, **kwargs) as fh:
            yield fh
        # mkstemp makes the file private (0600); give it the usual umask-based mode.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
