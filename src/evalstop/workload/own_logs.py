"""A platform's own finished runs, read from a folder of eval logs in the formats evalstop
reads elsewhere, and labelled by the lab's rule.

One folder (``--logs DIR``) may mix three formats:

* **JSONL eval logs** (``*.jsonl``, ``*.jsonl.gz``; the eval-log format of
  ``evalstop replay`` and ``evalstop watch``): each job of a file is one run, keyed
  ``"<file>:<job>"``, named by its job; its records' ``job_id`` (the scheduler's id) is
  kept, and where they carry ``gpus`` and ``time`` the run's size is known (``log_size``:
  its GPUs and the hours from its first eval to its last);
* **TensorBoard event files** (names holding ``tfevents``; needs ``evalstop[watch]``):
  each folder holding them is one run, keyed and named by its path under DIR (as
  ``evalstop watch --tensorboard`` names runs); the eval is the scalar tag ``metric``;
* **MLflow stores without a server** (what ``mlflow.log_metric`` writes with no tracking
  server; needs ``evalstop[mlflow]``): an SQLite store (``*.db``, MLflow 3's default
  ``mlflow.db``, tracking URI ``sqlite:///…/mlflow.db``), read from a private copy so the
  platform's file is never written (MLflow would create or migrate tables); and a file
  store (an ``mlruns/`` folder, MLflow 2's default, ``file:///…/mlruns``): every folder
  under DIR holding an experiment's ``meta.yaml`` one level down. Both are read with
  MLflow's own client; each run is one run, keyed ``"<store>:<experiment>/<run name>"``,
  named by its run name; the eval is the history of metric ``metric``. Files inside a file
  store are not read as the other formats; an SQLite file that is not an MLflow store is
  skipped and named.

Folders and files are reached through ``integrations.watch.walk`` (never through a link):
a linked file or folder is skipped and named. A run with fewer than ``MIN_EVALS`` evals or
a non-finite one is skipped and named, never guessed at. A file that cannot be read or
parsed, or a folder that cannot be listed, is a ``ValueError`` naming it in one line: the
runs judged must be every run, or the figures say nothing. Labels are the lab's rule on
each complete curve (``evalstop.lab.labels``): a rule's call, not ground truth.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import shutil
import sqlite3
import stat as st_mod
import tempfile
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from evalstop.evallog import parse_record
from evalstop.integrations._extras import require
from evalstop.integrations.watch.records import show
from evalstop.lab.corpus import RunCurve, curves_from_records
from evalstop.lines import bounded_lines
from evalstop.progress import note, progress_bar
from evalstop.workload.shape_stats import MIN_EVALS

FORMATS = ("jsonl", "tensorboard", "mlflow")
MAX_EVENTS_PER_READ = 100_000
MAX_META_BYTES = 64 * 1024  # an experiment's meta.yaml is a few hundred bytes


@dataclass
class OwnRuns:
    """Runs read from a folder: ``curves`` and ``labels`` by key; each key's ``name`` (its
    job, folder or MLflow run name: what a Slurm export is matched on), ``source`` (its
    file, folder or store under the root) and ``format``; ``skipped``: one line per run or
    file left out, saying why."""

    curves: dict[str, RunCurve] = field(default_factory=dict)
    labels: dict = field(default_factory=dict)
    name: dict[str, str] = field(default_factory=dict)
    job_id: dict[str, str] = field(default_factory=dict)  # the scheduler's, where logged
    log_size: dict[str, tuple[float, float]] = field(default_factory=dict)  # (GPUs, hours)
    source: dict[str, str] = field(default_factory=dict)
    format: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Runs read per format."""
        return {f: sum(v == f for v in self.format.values()) for f in FORMATS}


