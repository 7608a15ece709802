"""Daemons of the testbed: started in the foreground (so the pid is the daemon's own),
recorded in a pid file in the testbed's folder, and stopped by that pid only.

A pid is signalled only while ``/proc/PID`` still names the testbed's folder: a
recorded pid that was reused by another process after a crash is left alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

PIDS = "pids.json"


def _proc_text(pid: int, what: str) -> str:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().replace(b"\0", b" ").decode(
            errors="replace")
    except OSError:
        return ""


def alive(pid: int, marker: str) -> bool:
    """Whether ``pid`` runs and its command line or environment (slurmdbd finds its
    configuration through ``SLURM_CONF``) contains ``marker`` (the folder)."""
    if marker not in _proc_text(pid, "cmdline") and marker not in _proc_text(pid, "environ"):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def start(root: Path, name: str, argv: list[str],
          env: dict | None = None) -> subprocess.Popen:
    """Start ``argv`` in its own session (a terminal's Ctrl-C does not reach it), its
    output in ``root/log/NAME.out``, and record its pid under ``name``."""
    log = root / "log" / f"{name}.out"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=env, cwd=root)
    pids = read_pids(root)
    pids[name] = proc.pid
    (root / PIDS).write_text(json.dumps(pids))
    return proc


def read_pids(root: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads((root / PIDS).read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def stop_all(root: Path, order: list[str], grace_s: float = 10.0) -> list[str]:
    """SIGTERM each recorded daemon in ``order`` (then any other), wait up to ``grace_s``
    for it, SIGKILL it if still there; returns the names that were running."""
    pids = read_pids(root)
    marker = str(root)
    names = [n for n in order if n in pids] + [n for n in pids if n not in order]
    stopped = []
    for name in names:
        pid = pids[name]
        if not alive(pid, marker):
            continue
        stopped.append(name)
        _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while alive(pid, marker) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
        if alive(pid, marker):
            _signal(pid, signal.SIGKILL)
            while alive(pid, marker):
                _reap(pid)
                time.sleep(0.05)
        _reap(pid)
    try:
        (root / PIDS).unlink()
    except FileNotFoundError:
        pass
    return stopped


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def job_processes(root: Path) -> list[int]:
    """The testbed's jobs, as processes: each ``slurmstepd`` that the testbed's slurmd
    started (slurmstepd detaches from slurmd, but keeps its environment, whose
    ``SLURM_CONF`` names this folder's configuration exactly) and every process below it
    (the batch script and its payload), deepest first."""
    conf = f"SLURM_CONF={root}/etc/slurm.conf"
    steps = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _proc_text(int(entry.name), "comm").strip() == "slurmstepd":
            if conf in _proc_text(int(entry.name), "environ").split(" "):
                steps.append(int(entry.name))
    kids, out = _children(), []

    def walk(pid: int) -> None:
        for kid in kids.get(pid, []):
            walk(kid)
        out.append(pid)

    for pid in steps:
        walk(pid)
    return out


def _started(pid: int) -> str | None:
    """The pid's start time (clock ticks since boot): with the pid, a process's identity,
    which a reused pid does not share. None once it ended (or is a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def stop_jobs(root: Path, grace_s: float = 5.0) -> int:
    """SIGTERM every process of the testbed's jobs (``job_processes``), then SIGKILL those
    still there after ``grace_s``; the number of processes that were running."""
    procs = {pid: _started(pid) for pid in job_processes(root)}
    procs = {pid: t for pid, t in procs.items() if t is not None}
    for pid in procs:
        _signal(pid, signal.SIGTERM)

    def left() -> list[int]:
        return [pid for pid, t in procs.items() if _started(pid) == t]

    deadline = time.monotonic() + grace_s
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left():
        _signal(pid, signal.SIGKILL)
    return len(procs)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    # Our own child stays a zombie until waited for.
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
