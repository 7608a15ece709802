"""The shipped stop actions (examples/actions/), run by the controller against fake
scheduler commands (``squeue``/``scancel``/``kubectl`` on PATH that log their
arguments), and in their own dry-run mode (which stops nothing and says so: exit 3)."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "actions"
PEAK = [0.1, 0.3, 0.5, 0.4, 0.2]
needs_bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run(tmp_path, template, job="run-7", tenant="team-a"):
    logs = tmp_path / "logs"
    (logs / tenant).mkdir(parents=True)
    with open(logs / tenant / "a.jsonl", "w") as fh:
        fh.writelines(json.dumps({"job": job, "step": step * 100, "eval": ev}) + "\n"
                      for step, ev in enumerate(PEAK, 1))
    store = StateStore(str(tmp_path / "s.db"))
    ctl = Controller(store, [JsonlDirSource(str(logs))], detector="evalstop:k=2",
                     action=ShellAction(template,
                                        checkpoint_template="/ckpt/{tenant}/{job}/ck-{best_step}"),
                     err=io.StringIO(), out=io.StringIO())
    ctl.run_until_idle()
    (row,) = store.actions()
    ctl.close()
    return row


def _fake_bin(tmp_path, monkeypatch, squeue_out="4242"):
    """squeue/scancel/kubectl that append their argv (one JSON list a line) to calls.txt."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    for name in ("squeue", "scancel", "scontrol", "kubectl"):
        out = squeue_out if name == "squeue" else ""
        (bin_dir / name).write_text(
            f"#!{sys.executable}\nimport json, sys\n"
            f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
            f"print({out!r})\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("EVALSTOP_NOTES", str(tmp_path / "notes.tsv"))
    return calls


def _calls(calls):
    return [json.loads(x) for x in calls.read_text().splitlines()] if calls.exists() else []


TEMPLATE = "bash {script} --tenant {{tenant}} -- {{job}} {{best_step}} {{best_checkpoint}}"


@needs_bash
def test_scancel_is_scoped_to_the_tenant_account(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch)
    # An all-digit name is a name (squeue --name), never taken as a Slurm job id.
    row = _run(tmp_path, TEMPLATE.format(script=EXAMPLES / "scancel.sh"), job="12345")
    assert (row.status, row.rc) == ("done", 0), row.output
    squeue, scontrol, scancel = _calls(calls)
    assert "--account=team-a" in squeue and "--name=12345" in squeue
    # The note first (accounting keeps it), then a plain cancel (recorded as CANCELLED).
    assert scontrol[1:] == ["update", "JobId=4242", ("AdminComment=stopped by EvalStop at "
                            "step ?; best step 300; checkpoint /ckpt/team-a/12345/ck-300")]
    assert scancel[1:] == ["--", "4242"]
    assert "stopped 12345 (account team-a, ids 4242)" in row.output


@needs_bash
def test_scancel_with_no_such_job_fails(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, squeue_out="")
    row = _run(tmp_path, TEMPLATE.format(script=EXAMPLES / "scancel.sh"))
    assert (row.status, row.rc) == ("failed", 1)
    assert "no pending or running job named run-7 in account team-a" in row.output
    assert [c[0].endswith("scancel") for c in _calls(calls)] == [False]  # squeue only


@needs_bash
@pytest.mark.parametrize("kueue", [False, True])
def test_kubectl_is_scoped_to_the_tenant_namespace(tmp_path, monkeypatch, kueue):
    calls = _fake_bin(tmp_path, monkeypatch, squeue_out="")
    if kueue:
        monkeypatch.setenv("KUEUE", "1")
    row = _run(tmp_path, TEMPLATE.format(script=EXAMPLES / "kubectl-suspend.sh"))
    got = _calls(calls)
    assert got and all(c[1:3] == ["--namespace", "team-a"] for c in got)
    if kueue:  # the fake kubectl finds no workload: nothing suspended, and it says so
        assert (row.status, row.rc) == ("failed", 1)
        assert "no Kueue workload found for job run-7 in namespace team-a" in row.output
    else:
        assert (row.status, row.rc) == ("done", 0), row.output
        assert got[-1][3:] == ["patch", "job", "--type=merge", "-p",
                               '{"spec":{"suspend":true}}', "--", "run-7"]
        assert "best step 300 at /ckpt/team-a/run-7/ck-300" in row.output


@needs_bash
@pytest.mark.parametrize("script", ["scancel.sh", "kubectl-suspend.sh"])
@pytest.mark.parametrize("argv", [
    ["--", "--all", "3"],             # an option-like name
    ["--tenant", "t", "--", "--all", "3"],
    ["--tenant", "t", "--", "a b\nc", "3"],  # a control character
    ["--tenant", "t", "--", "ok", "3; rm"],  # a step that is not a number
    ["--tenant", "t", "ok", "3"],     # no --
])
def test_shell_actions_refuse_bad_operands(tmp_path, monkeypatch, script, argv):
    calls = _fake_bin(tmp_path, monkeypatch)
    proc = subprocess.run(["bash", str(EXAMPLES / script), *argv], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 2 and _calls(calls) == []


@needs_bash
@pytest.mark.parametrize("script", ["scancel.sh", "kubectl-suspend.sh"])
def test_shell_dry_run_is_not_a_stop(tmp_path, monkeypatch, script):
    calls = _fake_bin(tmp_path, monkeypatch)
    monkeypatch.setenv("DRY_RUN", "1")
    row = _run(tmp_path, TEMPLATE.format(script=EXAMPLES / script))
    assert (row.status, row.rc) == ("failed", 3) and "dry run: nothing" in row.output
    assert _calls(calls) == []


def _ray_script():
    spec = importlib.util.spec_from_file_location("ray_stop_job", EXAMPLES / "ray_stop_job.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ray_stop_job_dry_run_is_not_a_stop(tmp_path, monkeypatch):
    monkeypatch.setenv("DRY_RUN", "1")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    row = _run(tmp_path, f"{sys.executable} {EXAMPLES / 'ray_stop_job.py'} --tenant {{tenant}} "
                         "-- {job} {best_step} {best_checkpoint}", job="team-a-run-7")
    assert (row.status, row.rc) == ("failed", 3), row.output
    assert row.output.strip() == ("dry run: would stop Ray job team-a-run-7 at "
                                  "http://127.0.0.1:8265; best step 300 "
                                  "/ckpt/team-a/team-a-run-7/ck-300; nothing stopped")


@pytest.mark.parametrize("argv, code, message", [
    (["--tenant", "a", "--", "b-job", "3"], 1, "does not belong to tenant 'a'"),
    (["--tenant", "a", "--", "-a-x", "3"], 2, "bad submission id"),
    (["--tenant", "a", "--", "a-x", "3;x"], 2, "bad best step"),
])
def test_ray_stop_job_refuses(capsys, argv, code, message):
    assert _ray_script().main(argv) == code
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_ray_stop_job_without_ray_default_is_one_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.job_submission", None)  # import fails
    monkeypatch.delenv("DRY_RUN", raising=False)
    assert _ray_script().main(["--tenant", "a", "--", "a-1", "3"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "ray_stop_job.py: needs the Ray Jobs SDK: pip install 'ray[default]'"
