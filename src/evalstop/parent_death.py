"""Worker processes that die with their parent.

A killed ``evalstop reproduce`` or ``lab corpus`` (SIGKILL, or SIGTERM/SIGINT sent to the
parent alone) used to leave its pool's workers running, each finishing its task with no
one to read the result. ``die_with_parent`` is a pool initializer: on Linux the kernel
kills the worker when its parent exits (``prctl(PR_SET_PDEATHSIG, SIGKILL)``), and on every
platform a watchdog thread exits the worker once its parent is gone (``os.getppid()``
changes when an orphan is re-parented), for systems without prctl and as a fallback.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_S = 0.5  # how often the watchdog looks; a worker outlives its parent at most this long


def die_with_parent(parent_pid: int) -> None:
    """Initializer for a worker process whose parent is ``parent_pid``."""
    # A handler inherited by fork (the CLI turns SIGTERM into an interrupt) would let a
    # worker catch the signal meant to end it.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0))
        except (OSError, AttributeError):  # no libc prctl: the watchdog still works
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="evalstop-parent-watchdog",
                     daemon=True).start()


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(WATCH_S)
        if os.getppid() != parent_pid:
            os._exit(1)
