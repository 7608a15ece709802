"""Rotation without loss: several rotations between two polls, ``copytruncate``, and
rotation with compression are each followed with no record lost or fed twice; a read
error keeps the offset and is retried."""

from __future__ import annotations

import errno
import gzip
import io
import os
import shutil

import pytest
from watch_hostile_util import append, line

from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore, walk

N = 199


def _recs(a, b):
    return b"".join(line("r", s, float(s)) for s in range(a, b))  # rising: never stopped


def _ctl(tmp_path, **kw):
    (tmp_path / "logs" / "t").mkdir(parents=True, exist_ok=True)
    err = io.StringIO()
    ctl = Controller(StateStore(str(tmp_path / "s.db")),
                     [JsonlDirSource(str(tmp_path / "logs"), **kw)],
                     detector="evalstop:k=2", err=err, out=io.StringIO())
    return ctl, err, str(tmp_path / "logs" / "t" / "a.jsonl")


def _taken(ctl, err):
    (job,) = ctl.store.jobs().values()
    assert "already taken" not in err.getvalue(), err.getvalue()  # nothing fed twice
    return job.n_evals, job.last_step


def _shift(log, n=5, gz=False):
    """logrotate's rename: a.jsonl.4 -> .5, ..., a.jsonl -> a.jsonl.1."""
    ext = ".gz" if gz else ""
    for i in range(n, 0, -1):
        if os.path.exists(f"{log}.{i}{ext}"):
            os.rename(f"{log}.{i}{ext}", f"{log}.{i + 1}{ext}")


@pytest.mark.parametrize("rotations", [2, 3])
def test_several_rotations_between_polls(tmp_path, rotations):
    ctl, err, log = _ctl(tmp_path)
    append(log, _recs(1, 50))
    ctl.poll_once()
    step = 50
    for _ in range(rotations):  # each: a few more lines, then rotated away, unseen
        append(log, _recs(step, step + 30))
        step += 30
        _shift(log)
        os.rename(log, log + ".1")
    append(log, _recs(step, N + 1))
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    ctl.close()


@pytest.mark.parametrize("rounds_between_polls", [1, 2])
def test_copytruncate(tmp_path, rounds_between_polls):
    ctl, err, log = _ctl(tmp_path)
    append(log, _recs(1, 2))
    ctl.poll_once()
    step = 2
    for _ in range(3):  # three polls, each after copytruncate rounds
        for _ in range(rounds_between_polls):
            append(log, _recs(step, step + 20))
            step += 20
            ctl.poll_once() if rounds_between_polls == 1 else None
            append(log, _recs(step, step + 30))  # written, not yet read, then copied
            step += 30
            _shift(log)
            shutil.copyfile(log, log + ".1")
            with open(log, "r+b") as fh:
                fh.truncate(0)
            append(log, _recs(step, step + 5))  # shorter than the offset
            step += 5
        ctl.poll_once()
    append(log, _recs(step, step + 10))
    ctl.run_until_idle()
    assert _taken(ctl, err) == (step + 9, step + 9)
    ctl.close()


def test_copytruncate_rewritten_past_the_old_size(tmp_path):
    ctl, err, log = _ctl(tmp_path)
    append(log, _recs(1, 20))
    ctl.poll_once()
    append(log, _recs(20, 40))
    shutil.copyfile(log, log + ".1")
    with open(log, "r+b") as fh:
        fh.truncate(0)
    append(log, _recs(40, N + 1))  # longer than before the copy
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    ctl.close()


