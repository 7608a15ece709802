"""Progress: a bar on a terminal, whole lines elsewhere (a CI log), nothing when turned off."""

from __future__ import annotations

import io
import subprocess
import sys

from tqdm.auto import tqdm

from evalstop.progress import HEARTBEAT_S, ProgressLines, note, progress_bar


class Tty(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_a_terminal_gets_the_tqdm_bar_and_no_lines():
    tty = Tty()
    bar = progress_bar(total=10, desc="simulating", unit="task", stream=tty)
    try:
        assert isinstance(bar, tqdm)
    finally:
        bar.close()
    note("report: writing", stream=tty)
    assert "report: writing" not in tty.getvalue()  # the bar says enough there


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
        capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[0] == "simulating: 0/3 tasks (0%), 0 s"
    assert [line.split(" (")[0] for line in lines[1:4]] == [
        "simulating: 1/3 tasks", "simulating: 2/3 tasks", "simulating: 3/3 tasks"]
    assert lines[4:] == ["report: writing tables and figures"]
    assert "\r" not in proc.stderr  # no bar redrawn in place in a log
    assert "report:" in proc.stdout
