"""Progress: a bar on a terminal, whole lines elsewhere (a CI log), nothing when turned off."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time

import pytest
from tqdm.auto import tqdm

from evalstop import progress
from evalstop.progress import HEARTBEAT_S, ProgressLines, note, progress_bar, stage


class Tty(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_terminal_gets_the_tqdm_bar_and_the_phase_lines():
    tty = Tty()
    bar = progress_bar(total=10, desc="simulating", unit="task", stream=tty)
    try:
        assert isinstance(bar, tqdm)
    finally:
        bar.close()
    assert "simulating" in tty.getvalue().rsplit("\r", 1)[-1]  # left on screen when done
    note("detector benchmark: started", stream=tty)
    # A phase that starts unseen on a terminal looks like a hang.
    assert tty.getvalue().endswith("detector benchmark: started\n")


def test_a_terminal_bar_is_redrawn_while_a_long_task_holds_the_count(monkeypatch):
    monkeypatch.setattr(progress, "TICK_S", 0.05)
    tty = Tty()
    bar = progress_bar(total=2, desc="lab runs", unit="run", stream=tty)
    try:
        drawn = tty.getvalue().count("lab runs")
        time.sleep(0.5)  # no update: a real lab run takes minutes
        assert tty.getvalue().count("lab runs") >= drawn + 3
    finally:
        bar.close()
    after = tty.getvalue()
    time.sleep(0.2)
    assert tty.getvalue() == after  # closed: the ticker stopped


def test_a_stage_in_a_log_says_its_start_steps_heartbeat_and_end():
    out, clock = io.StringIO(), Clock()
    with stage("writing the report", stream=out, clock=clock, tick_s=0.01) as st:
        clock.t = 2.0
        st.step("drawing main (1/2)")
        clock.t = 2.0 + HEARTBEAT_S
        time.sleep(0.2)  # a tick finds a heartbeat due
        clock.t = 40.0
    lines = out.getvalue().splitlines()
    assert lines[0] == "writing the report"
    assert lines[1] == "writing the report: drawing main (1/2), 2 s"
    assert lines[2] == "writing the report: drawing main (1/2) (still working), 32 s"
    assert lines[-1] == "writing the report: done in 40.0 s"
    assert len(lines) == 4 and "\r" not in out.getvalue()


def test_a_stage_on_a_terminal_ticks_in_place_and_ends_with_one_line():
    tty, clock = Tty(), Clock()
    with stage("writing the report", stream=tty, clock=clock, tick_s=0.02) as st:
        st.step("drawing k (2/2)")
        for t in (1, 2, 3):
            clock.t = float(t)
            time.sleep(0.15)
    text = tty.getvalue()
    assert "writing the report: drawing k (2/2), 3 s" in text  # the clock runs on
    assert text.endswith("\r\x1b[Kwriting the report: done in 3.0 s\n")
    assert text.count("\n") == 1


def test_a_failed_stage_says_it_stopped_and_off_is_silent():
    out = io.StringIO()
    with pytest.raises(KeyError), stage("packing", stream=out, tick_s=0.01):
        raise KeyError("x")
    assert out.getvalue().splitlines() == ["packing", "packing: stopped"]
    off = io.StringIO()
    with stage("packing", stream=off, enabled=False) as st:
        st.step("x")
    assert off.getvalue() == ""


def test_a_pipe_gets_lines_and_off_is_silent():
    pipe = io.StringIO()
    assert isinstance(progress_bar(total=3, desc="d", unit="u", stream=pipe), ProgressLines)
    off = io.StringIO()
    bar = progress_bar(total=3, desc="d", unit="u", enabled=False, stream=off)
    bar.update()
    bar.close()
    note("x", enabled=False, stream=off)
    assert off.getvalue() == ""
    closed = io.StringIO()
    closed.close()  # isatty raises on a closed stream: not a terminal, no crash
    assert not isinstance(progress_bar(total=1, desc="d", unit="u", enabled=False,
                                       stream=closed), tqdm)


def test_lines_at_each_tenth_with_count_and_elapsed_time():
    out, clock = io.StringIO(), Clock()
    bar = ProgressLines(total=20, desc="simulating", unit="task", stream=out, clock=clock)
    for _ in range(20):
        clock.t += 1.0
        bar.update()
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # the start and one per tenth
    assert lines[0] == "simulating: 0/20 tasks (0%), 0 s"
    assert lines[1] == "simulating: 2/20 tasks (10%), 2 s"
    assert lines[-1] == "simulating: 20/20 tasks (100%), 20 s"
    assert "\r" not in out.getvalue()


def test_a_slow_stretch_gets_a_heartbeat_line():
    out, clock = io.StringIO(), Clock()
    bar = ProgressLines(total=1000, desc="d", unit="task", stream=out, clock=clock)
    clock.t = HEARTBEAT_S / 2
    bar.update()  # 0.1% after half a heartbeat: nothing to say yet
    assert len(out.getvalue().splitlines()) == 1
    clock.t = HEARTBEAT_S + 1
    bar.update()  # still under a tenth, but a heartbeat has passed
    assert out.getvalue().splitlines()[-1].startswith("d: 2/1000 tasks (0%), 31 s")


def test_resumed_work_counts_what_was_done_before():
    out, clock = io.StringIO(), Clock()
    bar = ProgressLines(total=10, initial=5, desc="lab runs", unit="run", stream=out,
                        clock=clock)
    clock.t = 10.0
    bar.update()
    lines = out.getvalue().splitlines()
    assert lines[0] == "lab runs: 5/10 runs (50%), 0 s"
    assert lines[1] == "lab runs: 6/10 runs (60%), 10 s"
    empty = io.StringIO()
    ProgressLines(total=0, desc="d", unit="task", stream=empty).close()
    assert empty.getvalue() == "d: 0/0 tasks (100%), 0 s\n"


def test_reproduce_into_a_pipe_prints_progress_lines(tmp_path):
    """The CI case: stderr a pipe. The cheapest real run: one study, three seeds."""
    out = tmp_path / "res"
    proc = subprocess.run(
        [sys.executable, "-m", "evalstop", "reproduce", "--quick", "--only", "main",
         "--seeds", "3", "--workers", "1", "--no-detectors", "--out", str(out)],
        check=False, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "simulating: 0/3 tasks (0%), 0 s"
    assert [line.split(" (")[0] for line in lines[1:4]] == [
        "simulating: 1/3 tasks", "simulating: 2/3 tasks", "simulating: 3/3 tasks"]
    assert lines[4] == "writing the report"
    assert lines[-1].startswith("writing the report: done in ")
    assert [line.split(",")[0] for line in lines[5:-1]] == [
        "writing the report: summarising main", "writing the report: drawing main (1/1)",
        "writing the report: writing report.md and report.html"]
    assert "\r" not in proc.stderr  # no bar redrawn in place in a log
    assert proc.stdout.splitlines() == [proc.stdout.strip()]  # one summary line
    assert proc.stdout.startswith(f"report: {out / 'report.html'} (self-contained;")


def test_reproduce_on_a_terminal_is_never_silent_for_long(tmp_path):
    """On a pseudo-terminal, every stage of a small reproduce (studies, detector benchmark
    in another process, report) shows itself, and the screen never sits still for more
    than 5 s; it ends with one line saying where the report is."""
    pty = pytest.importorskip("pty")
    import fcntl
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    # A new pseudo-terminal is 0 columns wide, where tqdm draws an empty bar; a real one
    # has a size.
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    out = tmp_path / "res"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstop", "reproduce", "--quick", "--only", "main",
         "--seeds", "2", "--workers", "2", "--out", str(out)],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    text, gaps, last, t0 = b"", [], time.monotonic(), time.monotonic()
    try:
        while time.monotonic() - t0 < 300:
            ready, _, _ = select.select([master], [], [], 0.25)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            now = time.monotonic()
            gaps.append((now - last, text[-60:]))
            last, text = now, text + data
    finally:
        proc.kill()
        proc.wait()
        os.close(master)
    screen = text.decode(errors="replace")
    assert proc.returncode in (0, -9), screen[-2000:]
    for shown in ("simulating", "detector benchmark: started", "writing the report: drawing main",
                  "writing the report: done in "):
        assert shown in screen, (shown, screen[-2000:])
    longest = max(gaps, key=lambda g: g[0])
    assert longest[0] <= 5.0, f"silent for {longest[0]:.1f} s after {longest[1]!r}"
    final = screen.rstrip().rsplit("\n", 1)[-1]
    assert final.startswith(f"report: {out / 'report.html'}"), final
