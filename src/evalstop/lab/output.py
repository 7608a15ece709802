"""One run's files: ``<id>.jsonl`` (eval log), ``<id>.label.json``, ``<id>.meta.json``.

Each is written atomically, the metadata last, so a run is complete exactly when its
metadata file exists (``is_complete``): an interrupted corpus resumes by skipping those.
"""

from __future__ import annotations

import json
from pathlib import Path

from evalstop.fileio import atomic_write
from evalstop.lab.labels import Label, label_curve


def paths(out_dir: str | Path, run_id: str) -> dict[str, Path]:
    d = Path(out_dir)
    return {"log": d / f"{run_id}.jsonl", "label": d / f"{run_id}.label.json",
            "meta": d / f"{run_id}.meta.json"}


def is_complete(out_dir: str | Path, run_id: str) -> bool:
    return all(p.is_file() for p in paths(out_dir, run_id).values())


def write_run(out_dir: str | Path, run_id: str, records: list[dict], meta: dict) -> Label:
    """Write a finished run; returns its label (computed here, from the whole curve)."""
    p = paths(out_dir, run_id)
    label = label_curve([r["step"] for r in records], [r["eval"] for r in records])
    with atomic_write(p["log"]) as fh:
        for r in records:
            fh.write(json.dumps(r) + "\n")
    with atomic_write(p["label"]) as fh:
        json.dump({"run_id": run_id, **label.to_row()}, fh, indent=1)
    with atomic_write(p["meta"]) as fh:  # last: its presence marks the run complete
        json.dump(meta, fh, indent=1)
    return label


def read_run_label(out_dir: str | Path, run_id: str) -> Label:
    d = json.loads(paths(out_dir, run_id)["label"].read_text(encoding="utf-8"))
    d.pop("run_id", None)
    return Label(**d)
