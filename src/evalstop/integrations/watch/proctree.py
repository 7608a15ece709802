"""Find and kill every process a stop action started, however it detached.

Killing the action's process group is not enough: a child started with ``setsid`` (or
``nohup ... &`` in a new session, a daemonising tool) leaves the group and the session,
keeps running after a timeout, and may hold the output pipe open. Each action therefore
runs with an environment marker of its own (``EVALSTOP_ACTION=<random token>``), which
every descendant inherits whatever session or group it moves to; on a timeout the
controller kills the action's process group, then every process that carries the marker
or sits in the action's session, scanning ``/proc`` until none is left.

Why not a cgroup: that needs write access to a delegated cgroup subtree, which an
unprivileged service or a container usually lacks. Why not ``psutil``: it is not a
dependency, and ``/proc`` is all that this needs (Linux). A descendant that clears its
own environment *and* leaves the session (``setsid env -i ...``) is out of reach; such a
command is the action template's author's, not a tenant's.
"""

from __future__ import annotations

import os
import secrets
import signal
import time

MARKER = "EVALSTOP_ACTION"
SWEEPS = 20  # rounds of scan-and-kill: a process forking while it is killed comes back once


def new_token() -> str:
    return secrets.token_hex(12)


def marked_env(token: str) -> dict[str, str]:
    """The controller's environment plus the action's marker."""
    return {**os.environ, MARKER: token}


def _session(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    # comm (field 2) may hold spaces and ')': the fields after it start past the last ')'.
    fields = stat[stat.rfind(b")") + 2:].split()
    if len(fields) < 4 or fields[0] in (b"Z", b"X"):  # dead already, awaiting its reaper
        return None
    return int(fields[3])  # fields: state ppid pgrp session


def _marked(pid: str, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return entry in fh.read().split(b"\0")
    except OSError:  # gone, or not ours to read (then not ours to kill either)
        return False


def members(session: int, token: str) -> list[int]:
    """Pids (not this process) in ``session`` or carrying the marker ``token``."""
    entry = f"{MARKER}={token}".encode()
    me = os.getpid()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == me:
            continue
        sid = _session(pid)
        if sid is not None and (sid == session or _marked(pid, entry)):
            found.append(int(pid))
    return found


def kill_tree(leader: int, token: str) -> int:
    """SIGKILL ``leader``'s process group, then every process of its session or with
    its marker, until none is left (at most SWEEPS rounds); returns how many were hit."""
    hit = 0
    try:
        os.killpg(leader, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(SWEEPS):
        left = members(leader, token)
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
                hit += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    return hit
