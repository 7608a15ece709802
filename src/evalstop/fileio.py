"""Writing result files so that a failure never leaves a half-written file behind."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", **kwargs):
    """Write to a temporary file beside ``path`` and move it into place only on success,
    so an earlier file at ``path`` survives any error."""
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise OSError(f"folder {path.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
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
