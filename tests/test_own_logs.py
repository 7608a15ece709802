"""A platform's own runs: every log format read (files written by each format's own
writer), labelled by the lab's rule; bad folders and files are one-line errors."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sqlite3

import numpy as np
import pytest

from evalstop.workload.own_logs import read_own_runs

N = 40  # evals a run


def curve(hacking: bool, rng: np.random.Generator) -> np.ndarray:
    """A rise to 30% of the run, then a plateau or (hacking) a fall below the start."""
    t = np.linspace(0.0, 1.0, N)
    c = 0.5 + 0.3 * np.minimum(t / 0.3, 1.0)
    if hacking:
        c -= np.where(t > 0.3, 0.6 * (t - 0.3), 0.0)
    return c + rng.normal(0.0, 0.01, N)


def write_jsonl(path, runs: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"job": job, "step": 10 * s, "eval": float(v)}) + "\n"
                            for job, c in runs.items() for s, v in enumerate(c)))


def write_tensorboard(run_dir, values, tag="eval") -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(run_dir))
    for s, v in enumerate(values):
        w.add_event(event_pb2.Event(step=10 * s, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(v))])))
    w.close()


def write_mlflow(uri: str, experiment: str, runs: dict[str, np.ndarray]) -> None:
    mlflow = pytest.importorskip("mlflow")
    from mlflow.entities import Metric

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.create_experiment(experiment)
    for name, c in runs.items():
        run = client.create_run(exp, run_name=name)
        client.log_batch(run.info.run_id, metrics=[
            Metric("eval", float(v), 1000 + s, 10 * s) for s, v in enumerate(c)])
        client.set_terminated(run.info.run_id)


@pytest.fixture
def rng():
    return np.random.default_rng(44)


def test_jsonl_runs_are_read_and_labelled(tmp_path, rng):
    write_jsonl(tmp_path / "acme" / "runs.jsonl", {"bad": curve(True, rng),
                                                   "good": curve(False, rng)})
    own = read_own_runs(tmp_path)
    assert own.counts() == {"jsonl": 2, "tensorboard": 0, "mlflow": 0}
    assert own.labels["acme/runs.jsonl:bad"].hacking
    assert not own.labels["acme/runs.jsonl:good"].hacking
    assert own.name["acme/runs.jsonl:bad"] == "bad"
    assert own.source["acme/runs.jsonl:bad"] == "acme/runs.jsonl"


def test_gzipped_jsonl_is_read(tmp_path, rng):
    write_jsonl(tmp_path / "plain.jsonl", {"r": curve(True, rng)})
    (tmp_path / "runs.jsonl.gz").write_bytes(gzip.compress((tmp_path / "plain.jsonl")
                                                           .read_bytes()))
    (tmp_path / "plain.jsonl").unlink()
    own = read_own_runs(tmp_path)
    assert list(own.curves) == ["runs.jsonl.gz:r"] and own.labels["runs.jsonl.gz:r"].hacking


def test_tensorboard_runs_are_read_by_folder_and_tag(tmp_path, rng):
    bad, good = curve(True, rng), curve(False, rng)
    write_tensorboard(tmp_path / "tb" / "bad", bad, tag="eval/score")
    write_tensorboard(tmp_path / "tb" / "good", good, tag="eval/score")
    own = read_own_runs(tmp_path, metric="eval/score")
    assert own.counts()["tensorboard"] == 2
    assert own.labels["tb/bad"].hacking and not own.labels["tb/good"].hacking
    np.testing.assert_allclose(own.curves["tb/bad"].eval, bad, rtol=1e-6)  # float32 on disk
    np.testing.assert_array_equal(own.curves["tb/bad"].step, 10 * np.arange(N))
    # Another tag: the runs hold no eval, so they are skipped and named, never guessed at.
    other = read_own_runs(tmp_path, metric="loss")
    assert not other.curves and len(other.skipped) == 2


def test_an_mlflow_file_store_is_read_with_mlflows_client(tmp_path, rng, monkeypatch):
    store = tmp_path / "logs" / "mlruns"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    write_mlflow(store.as_uri(), "acme", {"bad": curve(True, rng), "good": curve(False, rng)})
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")  # the reader needs no setting
    own = read_own_runs(tmp_path / "logs")
    assert own.counts() == {"jsonl": 0, "tensorboard": 0, "mlflow": 2}
    assert own.labels["mlruns:acme/bad"].hacking and not own.labels["mlruns:acme/good"].hacking
    assert own.name["mlruns:acme/bad"] == "bad"
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ
    other = read_own_runs(tmp_path / "logs", metric="reward")  # runs without it: named
    assert not other.curves and sum("no metric 'reward'" in s for s in other.skipped) == 2


def test_an_mlflow_sqlite_store_is_read_and_never_written(tmp_path, rng):
    db = tmp_path / "logs" / "mlflow.db"
    db.parent.mkdir()
    write_mlflow(f"sqlite:///{db}", "acme", {"bad": curve(True, rng)})
    (tmp_path / "logs" / "other.db").write_bytes(b"not a database at all")
    con = sqlite3.connect(tmp_path / "logs" / "notes.db")
    con.execute("CREATE TABLE notes (text)")
    con.commit()
    con.close()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    own = read_own_runs(tmp_path / "logs")
    assert list(own.curves) == ["mlflow.db:acme/bad"] and own.labels["mlflow.db:acme/bad"].hacking
    for name in ("other.db", "notes.db"):
        assert any(name in s and "not an MLflow" in s for s in own.skipped)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_formats_mix_in_one_folder(tmp_path, rng):
    write_jsonl(tmp_path / "a.jsonl", {"j": curve(True, rng)})
    write_tensorboard(tmp_path / "tb" / "r", curve(False, rng))
    own = read_own_runs(tmp_path)
    assert own.counts() == {"jsonl": 1, "tensorboard": 1, "mlflow": 0}


def test_bad_folders_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="not a folder"):
        read_own_runs(tmp_path / "missing")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        read_own_runs(tmp_path / "file.txt")
    with pytest.raises(ValueError, match="holds no eval log"):
        read_own_runs(tmp_path)


@pytest.mark.parametrize("name,data,message", [
    ("runs.jsonl", b'{"job": "a", "step": 1, "eval": 0.5}\n{"job": "a", "step"\n',
     r"runs\.jsonl:2: not valid JSON"),
    ("runs.jsonl", b'{"job": "a", "step": 1, "eval": 0.5}\n' * 2, "logs one step twice"),
    ("runs.jsonl", b"\xff\xfe\x00garbage\n", "cannot read 'runs.jsonl'"),
    ("runs.jsonl.gz", b"not gzip at all", "cannot read 'runs.jsonl.gz'"),
    ("r/events.out.tfevents.1", b"\x05" * 40, "corrupt event file"),
])
def test_malformed_files_are_one_line_errors_naming_them(tmp_path, name, data, message):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    with pytest.raises(ValueError, match=message) as info:
        read_own_runs(tmp_path)
    assert "\n" not in str(info.value)


def test_links_and_short_runs_are_skipped_and_named(tmp_path, rng):
    write_jsonl(tmp_path / "real" / "a.jsonl", {"ok": curve(True, rng)})
    outside = tmp_path / "outside.jsonl"
    write_jsonl(outside, {"x": curve(True, rng)})
    (tmp_path / "real" / "link.jsonl").symlink_to(outside)
    (tmp_path / "real" / "short.jsonl").write_text(
        json.dumps({"job": "s", "step": 1, "eval": 0.5}) + "\n")
    own = read_own_runs(tmp_path / "real")
    assert list(own.curves) == ["a.jsonl:ok"]
    assert any("link.jsonl" in s and "not a regular file" in s for s in own.skipped)
    assert any("short.jsonl:s" in s and "fewer than" in s for s in own.skipped)


def test_an_older_mlflow_sqlite_store_is_migrated_in_a_copy_only(tmp_path, rng):
    """verl's default store is an MLflow 2 SQLite file: MLflow 3's client refuses its
    schema, so the reader migrates its private copy, never the platform's file."""
    db = tmp_path / "logs" / "mlflow.db"
    db.parent.mkdir()
    write_mlflow(f"sqlite:///{db}", "acme", {"bad": curve(True, rng)})
    import sqlalchemy
    from alembic import command
    from mlflow.store.db import utils

    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    config = utils._get_alembic_config(f"sqlite:///{db}")
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "-3")  # the schema of an older MLflow
    with pytest.raises(Exception, match="out-of-date database schema"):
        utils._verify_schema(engine)
    engine.dispose()
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    own = read_own_runs(tmp_path / "logs")
    assert own.labels["mlflow.db:acme/bad"].hacking
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_hostile_names_reach_the_report_escaped(tmp_path, rng):
    from evalstop.experiments import own_runs

    write_jsonl(tmp_path / "evil|x.jsonl", {"ok": curve(True, rng), "ok2": curve(False, rng),
                                            "a\x1b[31m|b\u202e": curve(True, rng)[:3]})
    own = read_own_runs(tmp_path)
    rows = own_runs.replay_rules(own)
    md = own_runs.markdown({"logs": "logs", "rules": rows, "skipped": own.skipped,
                            "runs": {"read": 2, "hacking": 1, "by_format": own.counts()}})
    assert len(own.skipped) == 1 and "evil\\|x.jsonl" in md  # skipped, named, escaped
    assert "\x1b" not in md and "\u202e" not in md
    # Every line is a table row of the table's 7 cells (8 bars) or holds no bare bar.
    assert all(line.count("|") - line.count("\\|") in (0, 8) for line in md.splitlines())
