"""The watch controller in-process: JSONL tailing, policies, actions, dry run, status."""

from __future__ import annotations

import io
import json
import os
import sqlite3

import numpy as np
import pytest
from conftest import kill_store, watch_decisions

from evalstop.cli.replay import replay_job
from evalstop.evallog import read_log
from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore
from evalstop.integrations.watch.jsonl import MISSING_POLLS
from evalstop.integrations.watch.status import format_table, status_rows

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]  # k=2 stops at step 5, best step 3


def _line(job, step, ev, **extra):
    return json.dumps({"job": job, "step": step, "eval": ev, **extra}) + "\n"


def _append(path, text):
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


class Harness:
    def __init__(self, tmp_path, action=None, detector="evalstop:k=2", dry_run=False,
                 retry_running=False):
        self.logs = tmp_path / "logs"
        self.logs.mkdir(exist_ok=True)
        self.db = str(tmp_path / "state.db")
        self.err, self.out = io.StringIO(), io.StringIO()
        self.store = StateStore(self.db, dry_run=dry_run)
        self.ctl = Controller(self.store, [JsonlDirSource(str(self.logs))], detector=detector,
                              action=action, dry_run=dry_run, retry_running=retry_running,
                              err=self.err, out=self.out)

    def decisions(self):
        return watch_decisions(self.store)

    def die(self):
        """Drop the controller as a kill would: nothing committed after this point."""
        kill_store(self.store)


def test_streams_from_many_jobs(tmp_path):
    h = Harness(tmp_path)
    log = h.logs / "a.jsonl"
    for step, ev in enumerate(PEAK, 1):
        _append(log, _line("peak", step, ev) + _line("up", step, step / 10))
    h.ctl.run_until_idle()
    assert h.decisions() == {"peak": (True, 5, 3, 5), "up": (False, None, 6, 6)}
    assert "stop peak at step 5" in h.out.getvalue()
    assert h.err.getvalue() == ""


def test_same_decisions_as_replay_on_a_finished_log(tmp_path):
    rng = np.random.default_rng(7)
    h = Harness(tmp_path)
    log = h.logs / "mixed.jsonl"
    lines = []
    for j in range(30):
        peak = rng.integers(3, 15)
        for step in range(1, 21):
            score = -abs(step - peak) / 10 + rng.normal(0, 0.05)
            lines.append(_line(f"job{j}", step * 10, float(score)))
    order = rng.permutation(len(lines))  # interleaved and out of order within the poll
    _append(log, "".join(lines[i] for i in order))
    h.ctl.run_until_idle()
    got = {r["job"]: r for r in status_rows(h.store)}
    for job, recs in read_log(log).items():
        want = replay_job(recs, "evalstop:k=2", "max")
        assert (got[job]["stopped"], got[job]["stop_step"], got[job]["best_step"]) == (
            want["stopped"], want["stop_step"], want["best_step"]), job


def test_truncated_last_line_waits_for_the_rest(tmp_path):
    h = Harness(tmp_path)
    log = h.logs / "a.jsonl"
    _append(log, _line("a", 1, 0.1) + '{"job": "a", "step": 2, "ev')
    h.ctl.run_until_idle()
    assert h.decisions()["a"][3] == 1 and h.err.getvalue() == ""
    _append(log, 'al": 0.5}\n')
    h.ctl.run_until_idle()
    assert h.decisions()["a"] == (False, None, 2, 2)
    assert h.err.getvalue() == ""


def test_malformed_records_are_reported_and_skipped(tmp_path):
    h = Harness(tmp_path)
    log = h.logs / "a.jsonl"
    _append(log, _line("a", 1, 0.1) + "not json\n" + '{"job": "a", "step": 2}\n'
            + '{"job": "a", "step": 3, "eval": "high"}\n')
    with open(log, "ab") as fh:
        fh.write(b'{"job": "\xff\xfe"}\n')
    _append(log, '["a list"]\n' + _line("a", 4, 0.3))
    h.ctl.run_until_idle()
    err = h.err.getvalue().splitlines()
    assert len(err) == 5
    assert any("a.jsonl:2: not valid JSON" in e for e in err)
    assert any("a.jsonl:3: missing 'eval'" in e for e in err)
    assert any("a.jsonl:4: 'eval' must be a number" in e for e in err)
    assert any("a.jsonl:5: not UTF-8 text" in e for e in err)
    assert any("a.jsonl:6: expected a JSON object" in e for e in err)
    assert all(e.endswith("; refused") for e in err)
    assert h.ctl.refused == {"json": 1, "schema": 3, "utf8": 1}
    assert h.decisions()["a"] == (False, None, 4, 2)


