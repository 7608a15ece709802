"""examples/grpo_stop.py, the README tour's TRL example, shows a stop: the held-out score
rises then falls while the proxy keeps rising, and `default` stops the run at a step
after its best, keeping the best checkpoint (about 20 CPU seconds)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("trl")
pytest.importorskip("datasets")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "grpo_stop.py"
ROW = re.compile(r"^\s*(\d+)\s+([-\d.]+)\s+([-\d.]+)(?:\s+<- (best|stop))?$")


def test_the_example_stops_a_hacking_run_at_its_best_checkpoint(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, str(EXAMPLE), str(out)], capture_output=True,
                       text=True, timeout=600, check=False,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    rows = [ROW.match(line) for line in lines[1:] if ROW.match(line)]
    steps = [int(m.group(1)) for m in rows]
    gold = {int(m.group(1)): float(m.group(2)) for m in rows}
    proxy = [float(m.group(3)) for m in rows]
    best = next(int(m.group(1)) for m in rows if m.group(4) == "best")
    stop = next(int(m.group(1)) for m in rows if m.group(4) == "stop")
    assert steps[0] == 0 and stop == steps[-1] < 60 and 0 < best < stop
    # the held-out score rose to its best, then fell; the proxy kept rising
    assert gold[best] > gold[0] and gold[stop] < gold[best] and gold[best] == max(gold.values())
    assert proxy[-1] > proxy[len(proxy) // 2] > proxy[0]
    assert lines[-2].startswith(f"stopped by default at step {stop} of 60: the level is ")
    assert lines[-1] == f"best checkpoint: {out}/checkpoint-{best}"
    assert (out / f"checkpoint-{best}").is_dir()
    assert "Traceback" not in r.stderr