def read_own_runs(folder: str | Path, *, metric: str = "eval",
                  progress: bool = False) -> OwnRuns:
    """Every run under ``folder`` in any of the formats (see the module doc), labelled.
    ValueError: not a folder, no log in it, or a file or folder that cannot be read."""
    from evalstop.integrations.watch import walk

    root = Path(folder)
    if not root.is_dir() or root.is_symlink():
        raise ValueError(f"--logs {str(folder)!r} is not a folder")
    if not isinstance(metric, str) or not metric:
        raise ValueError(f"--metric must name the eval metric, got {metric!r}")
    listing = walk.walk(str(root))
    if listing.unreadable:
        rel, exc = min(listing.unreadable.items())
        raise ValueError(f"--logs: cannot list {rel or str(root)!r} ({walk.describe(exc)})")
    out = OwnRuns()
    out.skipped += [f"{rel!r}: a link to a folder; not followed" for rel in listing.links]
    out.skipped += [f"{rel!r}: more than {walk.MAX_DEPTH} folders deep; not read"
                    for rel in listing.too_deep]
    stores = _mlflow_stores(str(root), listing)
    jsonl, events, dbs = [], {}, []
    for e in listing.entries:
        if any(e.rel.startswith(s + "/") if s else True for s in stores):
            continue
        is_jsonl = e.name.endswith((".jsonl", ".jsonl.gz"))
        is_db = e.name.endswith(".db")
        if not (is_jsonl or is_db or "tfevents" in e.name):
            continue
        if not st_mod.S_ISREG(e.stat.st_mode):
            out.skipped.append(f"{e.rel!r}: not a regular file (a link, a FIFO); not read")
        elif is_jsonl:
            jsonl.append(e.rel)
        elif is_db:
            dbs.append(e.rel)
        else:
            events.setdefault(e.rel.rpartition("/")[0], []).append(e.rel)
    if not (jsonl or events or stores or dbs):
        raise ValueError(f"--logs {str(folder)!r} holds no eval log (*.jsonl, *.jsonl.gz, "
                         "TensorBoard event files, an MLflow store)")
    bar = progress_bar(total=len(jsonl) + len(events) + len(stores) + len(dbs),
                       desc="reading logs", unit="source", enabled=progress)
    try:
        if events:
            require("tensorboard.compat.proto.event_pb2", extra="watch",
                    what="evalstop reproduce --logs (TensorBoard event files)")
        for rel in jsonl:
            curves, jobs = _jsonl_curves(str(root), rel, metric)
            for job, c in curves.items():
                key = f"{rel}:{job}"
                if _take(out, key, job, rel, "jsonl", c):
                    job_id, size = jobs[job]
                    if job_id is not None:
                        out.job_id[key] = job_id
                    if size is not None:
                        out.log_size[key] = size
            bar.update()
        for run_dir, files in sorted(events.items()):
            name = run_dir or root.name
            _take(out, run_dir or ".", name, run_dir or ".", "tensorboard",
                  _tensorboard_curve(str(root), name, sorted(files), metric))
            bar.update()
        for store in stores:
            uri = (root / store if store else root).resolve().as_uri()
            with _file_store_allowed():
                got = _mlflow_curves(store or root.name, uri, metric, out.skipped,
                                     progress=progress)
            for exp_run, c in got:
                _take(out, f"{store or '.'}:{exp_run}", c.run_id, store or ".", "mlflow", c)
            bar.update()
        for rel in dbs:
            with _sqlite_copy(str(root), rel) as copy:
                got = ([] if copy is None else
                       _mlflow_curves(rel, f"sqlite:///{copy}", metric, out.skipped,
                                      upgrade=True, progress=progress))
            if copy is None:
                out.skipped.append(f"{rel!r}: not an MLflow SQLite store; not read")
                bar.update()
                continue
            for exp_run, c in got:
                _take(out, f"{rel}:{exp_run}", c.run_id, rel, "mlflow", c)
            bar.update()
    except ImportError as exc:  # an extra not installed: one line naming it
        raise ValueError(str(exc).rsplit(" (", 1)[0]) from None
    finally:
        bar.close()
    return out


def _take(out: OwnRuns, key: str, name: str, source: str, fmt: str, c: RunCurve) -> bool:
    from evalstop.lab.labels import label_curve

    if len(c) < MIN_EVALS or not np.all(np.isfinite(c.eval)):
        out.skipped.append(f"{key!r}: fewer than {MIN_EVALS} evals, or a non-finite one")
        return False
    out.curves[key], out.labels[key] = c, label_curve(c.step, c.eval)
    out.name[key], out.source[key], out.format[key] = name, source, fmt
    return True


def _open(root: str, rel: str) -> int:
    from evalstop.integrations.watch import walk

    try:
        return walk.open_file(root, rel)
    except OSError as exc:
        raise ValueError(f"--logs: cannot read {rel!r} ({walk.describe(exc)})") from None


