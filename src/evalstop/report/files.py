"""Machine-readable results: per experiment, per-seed rows and the summary, as CSV and JSON.
Every file is written atomically (``evalstop.fileio``): an error never leaves half a file.

NaN (an undefined ratio) is written as an empty CSV cell and as JSON ``null``, so both
files load in any tool without a non-standard token.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from evalstop.experiments.aggregate import SUMMARY_COLUMNS
from evalstop.fileio import atomic_write, write_text


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):  # numpy scalar
        return _clean(v.item())
    return v


def write_csv(path: Path, rows: list[dict], columns: list[str] | tuple[str, ...] | None = None) -> Path:
    if columns is None:
        seen: dict[str, None] = {}
        for r in rows:
            for k in r:
                seen.setdefault(k, None)
        columns = list(seen)
    with atomic_write(path, newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if (c := _clean(r.get(k))) is None else c) for k in columns})
    return path


def write_json(path: Path, obj) -> Path:
    def clean(o):
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return _clean(o)

    # Compact: an indent sends json to its pure-Python encoder, and a full run's file is
    # tens of megabytes of rows nobody reads by eye (2.7x slower to write indented).
    text = json.dumps(clean(obj), separators=(",", ":"), allow_nan=False) + "\n"
    return write_text(path, text)


def write_experiment(out_dir: Path, name: str, rows: list[dict], summary: list[dict]) -> list[Path]:
    return [write_csv(out_dir / f"{name}_runs.csv", rows),
            write_csv(out_dir / f"{name}_summary.csv", summary, SUMMARY_COLUMNS)]
