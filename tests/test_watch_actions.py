"""The shipped stop actions (``evalstop action slurm|kubernetes|ray``), run by the
controller against fake schedulers: ``squeue``/``sacct``/``scontrol``/``scancel`` and a
stub ``kubectl`` on PATH that log their arguments and answer as the scheduler would, and
a fake Ray dashboard (the Ray Jobs REST API) on loopback. No Kubernetes cluster here: a
stub. Slurm itself is exercised on the real testbed in ``test_testbed_actions.py``, Ray on
a real head and dashboard in ``test_action_ray_jobs.py``."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalstop.actions import ALREADY_ENDED, DRY_RUN, REFUSED, USAGE
from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2]
PY = f"{sys.executable} -m evalstop action"
UID = "0b0e4c1e-8d2a-4a57-9f0e-2f6a1d7c9e11"


def _run(tmp_path, template, job="run-7", tenant="team-a", job_id="4242"):
    logs = tmp_path / "logs"
    (logs / tenant).mkdir(parents=True)
    with open(logs / tenant / "a.jsonl", "w") as fh:
        for step, ev in enumerate(PEAK, 1):
            rec = {"job": job, "step": step * 100, "eval": ev}
            if job_id is not None:
                rec["job_id"] = job_id
            fh.write(json.dumps(rec) + "\n")
    store = StateStore(str(tmp_path / "s.db"))
    ctl = Controller(store, [JsonlDirSource(str(logs))], detector="evalstop:k=2",
                     action=ShellAction(template,
                                        checkpoint_template="/ckpt/{tenant}/{job}/ck-{best_step}"),
                     err=io.StringIO(), out=io.StringIO())
    ctl.run_until_idle()
    (row,) = store.actions()
    ctl.close()
    return row


def _fake_bin(tmp_path, monkeypatch, answers: dict[str, str]):
    """Scheduler commands that append their argv (one JSON list a line) to calls.txt and
    print ``answers[name]`` (a command named there with a leading '!' exits 1)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    for name in ("squeue", "sacct", "scancel", "scontrol", "kubectl"):
        # kubectl answers by its verb and kind ("get workloads..."), the others at once.
        given = answers.get(name, "")
        table = given if isinstance(given, dict) else {"": given}
        (bin_dir / name).write_text(
            f"#!{sys.executable}\nimport json, sys\n"
            f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
            f"table = {table!r}\n"
            "out = table.get(' '.join(sys.argv[3:5]), table.get('', ''))\n"
            "print(out.lstrip('!'), file=sys.stderr if out.startswith('!') else sys.stdout)\n"
            "sys.exit(1 if out.startswith('!') else 0)\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


def _calls(calls):
    return [json.loads(x) for x in calls.read_text().splitlines()] if calls.exists() else []


SLURM = (f"{PY} slurm --tenant {{tenant}} --job-id {{job_id}} --job {{job}} "
         "--stop-step {stop_step} --best-step {best_step} --best-checkpoint {best_checkpoint}")


def test_slurm_cancels_the_id_after_squeue_says_it_is_the_tenants(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {"squeue": "4242|4242|team-a|RUNNING"})
    row = _run(tmp_path, SLURM)
    assert (row.status, row.rc) == ("done", 0), row.output
    squeue, scontrol, scancel, again = _calls(calls)
    assert squeue[1:] == ["-h", "--states=all", "-j", "4242", "-o", "%i|%A|%a|%T"]
    # Asked again after the cancel: a job that ended by itself meanwhile is no stop.
    assert again == squeue
    # The note first (accounting keeps it), then a plain cancel (recorded as CANCELLED).
    assert scontrol[1:] == ["update", "JobId=4242", ("AdminComment=stopped by EvalStop at "
                            "step 500; best step 300; checkpoint /ckpt/team-a/run-7/ck-300")]
    assert scancel[1:] == ["--", "4242"]
    assert "cancelled job 4242 (account team-a, was RUNNING)" in row.output


@pytest.mark.parametrize("squeue, code, said", [
    # Slurm's --account ignores case; the owner must be the tenant exactly.
    ("4242|4242|Team-A|RUNNING", REFUSED, "belongs to account 'Team-A', not to tenant"),
    ("4242|4242|team-b|RUNNING", REFUSED, "belongs to account 'team-b'"),
    # A whole array (the bare array id): never every task at once.
    ("4242_0|4243|team-a|RUNNING\n4242_1|4244|team-a|RUNNING", REFUSED, "names 2 jobs"),
    ("4242|4242|team-a|COMPLETED", ALREADY_ENDED, "already ended, nothing to do"),
])
def test_slurm_acts_only_on_a_running_job_of_the_tenant(tmp_path, monkeypatch, squeue, code,
                                                       said):
    calls = _fake_bin(tmp_path, monkeypatch, {"squeue": squeue})
    row = _run(tmp_path, SLURM)
    assert row.rc == code and said in row.output, row.output
    assert row.status == ("done" if code == ALREADY_ENDED else "failed")
    assert [c[0].rsplit("/", 1)[-1] for c in _calls(calls)] == ["squeue"]  # nothing else


def test_slurm_asks_sacct_for_a_job_slurmctld_has_forgotten(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {
        "squeue": "!slurm_load_jobs error: Invalid job id specified",
        "sacct": "4242|team-a|CANCELLED by 0"})
    row = _run(tmp_path, SLURM)
    assert (row.status, row.rc) == ("done", ALREADY_ENDED), row.output
    assert [c[0].rsplit("/", 1)[-1] for c in _calls(calls)] == ["squeue", "sacct"]


def test_no_job_id_is_refused_in_one_line_and_nothing_is_asked(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {"squeue": "4242|4242|team-a|RUNNING"})
    row = _run(tmp_path, SLURM, job_id=None)
    assert (row.status, row.rc) == ("failed", USAGE)
    assert row.output.strip().count("\n") == 0 and "no job id" in row.output
    assert _calls(calls) == []


@pytest.mark.parametrize("argv", [
    ["--tenant", "a", "--job-id", "12,13"],        # two jobs for Slurm
    ["--tenant", "a", "--job-id", "-1"],            # an option
    ["--tenant", "a", "--job-id", "x1"],            # not a Slurm id
    ["--tenant=-a", "--job-id", "1"],
    ["--tenant", "a", "--job-id", "1", "--best-step", "3; rm"],
])
def test_slurm_refuses_bad_operands(tmp_path, monkeypatch, argv, capsys):
    from evalstop.cli.main import main

    calls = _fake_bin(tmp_path, monkeypatch, {"squeue": "1|1|a|RUNNING"})
    assert main(["action", "slurm", *argv]) == USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1 and _calls(calls) == []


def test_slurm_dry_run_checks_and_stops_nothing(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {"squeue": "4242|4242|team-a|RUNNING"})
    row = _run(tmp_path, SLURM + " --dry-run")
    assert (row.status, row.rc) == ("failed", DRY_RUN) and "would cancel job 4242" in row.output
    assert [c[0].rsplit("/", 1)[-1] for c in _calls(calls)] == ["squeue"]


def _k8s_jobs(ns="team-a", uid=UID, suspend=False, complete=False):
    job = {"metadata": {"name": "run-7", "namespace": ns, "uid": uid},
           "spec": {"suspend": suspend}, "status": {}}
    if complete:
        job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    return json.dumps({"items": [job]})


K8S = (f"{PY} kubernetes --tenant {{tenant}} --job-id {{job_id}} --stop-step {{stop_step}} "
       "--best-step {best_step} --best-checkpoint {best_checkpoint}")


def test_kubernetes_suspends_the_job_of_that_uid_in_the_tenants_namespace(tmp_path,
                                                                          monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {"kubectl": _k8s_jobs()})
    row = _run(tmp_path, K8S, job_id=UID)
    assert (row.status, row.rc) == ("done", 0), row.output
    got = _calls(calls)
    assert all(c[1:3] == ["--namespace", "team-a"] for c in got)
    assert got[0][3:] == ["get", "jobs", "-o", "json"]
    assert got[1][3:6] == ["annotate", "--overwrite", "job"]
    assert "evalstop/best-checkpoint=/ckpt/team-a/run-7/ck-300" in got[1]
    assert got[2][3:] == ["patch", "job", "--type=merge", "-p", '{"spec":{"suspend":true}}',
                          "--", "run-7"]


@pytest.mark.parametrize("jobs, code, said", [
    (_k8s_jobs(uid="0b0e4c1e-0000-4a57-9f0e-2f6a1d7c9e11"), REFUSED, "no Job with UID"),
    (_k8s_jobs(ns="team-b"), REFUSED, "is not in namespace team-a"),
    (_k8s_jobs(suspend=True), ALREADY_ENDED, "already suspended"),
    (_k8s_jobs(complete=True), ALREADY_ENDED, "already complete"),
])
def test_kubernetes_acts_only_on_a_running_job_of_the_tenant(tmp_path, monkeypatch, jobs,
                                                            code, said):
    calls = _fake_bin(tmp_path, monkeypatch, {"kubectl": jobs})
    row = _run(tmp_path, K8S, job_id=UID)
    assert row.rc == code and said in row.output, row.output
    assert [c[3] for c in _calls(calls)] == ["get"]


def test_kubernetes_kueue_without_a_workload_stops_nothing(tmp_path, monkeypatch):
    calls = _fake_bin(tmp_path, monkeypatch, {"kubectl": {
        "get jobs": _k8s_jobs(), "get workloads.kueue.x-k8s.io": '{"items": []}'}})
    row = _run(tmp_path, K8S + " --kueue", job_id=UID)
    assert (row.status, row.rc) == ("failed", REFUSED) and "no Kueue workload" in row.output
    assert [c[3] for c in _calls(calls)] == ["get", "get"]


class _FakeRay(BaseHTTPRequestHandler):
    """The Ray Jobs REST API for a few jobs: GET /api/jobs/ID, POST /api/jobs/ID/stop."""

    jobs: dict = {}
    calls: list = []

    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        self.calls.append(("GET", self.path))
        job = self.jobs.get(self.path.rsplit("/", 1)[-1])
        self._send(404, {}) if job is None else self._send(200, job)

    def do_POST(self):  # noqa: N802
        self.calls.append(("POST", self.path))
        job = self.jobs.get(self.path.split("/")[-2])
        stopped = job is not None and job["status"] in ("PENDING", "RUNNING")
        if stopped:
            job["status"] = "STOPPED"
        self._send(200, {"stopped": stopped})

    def log_message(self, *a):
        pass


@pytest.fixture
def fake_ray():
    _FakeRay.jobs = {
        "raysubmit_a1": {"status": "RUNNING", "metadata": {"tenant": "team-a"}},
        "raysubmit_b1": {"status": "RUNNING", "metadata": {"tenant": "Team-A"}},
        "raysubmit_n1": {"status": "RUNNING", "metadata": {}},
        "raysubmit_a2": {"status": "SUCCEEDED", "metadata": {"tenant": "team-a"}},
    }
    _FakeRay.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeRay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("job_id, code, said", [
    ("raysubmit_a1", 0, "stopped Ray job raysubmit_a1 (tenant team-a, was RUNNING)"),
    ("raysubmit_b1", REFUSED, "belongs to tenant 'Team-A', not to 'team-a'"),
    ("raysubmit_n1", REFUSED, "belongs to tenant None"),  # no owner: nobody's
    ("raysubmit_a2", ALREADY_ENDED, "SUCCEEDED: already ended"),
    ("raysubmit_zz", REFUSED, "Ray knows no job"),
])
def test_ray_stops_only_a_running_job_whose_metadata_names_the_tenant(tmp_path, fake_ray,
                                                                      job_id, code, said):
    row = _run(tmp_path, f"{PY} ray --address {fake_ray} --tenant {{tenant}} "
                         "--job-id {job_id} --best-step {best_step}", job_id=job_id)
    assert row.rc == code and said in row.output, row.output
    posts = [c for c in _FakeRay.calls if c[0] == "POST"]
    assert posts == ([("POST", f"/api/jobs/{job_id}/stop")] if code == 0 else [])
    if code == 0:  # run again (a restart after a kill): the job has ended, nothing to do
        again = _run(tmp_path / "again", f"{PY} ray --address {fake_ray} --tenant {{tenant}} "
                                         "--job-id {job_id}", job_id=job_id)
        assert (again.status, again.rc) == ("done", ALREADY_ENDED)


def test_ray_unreachable_is_one_line(tmp_path):
    row = _run(tmp_path, f"{PY} ray --address http://127.0.0.1:9 --tenant {{tenant}} "
                         "--job-id {job_id}", job_id="raysubmit_a1")
    assert (row.status, row.rc) == ("failed", REFUSED)
    assert "cannot reach Ray at http://127.0.0.1:9" in row.output
    assert "Traceback" not in row.output


def test_kubernetes_kueue_deactivates_the_workload_of_that_job(tmp_path, monkeypatch):
    wl = {"metadata": {"name": "job-run-7-ab12"}, "spec": {"active": True}}
    calls = _fake_bin(tmp_path, monkeypatch, {"kubectl": {
        "get jobs": _k8s_jobs(), "get workloads.kueue.x-k8s.io": json.dumps({"items": [wl]})}})
    row = _run(tmp_path, K8S + " --kueue", job_id=UID)
    assert (row.status, row.rc) == ("done", 0), row.output
    got = _calls(calls)
    assert got[1][3:] == ["get", "workloads.kueue.x-k8s.io", "-l",
                          f"kueue.x-k8s.io/job-uid={UID}", "-o", "json"]
    assert got[-1][3:] == ["patch", "--type=merge", "-p", '{"spec":{"active":false}}', "--",
                           "workload.kueue.x-k8s.io/job-run-7-ab12"]