def test_out_of_order_policy(tmp_path):
    h = Harness(tmp_path)
    log = h.logs / "a.jsonl"
    # Within one poll: sorted by step. Across polls: a late step is reported and skipped.
    _append(log, _line("a", 3, 0.5) + _line("a", 1, 0.1) + _line("a", 2, 0.3))
    h.ctl.run_until_idle()
    assert h.decisions()["a"] == (False, None, 3, 3)
    _append(log, _line("a", 2, 0.9) + _line("a", 4, 0.4) + _line("a", 4, 0.0))
    h.ctl.run_until_idle()
    err = h.err.getvalue()
    assert "job a step 2 comes after step 3 already taken; skipped" in err
    assert "job a step 4 repeats step 4 already taken; skipped" in err
    assert status_rows(h.store)[0]["skipped"] == 2
    assert h.decisions()["a"] == (False, None, 3, 4)


def test_deleted_log(tmp_path):
    h = Harness(tmp_path)
    _append(h.logs / "a.jsonl", _line("a", 1, 0.5) + _line("a", 2, 0.4))
    _append(h.logs / "b.jsonl", _line("b", 1, 0.5))
    h.ctl.run_until_idle()
    os.remove(h.logs / "a.jsonl")
    _append(h.logs / "b.jsonl", _line("b", 2, 0.6))
    h.ctl.run_until_idle()
    # Deleted only once absent from MISSING_POLLS listings in a row (a passing error is not).
    assert "log deleted" not in h.err.getvalue()
    for _ in range(MISSING_POLLS - 1):
        h.ctl.poll_once()
    assert "a.jsonl: log deleted; its jobs keep their state" in h.err.getvalue()
    assert h.decisions() == {"a": (False, None, 1, 2), "b": (False, None, 2, 2)}
    assert not any(p.endswith("a.jsonl") for p in h.store.offsets())


def test_replaced_or_truncated_log_is_read_again(tmp_path):
    h = Harness(tmp_path)
    log = h.logs / "a.jsonl"
    _append(log, _line("a", 1, 0.5) + _line("a", 2, 0.6))
    h.ctl.run_until_idle()
    log.write_text(_line("a", 3, 0.4))  # shorter than the offset: truncated
    h.ctl.run_until_idle()
    assert "log truncated; reading it from the start" in h.err.getvalue()
    assert h.decisions()["a"] == (False, None, 2, 3)


def test_action_runs_once_with_quoted_values(tmp_path):
    marker = tmp_path / "acts.txt"
    action = ShellAction(f"printf '%s|%s|%s\\n' {{job}} {{best_step}} {{best_checkpoint}} "
                         f">> {marker}", checkpoint_template="/ck/{job}/checkpoint-{best_step}")
    h = Harness(tmp_path, action=action)
    evil = "x; touch pwned"
    for step, ev in enumerate(PEAK, 1):
        _append(h.logs / "a.jsonl", _line(evil, step, ev))
    h.ctl.run_until_idle()
    h.ctl.run_until_idle()
    assert marker.read_text() == f"{evil}|3|/ck/{evil}/checkpoint-3\n"
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")
    (row,) = h.store.actions()
    assert (row.status, row.rc) == ("done", 0)


def test_failed_action_is_recorded_and_reported(tmp_path):
    h = Harness(tmp_path, action=ShellAction("echo nope >&2; exit 3"))
    for step, ev in enumerate(PEAK, 1):
        _append(h.logs / "a.jsonl", _line("a", step, ev))
    h.ctl.run_until_idle()
    (row,) = h.store.actions()
    assert (row.status, row.rc, row.output.strip()) == ("failed", 3, "nope")
    assert f"job a [{h.logs / 'a.jsonl'}]: action exited 3: nope" in h.err.getvalue()