def _jsonl_curves(root: str, rel: str, metric: str) -> tuple[dict[str, RunCurve], dict]:
    """The file's curves by job, and per job ``(job_id or None, (GPUs, hours) or None)``:
    the last ``job_id`` logged; a size where some record gives ``gpus`` (the largest) and
    two give ``time`` (the span between the first and the last)."""
    fd = _open(root, rel)
    raw = os.fdopen(fd, "rb")
    try:
        fh = io.TextIOWrapper(gzip.GzipFile(fileobj=raw) if rel.endswith(".gz") else raw,
                              encoding="utf-8")
        records = [parse_record(line, f"{show(rel)}:{i}", metric)
                   for i, line in enumerate(bounded_lines(fh, rel), 1) if line.strip()]
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"--logs: cannot read {rel!r} ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'truncated'})") from None
    finally:
        raw.close()
    try:
        curves = curves_from_records(records)
    except ValueError as exc:
        raise ValueError(f"--logs: {rel!r}: {exc}") from None
    seen: dict[str, dict] = {}
    for r in records:
        d = seen.setdefault(r.job, {"job_id": None, "gpus": None, "times": []})
        d["job_id"] = r.job_id if r.job_id is not None else d["job_id"]
        if r.gpus is not None:
            d["gpus"] = max(r.gpus, d["gpus"] or 0.0)
        if r.time is not None and np.isfinite(r.time):
            d["times"].append(r.time)
    jobs = {}
    for job, d in seen.items():
        span = (max(d["times"]) - min(d["times"])) / 3600.0 if len(d["times"]) > 1 else 0.0
        jobs[job] = (d["job_id"], (d["gpus"], span) if d["gpus"] and span > 0 else None)
    return curves, jobs


def _curve(name: str, points: dict[int, float]) -> RunCurve:
    steps = sorted(points)
    nan = np.full(len(steps), np.nan)
    return RunCurve(name, np.array(steps, np.int64), np.array([points[s] for s in steps]),
                    nan, nan.copy(), nan.copy())


