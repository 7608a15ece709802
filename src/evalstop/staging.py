"""A result folder written whole or not at all: fill a fresh folder, then swap it in.

``staged_folder(out)`` yields a new folder beside ``out`` (``<out>.incomplete-XXXXXXXX``,
with an ``INCOMPLETE`` file inside saying who writes it) and, once the block succeeds,
puts it in ``out``'s place: in one step where Linux offers it (``renameat2`` with
``RENAME_EXCHANGE``), else by two renames. The old folder is then deleted. An error or an
interrupt deletes the new folder and leaves ``out`` as it was; only a SIGKILL or power loss
leaves a ``*.incomplete-*`` folder behind, marked, and the next run into the same ``out``
deletes it once its writer is gone. So ``out`` never holds old and new results mixed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalstop.errors import InputError
from evalstop.fileio import check_out_dir, write_text

MARKER = "INCOMPLETE"
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def check_replaceable(out: str | Path, owned: Callable[[str], bool],
                      option: str = "--out") -> Path:
    """``out`` as a folder that may be replaced whole: absent, or a real folder (no
    symlink) holding only entries ``owned`` accepts (what the command itself writes), so
    that ``--out .`` or ``--out ~`` can never delete a user's files."""
    out = check_out_dir(out, option)
    if not out.is_dir():
        return out
    here = Path.cwd().resolve()
    if out.resolve() == here or out.resolve() in here.parents:
        raise InputError(f"{option} {str(out)!r} holds the current folder; it is replaced "
                         "whole, so give a folder of its own")
    foreign = sorted(p.name for p in out.iterdir() if not owned(p.name))
    if foreign:
        raise InputError(f"{option} {str(out)!r} holds {foreign[0]!r}, which this command "
                         "did not write; the folder is replaced whole, so give a new or empty "
                         "one")
    return out


@contextmanager
def staged_folder(out: str | Path, who: str = "evalstop") -> Iterator[Path]:
    """Yield a fresh folder to write into; on success it becomes ``out``. Check ``out``
    with ``check_replaceable`` first."""
    out = Path(os.path.abspath(out))
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(out)
    stage = out.parent / f"{out.name}.incomplete-{secrets.token_hex(4)}"
    try:
        stage.mkdir()
    except OSError as exc:  # name the folder asked for, not the staging one beside it
        raise InputError(f"{out}: cannot create a folder there ({exc.strerror})") from None
    try:
        write_text(stage / MARKER, f"pid {os.getpid()}\n{who} is writing this folder; it "
                   f"replaces {out.name} when complete. If no such process runs, the run was "
                   "killed: delete this folder.\n")
        yield stage
        _swap_in(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    (out / MARKER).unlink(missing_ok=True)  # the swap is done: out is complete
    shutil.rmtree(stage, ignore_errors=True)  # now the old results (if any)


def _swap_in(stage: Path, out: Path) -> None:
    """``stage`` becomes ``out``; the old ``out`` (if any) ends up at ``stage``."""
    if not out.exists():
        os.rename(stage, out)
        return
    if _exchange(stage, out):
        return
    # Two renames: for a moment there is no ``out``, never a mixed one.
    aside = out.parent / f"{out.name}.old-{secrets.token_hex(4)}"
    os.rename(out, aside)
    try:
        os.rename(stage, out)
    except BaseException:
        os.rename(aside, out)
        raise
    os.rename(aside, stage)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc < 2.28, musl
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EXDEV):
        return False  # e.g. a file system without RENAME_EXCHANGE
    raise OSError(err, os.strerror(err), str(b))


def _remove_stale(out: Path) -> None:
    """Delete ``<out>.incomplete-*`` folders whose writer no longer runs."""
    pattern = re.compile(re.escape(out.name) + r"\.incomplete-[0-9a-f]{8}")
    for p in out.parent.iterdir():
        if not pattern.fullmatch(p.name) or p.is_symlink() or not p.is_dir():
            continue
        try:
            pid = int((p / MARKER).read_text(encoding="utf-8").split()[1])
        except (OSError, ValueError, IndexError, UnicodeDecodeError):
            continue  # not ours to judge: left alone
        if not _running(pid):
            shutil.rmtree(p, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
