"""The shipped stop actions (examples/actions/), run by the controller in dry-run mode
(DRY_RUN=1: each prints the scheduler command it would run)."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import pytest

from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "actions"
PEAK = [0.1, 0.3, 0.5, 0.4, 0.2]


def _run(tmp_path, template):
    logs = tmp_path / "logs"
    logs.mkdir()
    with open(logs / "a.jsonl", "w") as fh:
        fh.writelines(json.dumps({"job": "team a/run-7", "step": step * 100, "eval": ev}) + "\n"
                      for step, ev in enumerate(PEAK, 1))
    store = StateStore(str(tmp_path / "s.db"))
    ctl = Controller(store, [JsonlDirSource(str(logs))], detector="evalstop:k=2",
                     action=ShellAction(template,
                                        checkpoint_template="/ckpt/{job}/ck-{best_step}"),
                     err=io.StringIO(), out=io.StringIO())
    ctl.run_until_idle()
    (row,) = store.actions()
    ctl.close()
    return row


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize(
    "script, env, expected",
    [
        ("scancel.sh", {}, "scancel --signal=TERM --full --name=team\\ a/run-7"),
        ("kubectl-suspend.sh", {}, "kubectl patch job team\\ a/run-7 --type=merge"),
        ("kubectl-suspend.sh", {"KUEUE": "1", "NAMESPACE": "ml"},
         "kubectl --namespace ml patch workload/"),
    ],
)
def test_shell_examples(tmp_path, monkeypatch, script, env, expected):
    monkeypatch.setenv("DRY_RUN", "1")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    row = _run(tmp_path, f"bash {EXAMPLES / script} {{job}} {{best_step}} {{best_checkpoint}}")
    assert (row.status, row.rc) == ("done", 0), row.output
    assert expected in row.output
    assert "best step 300 at /ckpt/team a/run-7/ck-300" in row.output


def test_ray_stop_job_example(tmp_path, monkeypatch):
    monkeypatch.setenv("DRY_RUN", "1")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    row = _run(tmp_path, f"{sys.executable} {EXAMPLES / 'ray_stop_job.py'} {{job}} "
                         "{best_step} {best_checkpoint}")
    assert (row.status, row.rc) == ("done", 0), row.output
    assert row.output.strip() == ("would stop Ray job team a/run-7 at http://127.0.0.1:8265; "
                                  "best step 300 /ckpt/team a/run-7/ck-300")