def _tensorboard_curve(root: str, name: str, files: list[str], metric: str) -> RunCurve:
    """The run's ``metric`` scalars over its event files, in name order (a later file's
    value wins a step logged twice: the writer restarted)."""
    from evalstop.integrations.watch.tensorboard import scalar_of
    from evalstop.integrations.watch.tfrecord import Corrupt, read_events

    points: dict[int, float] = {}
    for rel in files:
        fd = _open(root, rel)
        try:
            pos = 0
            while True:
                got = read_events(fd, pos, max_events=MAX_EVENTS_PER_READ,
                                  max_bytes=64 << 20)
                for ev in got.events:
                    if not ev.HasField("summary"):
                        continue
                    for v in ev.summary.value:
                        if v.tag == metric:
                            try:
                                points[int(ev.step)] = scalar_of(v)
                            except ValueError as exc:
                                raise ValueError(f"--logs: {rel!r} step {ev.step}: "
                                                 f"{exc}") from None
                if got.pos == pos:
                    break
                pos = got.pos
        except Corrupt as exc:
            raise ValueError(f"--logs: {rel!r}: corrupt event file ({exc})") from None
        except OSError as exc:
            raise ValueError(f"--logs: cannot read {rel!r} ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
    return _curve(name, points)


def _mlflow_stores(root: str, listing) -> list[str]:
    """Folders (under ``root``, ``""`` for itself) that are MLflow file stores: they hold an
    experiment folder whose ``meta.yaml`` names an ``experiment_id`` and an
    ``artifact_location``."""
    stores = set()
    for e in listing.entries:
        parts = e.rel.split("/")
        if e.name != "meta.yaml" or len(parts) < 2 or not st_mod.S_ISREG(e.stat.st_mode):
            continue
        store = "/".join(parts[:-2])
        if store in stores or e.stat.st_size > MAX_META_BYTES:
            continue
        fd = _open(root, e.rel)
        with os.fdopen(fd, "rb") as fh:
            text = fh.read(MAX_META_BYTES).decode("utf-8", "replace")
        keys = {line.split(":", 1)[0].strip() for line in text.splitlines() if ":" in line}
        if {"experiment_id", "artifact_location"} <= keys and "run_id" not in keys:
            stores.add(store)
    # A store inside another is read as part of it.
    return sorted(s for s in stores
                  if not any(o != s and (o == "" or s.startswith(o + "/")) for o in stores))


@contextlib.contextmanager
def _file_store_allowed():
    """MLflow 3 refuses to open a file store unless told it may (the store is in
    maintenance mode); reading one is what a platform with MLflow 2 runs needs."""
    old = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = old


MLFLOW_TABLES = {"experiments", "runs", "metrics", "alembic_version"}
SQLITE_MAGIC = b"SQLite format 3\x00"


@contextlib.contextmanager
def _sqlite_copy(root: str, rel: str):
    """A private copy of the SQLite file ``rel`` when it is an MLflow store (its tables
    are there), else None; the copy is removed after."""
    fd = _open(root, rel)
    with os.fdopen(fd, "rb") as src, tempfile.TemporaryDirectory(prefix="evalstop-mlflow-") as tmp:
        copy = os.path.join(tmp, "mlflow.db")
        try:
            is_sqlite = src.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
            if is_sqlite:  # anything else is not copied
                src.seek(0)
                with open(copy, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        except OSError as exc:
            raise ValueError(f"--logs: cannot read {rel!r} ({exc.strerror or exc})") from None
        tables = set()
        if is_sqlite:
            try:
                con = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
                try:
                    tables = {r[0] for r in con.execute(
                        "SELECT name FROM sqlite_master WHERE type='table'")}
                finally:
                    con.close()
            except sqlite3.Error:
                pass  # a damaged SQLite file: not an MLflow store we can read
        yield copy if MLFLOW_TABLES <= tables else None


def _upgrade_copy(uri: str) -> None:
    """Bring a private copy of an older MLflow's SQLite store to this MLflow's schema
    (MLflow's client refuses an out-of-date one); the platform's own file is not touched."""
    import sqlalchemy
    from mlflow.store.db import utils

    engine = sqlalchemy.create_engine(uri)
    quiet = [logging.getLogger(n) for n in ("mlflow", "alembic")]
    levels = [q.level for q in quiet]
    try:
        utils._verify_schema(engine)
    except Exception:  # noqa: BLE001 - MLflow's "out-of-date database schema"
        for q in quiet:  # its "Updating database tables" is about our copy, not theirs
            q.setLevel(logging.WARNING)
        utils._upgrade_db(engine)
    finally:
        for q, level in zip(quiet, levels, strict=True):
            q.setLevel(level)
        engine.dispose()


def _mlflow_curves(store: str, uri: str, metric: str, skipped: list[str], *,
                   upgrade: bool = False, progress: bool = False) -> list:
    """``(experiment/run name, curve)`` of every run of every experiment of the store at
    ``uri`` logging ``metric``, read with MLflow's own client (``upgrade``: the store is a
    private SQLite copy, migrated first when older); a run whose name cannot be shown
    (control characters, a leading '-') is skipped and named."""
    from evalstop.integrations.watch.records import name_problem

    mlflow = require("mlflow", what="evalstop reproduce --logs (an MLflow store)",
                     extra="mlflow")
    out = []
    with warnings.catch_warnings():  # MLflow warns that file stores are deprecated
        warnings.simplefilter("ignore")
        try:
            if upgrade:
                _upgrade_copy(uri)
            client = mlflow.MlflowClient(tracking_uri=uri)
            runs = [(exp, run) for exp in sorted(_paged(client.search_experiments),
                                                 key=lambda x: str(x.experiment_id))
                    for run in _paged(client.search_runs, experiment_ids=[exp.experiment_id],
                                      order_by=["attributes.start_time ASC"])]
            note(f"MLflow store {show(store)!r}: reading {len(runs)} runs", enabled=progress)
            for exp, run in runs:
                name = run.info.run_name or run.info.run_id
                where = f"{show(str(exp.name))}/{show(name)}"
                problem = (name_problem(str(exp.name), "experiment name")
                           or name_problem(name, "run name"))
                if problem is None and metric not in run.data.metrics:
                    problem = f"no metric {show(metric)!r}"
                if problem is not None:
                    skipped.append(f"MLflow run {where!r}: {problem}; not read")
                    continue
                points: dict[int, float] = {}
                for m in sorted(client.get_metric_history(run.info.run_id, metric),
                                key=lambda m: (m.step, m.timestamp)):
                    points[int(m.step)] = float(m.value)
                out.append((f"{exp.name}/{name}", _curve(name, points)))
        except Exception as exc:  # noqa: BLE001 - MLflow's MlflowException and kin
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ValueError(f"--logs: cannot read the MLflow store {store!r} "
                             f"({show(first, 200)})") from None
    return out


def _paged(call, **kwargs) -> list:
    out, token = [], None
    while True:
        page = call(**kwargs, max_results=1000, page_token=token)
        out.extend(page)
        token = getattr(page, "token", None)
        if not token:
            return out
