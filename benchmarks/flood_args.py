"""The options every flood benchmark of ``evalstop watch`` takes (bench_watch_flood.py,
bench_watch_mlflow.py): each scenario's flood size, measured time and poll interval."""

from __future__ import annotations

import argparse


def add_flood_args(p: argparse.ArgumentParser, scale: float) -> None:
    p.add_argument("--scale", type=float, default=scale, help="flood sizes times this")
    p.add_argument("--seconds", type=float, default=30.0, help="measured seconds each")
    p.add_argument("--interval", type=float, default=1.0, help="poll interval (s)")


def in_own_process(script: str, *args: object) -> dict:
    """``script --_scenario ARGS...`` in a process of its own (its peak RSS is its own):
    the JSON object its last line prints."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, script, "--_scenario", *map(str, args)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])