def test_rotation_with_compression(tmp_path):
    ctl, err, log = _ctl(tmp_path, compressed=True, max_bytes=2000)
    append(log, _recs(1, 60))
    ctl.poll_once()  # reads ~2000 bytes: a backlog is left
    for _ in range(2):
        _shift(log, gz=True)
        os.rename(log, log + ".1")
        with open(log + ".1", "rb") as src, gzip.open(log + ".1.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)  # logrotate's compress (no delaycompress)
        os.remove(log + ".1")
        append(log, _recs(60, 120) if not os.path.exists(log + ".2.gz") else b"")
    append(log, _recs(120, N + 1))
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    ctl.close()


@pytest.mark.parametrize("code", [errno.EIO, errno.EMFILE])
def test_a_read_error_keeps_the_offset_and_is_retried(tmp_path, monkeypatch, code):
    ctl, err, log = _ctl(tmp_path, max_bytes=1000)
    append(log, _recs(1, 100))
    ctl.poll_once()
    os.rename(log, log + ".1")  # a rotated log still being drained
    append(log, _recs(100, N + 1))
    real = walk.open_file

    def failing(root, rel):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(walk, "open_file", failing)
    for _ in range(4):
        ctl.poll_once()
    monkeypatch.setattr(walk, "open_file", real)
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    text = err.getvalue()
    assert "deleted" not in text
    said = "out of file descriptors" if code == errno.EMFILE else "cannot read it (EIO"
    assert text.count(said) == 1
    ctl.close()


def test_a_rotated_log_cut_by_the_budget_is_drained_before_the_new_one(tmp_path):
    from evalstop.integrations.watch.budget import Budget

    ctl, err, log = _ctl(tmp_path, budget=Budget(lines=7))
    append(log, _recs(1, 2))
    ctl.poll_once()
    append(log, _recs(2, 100))
    os.rename(log, log + ".1")
    append(log, _recs(100, N + 1))
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    ctl.close()


def _policy_ctl(tmp_path, text, **kw):
    from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

    pol = tmp_path / "policy.toml"
    pol.write_text(text)
    policy = load_policy(str(pol))
    (tmp_path / "logs" / "t").mkdir(parents=True, exist_ok=True)
    err = io.StringIO()
    src = JsonlDirSource(str(tmp_path / "logs"), tenancy=PolicyTenancy(policy), **kw)
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], policy=policy, err=err,
                     out=io.StringIO())
    return ctl, err, str(tmp_path / "logs" / "t" / "a.jsonl")


DATEEXT = """
[defaults]
detector = "evalstop:k=2"
[tenants.t]
rotated = "{name}-{date}.gz"
[tenants.u]
"""


def test_compressed_rotation_named_in_the_policy(tmp_path):
    """logrotate's dateext + compress: a.jsonl -> a.jsonl-YYYYMMDD.gz, twice between
    two polls, with a backlog left: no record lost or fed twice."""
    ctl, err, log = _policy_ctl(tmp_path, DATEEXT, max_bytes=2000)
    append(log, _recs(1, 60))
    ctl.poll_once()  # reads ~2000 bytes: a backlog is left
    for day in ("20261201", "20261202"):
        os.rename(log, f"{log}-{day}")
        with open(f"{log}-{day}", "rb") as src, gzip.open(f"{log}-{day}.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(f"{log}-{day}")
        append(log, _recs(60, 120) if day == "20261201" else b"")
    append(log, _recs(120, N + 1))
    ctl.run_until_idle()
    assert _taken(ctl, err) == (N, N)
    ctl.close()


def test_a_tenants_rotated_name_is_its_own(tmp_path):
    """Tenant u's policy names no dateext generations: its ``b.jsonl-20261201.gz`` is no
    rotated log of ``b.jsonl`` (not read as one)."""
    ctl, _err, _ = _policy_ctl(tmp_path, DATEEXT)
    other = str(tmp_path / "logs" / "u" / "b.jsonl")
    append(other, b"".join(line("u", s, float(s)) for s in range(1, 4)))
    ctl.run_until_idle()
    with gzip.open(other + "-20261201.gz", "wb") as fh:
        fh.write(b"".join(line("u", s, float(s)) for s in range(1, 9)))
    os.truncate(other, 0)  # a copytruncate whose copy u's policy does not name
    append(other, b"".join(line("u", s, float(s)) for s in range(9, 12)))
    ctl.run_until_idle()
    (job,) = ctl.store.jobs().values()
    assert job.n_evals == 6  # 1-3, then 9-11 read from the start: 4-8 never taken
    ctl.close()


@pytest.mark.parametrize("pattern, problem", [
    ("../{name}.{n}", "may hold only"),
    ("{name}/{n}", "may hold only"),
    ("/tmp/{name}.{n}", "may hold only"),
    ("{name}.{n}.jsonl", "must not end in"),
    ("{n}.gz", "{name} exactly once"),
    ("{name}.gz", "one generation"),
    ("{name}.{n}.{date}", "one generation"),
    ("{name}.{m}", "may hold only"),
    ("x" * 65, "1-64 characters"),
])
def test_a_rotated_name_that_could_leave_the_folder_is_refused_at_load(tmp_path, pattern,
                                                                        problem):
    from evalstop.integrations.watch.policy import PolicyError, load_policy

    pol = tmp_path / "policy.toml"
    pol.write_text(f"[tenants.t]\nrotated = [{pattern!r}]\n".replace("'", '"'))
    with pytest.raises(PolicyError) as exc:
        load_policy(str(pol))
    assert "tenants.t.rotated" in str(exc.value) and problem in str(exc.value)
    assert "\n" not in str(exc.value)
