"""benchmarks/profile_twin.py's options: ``--scale`` is explained and a bad one is a
one-line error before anything is compiled or profiled (perf itself is not needed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "profile_twin.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=60)


def test_help_explains_scale():
    res = _run("--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())  # (argparse wraps to the terminal's width)
    assert "--scale" in text and "K times the GPUs" in text


def test_scale_below_one_is_a_one_line_error():
    res = _run("--scale", "0")
    assert res.returncode == 2
    assert "--scale must be >= 1, got 0" in res.stderr
    assert "Traceback" not in res.stderr