def test_dry_run_prints_and_changes_nothing(tmp_path):
    marker = tmp_path / "acts.txt"
    for step, ev in enumerate(PEAK, 1):
        (tmp_path / "logs").mkdir(exist_ok=True)
        _append(tmp_path / "logs" / "a.jsonl", _line("a", step, ev))
    h = Harness(tmp_path, action=ShellAction(f"echo {{job}} >> {marker}"), dry_run=True)
    h.ctl.run_until_idle()
    assert f"dry-run: would run for a: echo a >> {marker}" in h.out.getvalue()
    assert not marker.exists()
    h.ctl.close()
    assert not os.path.exists(h.db)


def test_state_is_bound_to_one_detector(tmp_path):
    h = Harness(tmp_path)
    h.ctl.close()
    with pytest.raises(ValueError, match="holds state for --detector 'evalstop:k=2'"):
        Harness(tmp_path, detector="evalstop:k=3")


def test_second_controller_on_one_state_is_refused(tmp_path):
    h = Harness(tmp_path)
    with pytest.raises(ValueError, match="another evalstop watch holds"):
        StateStore(h.db)
    h.ctl.close()


def test_not_a_state_database(tmp_path):
    bad = tmp_path / "x.db"
    bad.write_text("hello, not sqlite" * 100)
    with pytest.raises(ValueError, match="is not an evalstop watch state"):
        StateStore(str(bad), readonly=True)


@pytest.mark.parametrize(
    "template, kwargs, match",
    [
        ("", {}, "--action must be a command template"),
        ("scancel {jobid}", {}, r"unknown placeholder \{jobid\}"),
        ("x {best_checkpoint}", {}, "no --checkpoint-template"),
        ("x {job:>10}", {}, "takes no format spec"),
        ("kubectl patch -p {\"a\": 1}", {}, "bad --action"),
        ("x {job}", {"checkpoint_template": "/c/{step}"}, r"unknown placeholder \{step\}"),
        ("x {job}", {"timeout": 0}, "--action-timeout must be > 0"),
    ],
)
def test_bad_action_templates(template, kwargs, match):
    with pytest.raises(ValueError, match=match):
        ShellAction(template, **kwargs)


def test_status_table(tmp_path):
    h = Harness(tmp_path)
    for step, ev in enumerate(PEAK, 1):
        _append(h.logs / "a.jsonl", _line("peak", step, ev))
    h.ctl.run_until_idle()
    text = format_table(status_rows(h.store))
    header, row, total = text.splitlines()
    assert header.split() == ["tenant", "job", "evals", "last_step", "last_score", "streak",
                              "best_step", "best_score", "state", "action"]
    assert row.split() == ["a", "peak", "5", "5", "0.2", "2", "3", "0.5", "stopped@5", "done"]
    assert total == "1 jobs, 1 stopped"


def test_wal_and_one_transaction_per_batch(tmp_path):
    h = Harness(tmp_path)
    assert h.store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    _append(h.logs / "a.jsonl", _line("a", 1, 0.1))
    h.ctl.poll_once()
    other = sqlite3.connect(h.db)
    assert other.execute("SELECT pos FROM offsets").fetchone()[0] > 0
    assert other.execute("SELECT n_evals FROM jobs").fetchone()[0] == 1


def test_rule_that_rejects_a_record(tmp_path):
    # stopat reads each record's progress; a record without one is reported and skipped.
    h = Harness(tmp_path, detector="stopat:p=0.5")
    _append(h.logs / "a.jsonl", _line("a", 1, 0.1) + _line("a", 2, 0.2, progress=0.3)
            + _line("a", 3, 0.3, progress=0.6))
    h.ctl.run_until_idle()
    assert "job a: stopat needs the job's progress with each eval; skipped" in h.err.getvalue()
    assert h.decisions()["a"][:3] == (True, 3, 3)
