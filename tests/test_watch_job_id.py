"""A stop acts on a job id, never on a name: the eval log's ``job_id``, the ``{job_id}``
placeholder (the id of the record the stop was decided on), and the templates refused
because a second interpreter would read a value as code (``sh -c {job}``)."""

from __future__ import annotations

import io
import json

import pytest

from evalstop import jobid
from evalstop.evallog import RecordError, parse_record
from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore
from evalstop.integrations.watch.actions import shipped_action


@pytest.mark.parametrize("value, want", [("123", "123"), (123, "123"), ("123_4", "123_4"),
                                         ("raysubmit_Ab9", "raysubmit_Ab9"), (None, None)])
def test_a_record_may_carry_the_schedulers_job_id(value, want):
    rec = {"job": "j", "step": 1, "eval": 0.5}
    if value is not None:
        rec["job_id"] = value
    assert parse_record(json.dumps(rec), "x:1").job_id == want


@pytest.mark.parametrize("value", ["12,13", "-1", "a b", "", "1;rm", True, 1.5, ["1"],
                                   "x" * 201])
def test_a_job_id_that_could_name_other_jobs_is_refused(value):
    with pytest.raises(RecordError, match="job_id") as exc:
        parse_record(json.dumps({"job": "j", "step": 1, "eval": 0.5, "job_id": value}), "x:1")
    assert exc.value.reason == "schema"


@pytest.mark.parametrize("env, want", [
    ({"SLURM_JOB_ID": "5"}, "5"),
    ({"SLURM_JOB_ID": "5", "SLURM_ARRAY_JOB_ID": "1", "SLURM_ARRAY_TASK_ID": "2"}, "1_2"),
    ({"SLURM_JOB_ID": "5", "EVALSTOP_JOB_ID": "raysubmit_x"}, "raysubmit_x"),
    ({}, None),
])
def test_the_training_side_finds_its_id_in_its_environment(env, want):
    assert jobid.from_environ(env) == want


def _controller(tmp_path, template="echo {job_id}"):
    store = StateStore(str(tmp_path / "s.db"))
    return Controller(store, [JsonlDirSource(str(tmp_path / "logs"))],
                      detector="evalstop:k=2", action=ShellAction(template),
                      err=io.StringIO(), out=io.StringIO())


def _write(tmp_path, records, mode="a"):
    (tmp_path / "logs" / "acme").mkdir(parents=True, exist_ok=True)
    with open(tmp_path / "logs" / "acme" / "runs.jsonl", mode) as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


def test_the_stop_acts_on_the_id_of_the_records_it_was_decided_on(tmp_path):
    # A resubmission under the same name (a new id) resumes mid-stream: the stop is
    # decided on the new job's records, so it acts on the new id.
    _write(tmp_path, [{"job": "dup", "step": 1, "eval": 0.9, "job_id": "100"},
                      {"job": "dup", "step": 2, "eval": 0.5, "job_id": "100"},
                      {"job": "dup", "step": 3, "eval": 0.2, "job_id": "200"}])
    ctl = _controller(tmp_path)
    ctl.run_until_idle()
    (row,) = ctl.store.actions()
    assert row.command == "echo 200" and row.output.strip() == "200"
    ctl.close()


def test_a_pending_stop_never_reaches_a_later_resubmission(tmp_path):
    _write(tmp_path, [{"job": "dup", "step": s, "eval": e, "job_id": "100"}
                      for s, e in ((1, 0.9), (2, 0.5), (3, 0.2))])
    ctl = _controller(tmp_path)
    ctl.run_pending = lambda: 0  # decided, not yet run (a kill, a full pool)
    ctl.poll_once()
    ctl.close()
    # The same name resubmitted: new id, steps from 1 again, while the stop is pending.
    _write(tmp_path, [{"job": "dup", "step": s, "eval": 0.9, "job_id": "300"}
                      for s in (1, 2, 3, 4)])
    ctl = _controller(tmp_path)
    ctl.run_until_idle()
    (row,) = ctl.store.actions()
    assert (row.status, row.output.strip()) == ("done", "100")
    ctl.close()


def test_a_stop_without_an_id_renders_an_empty_one(tmp_path):
    _write(tmp_path, [{"job": "j", "step": s, "eval": e} for s, e in ((1, 0.9), (2, 0.5),
                                                                        (3, 0.2))])
    ctl = _controller(tmp_path, "echo x{job_id}x")
    ctl.run_until_idle()
    assert ctl.store.actions()[0].command == "echo x''x"
    ctl.close()


@pytest.mark.parametrize("template", [
    "sh -c {job}", "bash -lc {job}", "/bin/bash -ec {reason}", "sh -c{job}",
    "timeout 5 sh -c {job}", "env X=1 dash -c {tenant}", "eval {job}", "echo a; eval x {job}",
    "python3.11 -c {job}", "perl -e {job}", "ssh host scancel {job}", "su -c {job} root",
    "{job} --stop", "X=1 {job}", "echo {job} | sh", "printf %s {job} | bash -s",
    "echo {job} | tee log | xargs sh -c", "source {source}",
])
def test_a_placeholder_run_as_code_is_refused_at_start(template):
    with pytest.raises(ValueError, match="code|command run") as exc:
        ShellAction(template)
    assert len(str(exc.value).splitlines()) == 1


@pytest.mark.parametrize("template", [
    "sh -c 'scancel -- \"$1\"' _ {job_id}", "echo {job}", "echo {job} | grep x; sh -c true",
    "evalstop action slurm --tenant {tenant} --job-id {job_id}", "bash script.sh {job}",
])
def test_a_placeholder_given_as_data_is_allowed(template):
    ShellAction(template)


@pytest.mark.parametrize("command, safe", [
    ("evalstop action slurm --tenant a --job-id 12", True),
    ("/usr/bin/python3.11 -m evalstop action ray --job-id=raysubmit_1 --tenant a", True),
    ("evalstop action slurm --tenant a --job-id ''", False),  # no id: a name-based guess
    ("evalstop action slurm --tenant a --job-id 1; echo more", False),
    ("scancel 12", False),
])
def test_only_a_shipped_action_by_id_is_run_again_after_a_kill(command, safe):
    assert shipped_action(command) is safe
