"""An action's timeout kills every process it started: its group, its session, and a
child that left both with setsid (found by the marker in its environment)."""

from __future__ import annotations

import os
import shutil
import signal
import time

import pytest

from evalstop.integrations.watch import ShellAction

pytestmark = pytest.mark.skipif(shutil.which("setsid") is None or not os.path.isdir("/proc"),
                                reason="needs setsid and /proc")


def running(tag: str) -> list[int]:
    """Pids whose command line holds ``tag``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if tag.encode() in fh.read():
                    found.append(int(pid))
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    found.pop()
        except (OSError, IndexError):
            continue
    return found


def gone_within(tag: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while running(tag) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(tag)


@pytest.mark.parametrize("how", ["setsid sleep {t} &", "setsid sh -c 'sleep {t}' &",
                                 "sleep {t} &", "(setsid sleep {t} &); sleep {t}"])
def test_a_timeout_kills_every_process_the_action_started(how):
    tag = f"{1000 + (time.monotonic_ns() % 10**6) / 10**6:.6f}"  # sleep's argument, unique
    act = ShellAction("true", timeout=0.5)
    try:
        res = act.run(how.format(t=tag) + " sleep 30")
        assert res.rc == 124 and "every process it started was killed" in res.output
        assert gone_within(tag, 3), f"left running: {running(tag)}"
    finally:
        for pid in running(tag):
            os.kill(pid, signal.SIGKILL)


def test_members_finds_a_marked_process_outside_the_session():
    import subprocess

    from evalstop.integrations.watch.proctree import MARKER, members, new_token

    token = new_token()
    proc = subprocess.Popen(["setsid", "sleep", "30"], env={**os.environ, MARKER: token})
    try:
        deadline = time.monotonic() + 5
        while proc.pid not in members(-1, token) and time.monotonic() < deadline:
            time.sleep(0.02)  # until setsid has exec'd sleep
        assert proc.pid in members(-1, token)
        assert proc.pid not in members(-1, new_token())
    finally:
        proc.kill()
        proc.wait()
