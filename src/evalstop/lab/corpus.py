"""The lab corpus on disk: runs' eval logs, their labels, their metadata. numpy only.

Shipped files (``evalstop/data``; the trigram world's are named ``lab2_*``):

- ``lab_corpus.jsonl.gz``: every run's eval records in the eval-log format
  (docs/simulator.md, "The eval log"; ``job`` = run id; ``eval`` = gold score; ``proxy``,
  ``loss``, ``progress``);
- ``lab_labels.csv``: one row per run, the hacking label and the numbers behind it
  (``evalstop.lab.labels``), kept apart from the log so detectors never see it;
- ``lab_corpus.json``: the label rule, the grid, the command that regenerates the corpus,
  and each run's metadata (config, seed, wall time, KL and entropy per eval).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

import numpy as np

from evalstop.evallog import parse_record
from evalstop.fileio import atomic_write
from evalstop.lab.labels import Label
from evalstop.lines import bounded_lines

CORPUS_FILE = "lab_corpus.jsonl.gz"
LABELS_FILE = "lab_labels.csv"
META_FILE = "lab_corpus.json"


def corpus_files(world: str = "bigram") -> tuple[str, str, str]:
    """``(corpus, labels, metadata)`` file names of ``world``'s corpus: ``lab_*`` for the
    first world, ``lab2_*`` for the trigram world (``evalstop.lab.worlds``)."""
    from evalstop.lab.worlds import world_spec

    prefix = world_spec(world).file_prefix
    return f"{prefix}_corpus.jsonl.gz", f"{prefix}_labels.csv", f"{prefix}_corpus.json"


@dataclass(frozen=True)
class RunCurve:
    """One run's eval sequence, in step order."""

    run_id: str
    step: np.ndarray  # int64
    eval: np.ndarray  # gold score of fresh samples
    proxy: np.ndarray
    loss: np.ndarray
    progress: np.ndarray  # step / total RL steps, 0..1

    def __len__(self) -> int:
        return len(self.step)


def curves_from_records(records) -> dict[str, RunCurve]:
    """Group ``EvalRecord``s by job, each sorted by step; jobs in order of first
    appearance. A step logged twice for one job is an error."""
    per: dict[str, list] = {}
    for r in records:
        per.setdefault(r.job, []).append(r)
    out = {}
    for job, recs in per.items():
        recs.sort(key=lambda r: r.step)
        steps = np.array([r.step for r in recs], dtype=np.int64)
        if np.any(np.diff(steps) == 0):
            raise ValueError(f"run {job!r} logs one step twice")
        out[job] = RunCurve(
            job, steps,
            np.array([r.eval for r in recs], float),
            np.array([_nan(r.proxy) for r in recs], float),
            np.array([_nan(r.loss) for r in recs], float),
            np.array([_nan(r.progress) for r in recs], float),
        )
    return out


def _nan(v):
    return np.nan if v is None else v


def read_curves(path: str | Path) -> dict[str, RunCurve]:
    """Curves from an eval log, plain (``.jsonl``) or gzipped (``.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            records = [parse_record(line, f"{path}:{i}")
                       for i, line in enumerate(bounded_lines(fh, str(path)), 1)
                       if line.strip()]
    except OSError as exc:
        raise OSError(f"cannot read {path}: {exc.strerror or exc}") from None
    return curves_from_records(records)


_LABEL_FIELDS = [f.name for f in fields(Label)]


def write_labels(path: str | Path, labels: dict[str, Label]) -> None:
    with atomic_write(path, newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["run_id", *_LABEL_FIELDS])
        w.writeheader()
        for run_id, lab in labels.items():
            row = lab.to_row()
            w.writerow({"run_id": run_id, **{k: (f"{v:.6f}" if isinstance(v, float) else
                                                 int(v) if isinstance(v, bool) else v)
                                             for k, v in row.items()}})


def read_labels(path: str | Path) -> dict[str, Label]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise OSError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_labels(text)


def parse_labels(text: str) -> dict[str, Label]:
    """Labels from the text of a ``lab_labels.csv``."""
    out = {}
    for row in csv.DictReader(io.StringIO(text)):
        try:
            out[row["run_id"]] = Label(
                hacking=row["hacking"] in ("1", "True", "true"),
                peak_index=int(row["peak_index"]), peak_step=int(row["peak_step"]),
                **{k: float(row[k]) for k in ("start", "peak", "end", "gain", "drop")})
        except (KeyError, ValueError) as exc:
            raise ValueError(f"bad label row {row!r}: {exc}") from None
    return out


def _data_file(name: str):
    return resources.files("evalstop") / "data" / name


def load_corpus(path: str | Path | None = None, *, world: str = "bigram",
                ) -> tuple[dict[str, RunCurve], dict[str, Label]]:
    """``(curves, labels)`` of ``world``'s corpus in a packed folder, or the shipped one
    when ``path`` is None (``world="trigram"``: the held-out second world). Both dicts are
    keyed by run id, in the same order. No torch. The dense-eval corpora:
    ``evalstop.lab.dense.load_dense_corpus``."""
    return load_files(corpus_files(world), path)


def load_files(files: tuple[str, str, str], path: str | Path | None = None,
               ) -> tuple[dict[str, RunCurve], dict[str, Label]]:
    """``(curves, labels)`` from a corpus' ``(corpus, labels, metadata)`` file names, in
    folder ``path`` or shipped with the package when ``path`` is None."""
    corpus_file, labels_file, _ = files
    if path is None:
        with resources.as_file(_data_file(corpus_file)) as p:
            curves = read_curves(p)
        labels = parse_labels(_data_file(labels_file).read_text(encoding="utf-8"))
    else:
        path = Path(path)
        curves = read_curves(path / corpus_file)
        labels = read_labels(path / labels_file)
    missing = sorted(set(curves) ^ set(labels))
    if missing:
        raise ValueError(f"corpus and labels disagree on run(s) {missing[:5]}")
    return curves, {k: labels[k] for k in curves}


def load_metadata(path: str | Path | None = None, *, world: str = "bigram") -> dict:
    """The corpus' ``lab_corpus.json`` (``lab2_corpus.json`` for the trigram world): rule,
    grid, command, per-run metadata."""
    return load_meta_file(corpus_files(world)[2], path)


def load_meta_file(meta_file: str, path: str | Path | None = None) -> dict:
    src = _data_file(meta_file) if path is None else Path(path) / meta_file
    try:
        return json.loads(src.read_text(encoding="utf-8"))
    except OSError as exc:
        raise OSError(f"cannot read {src}: {exc.strerror or exc}") from None
