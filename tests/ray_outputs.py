"""Compare two output folders of ``reproduce`` / ``bench-detectors`` byte for byte, except
the few fields that record how long the run took and how it was run."""

from __future__ import annotations

import json
from pathlib import Path

# results.json: "run" holds wall time, worker count and the command line; each study's
# sim_s / task_s are its CPU time. Nothing else may differ.
_RUN_FIELDS = ("sim_s", "task_s")
_MD_TIMING = "Benchmark run time:"


def _results(path: Path) -> dict:
    data = json.loads(path.read_text())
    data.pop("run", None)
    for exp in data.get("experiments", {}).values():
        for key in _RUN_FIELDS:
            exp.pop(key, None)
    return data


def assert_same_outputs(a: Path, b: Path) -> None:
    names = sorted(p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file())
    assert names == sorted(p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file())
    compared = 0
    for name in names:
        fa, fb = a / name, b / name
        if name.endswith(("report.md", "report.html", "timing.json")) or name.endswith(".png"):
            continue  # timings in the prose; figures are drawn from the compared tables
        if name.endswith("results.json"):
            assert _results(fa) == _results(fb), name
        elif name.endswith("detectors.md"):
            la = [x for x in fa.read_text().splitlines() if not x.startswith(_MD_TIMING)]
            lb = [x for x in fb.read_text().splitlines() if not x.startswith(_MD_TIMING)]
            assert la == lb, name
        else:
            assert fa.read_bytes() == fb.read_bytes(), name
        compared += 1
    assert compared >= 3  # the comparison saw the result files, not an empty folder
