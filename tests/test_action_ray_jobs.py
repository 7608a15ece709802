"""``evalstop action ray`` against a real Ray head and its dashboard's Jobs REST API
(tests/ray_jobs_server.py: one head for the module, token authentication on): real jobs
(``sleep``), submitted with the owner in their ``tenant`` metadata, stopped only for that
tenant, exactly; the token found as Ray's clients find it; refusals in one line.

Without ``ray[default]`` (the dashboard's aiohttp_cors and the rest) the module skips,
except under ``CI=true`` (CI installs the ``ray`` extra, which brings it), where it fails.
"""

from __future__ import annotations

import io
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evalstop.actions import ALREADY_ENDED, DRY_RUN, REFUSED, STOPPED, USAGE
from evalstop.cli.main import main
from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore

pytest.importorskip("ray")
pytest.importorskip("psutil")

from ray_cluster import held  # noqa: E402
from ray_jobs_server import missing_dashboard, start_jobs_head  # noqa: E402

_missing = missing_dashboard()
if _missing is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must have ray[default] (the ray extra brings it): {_missing}",
                    pytrace=False)
    pytest.skip(f"{_missing}: pip install 'ray[default]'", allow_module_level=True)

SLEEP = "sleep 300"  # outlives the module; the teardown ends it with the head
ENDED = {"STOPPED", "SUCCEEDED", "FAILED"}


@pytest.fixture(scope="module")
def head():
    with held(start_jobs_head, "test head (Ray with its dashboard)") as h:
        yield h


@pytest.fixture
def env(head, tmp_path, monkeypatch):
    """The action's environment: the head's token by $RAY_AUTH_TOKEN_PATH, an empty home
    (no ~/.ray/auth_token), nothing else of Ray's."""
    for name in ("RAY_AUTH_TOKEN", "RAY_AUTH_MODE", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(head.token_path))
    return monkeypatch


def _act(head, capsys, tenant, job_id, *more):
    argv = ["action", "ray", "--address", head.dashboard, "--tenant", tenant]
    argv += ["--job-id", job_id] if job_id is not None else []
    code = main([*argv, *more])
    out, err = capsys.readouterr()
    said = (out + err).strip()
    assert len(said.splitlines()) == 1 and "Traceback" not in said, said
    return code, said


def test_only_the_owner_stops_its_running_job(head, env, capsys):
    job = head.submit(SLEEP, "rs_alice_run", {"tenant": "alice"})
    head.wait_status(job, {"RUNNING"})
    # Another tenant, a case twin, a Unicode twin (a fullwidth "a"): not alice.
    for tenant in ("bob", "Alice", "\uff41lice"):
        code, line = _act(head, capsys, tenant, job)
        assert code == REFUSED, line
        assert f"belongs to tenant 'alice', not to {tenant!r}; nothing stopped" in line
    code, line = _act(head, capsys, "alice", job, "--dry-run")
    assert code == DRY_RUN and "would stop Ray job rs_alice_run (RUNNING)" in line, line
    assert head.status(job) == "RUNNING"  # none of the above touched it

    code, line = _act(head, capsys, "alice", job, "--best-step", "300")
    assert code == STOPPED, line
    assert line == "evalstop action ray: stopped Ray job rs_alice_run (tenant alice, was " \
                   "RUNNING); best step 300"
    assert head.wait_status(job, ENDED) == "STOPPED"
    # Again (a restart after a kill): the job has ended, nothing to do.
    code, line = _act(head, capsys, "alice", job)
    assert code == ALREADY_ENDED and "is STOPPED: already ended" in line, line


def test_the_stop_reaches_the_job_through_the_watch_controller(head, env, tmp_path):
    # The whole path: the eval log's job_id, the {job_id} placeholder, the action, Ray.
    job = head.submit(SLEEP, "rs_team_a_watch", {"tenant": "team-a"})
    head.wait_status(job, {"RUNNING"})
    (tmp_path / "logs" / "team-a").mkdir(parents=True)
    with open(tmp_path / "logs" / "team-a" / "a.jsonl", "w") as fh:
        for step, ev in enumerate([0.1, 0.3, 0.5, 0.4, 0.2], 1):
            fh.write(json.dumps({"job": "run-7", "step": step * 100, "eval": ev,
                                 "job_id": job}) + "\n")
    store = StateStore(str(tmp_path / "s.db"))
    ctl = Controller(store, [JsonlDirSource(str(tmp_path / "logs"))],
                     detector="evalstop:k=2", err=io.StringIO(), out=io.StringIO(),
                     action=ShellAction(f"{sys.executable} -m evalstop action ray --address "
                                        f"{head.dashboard} --tenant {{tenant}} "
                                        "--job-id {job_id} --best-step {best_step}"))
    ctl.run_until_idle()
    (row,) = store.actions()
    ctl.close()
    assert (row.status, row.rc) == ("done", STOPPED), row.output
    assert f"stopped Ray job {job} (tenant team-a, was RUNNING); best step 300" in row.output
    assert head.wait_status(job, ENDED) == "STOPPED"


@pytest.fixture(scope="module")
def finished(head):
    """A job of alice's that has run to its end, and one that names no tenant."""
    done = head.submit("true", "rs_alice_done", {"tenant": "alice"})
    nobody = head.submit("true", "rs_nobody", {"owner": "alice"})
    head.wait_status(done, ENDED)
    head.wait_status(nobody, ENDED)
    return done, nobody


@pytest.mark.parametrize("tenant, which, code, said", [
    ("alice", 0, ALREADY_ENDED, "Ray job rs_alice_done is SUCCEEDED: already ended"),
    ("bob", 0, REFUSED, "belongs to tenant 'alice', not to 'bob'"),  # owner checked first
    ("alice", 1, REFUSED, "belongs to tenant None"),  # no tenant metadata: nobody's
])
def test_a_finished_or_unowned_job_is_not_stopped(head, env, capsys, finished, tenant, which,
                                                  code, said):
    got, line = _act(head, capsys, tenant, finished[which])
    assert got == code and said in line, line


@pytest.mark.parametrize("job_id, code, said", [
    ("rs_never_submitted", REFUSED, "Ray knows no job at /api/jobs/rs_never_submitted"),
    (None, USAGE, "no job id"),
    ("", USAGE, "no job id"),
    ("rs_a,rs_b", USAGE, "--job-id"),
])
def test_an_unknown_or_missing_id_stops_nothing(head, env, capsys, job_id, code, said):
    got, line = _act(head, capsys, "alice", job_id)
    assert got == code and said in line, line


def _token_home(env, tmp_path, token):
    (tmp_path / "home" / ".ray").mkdir(parents=True)
    (tmp_path / "home" / ".ray" / "auth_token").write_text(token + "\n")
    env.delenv("RAY_AUTH_TOKEN_PATH", raising=False)


def test_the_token_is_found_where_rays_clients_find_it(head, env, capsys, finished,
                                                       tmp_path):
    # finished[0] has ended: a query that passes the dashboard's auth answers exit 10.
    env.delenv("RAY_AUTH_TOKEN_PATH")
    env.setenv("RAY_AUTH_TOKEN", f"  {head.token}\n")  # Ray trims it too
    assert _act(head, capsys, "alice", finished[0])[0] == ALREADY_ENDED
    env.delenv("RAY_AUTH_TOKEN")
    _token_home(env, tmp_path, head.token)
    assert _act(head, capsys, "alice", finished[0])[0] == ALREADY_ENDED
    # $RAY_AUTH_TOKEN comes first, as in Ray.
    env.setenv("RAY_AUTH_TOKEN", "0" * 64)
    code, line = _act(head, capsys, "alice", finished[0])
    assert code == REFUSED and "refused the token from $RAY_AUTH_TOKEN (HTTP 403" in line


@pytest.mark.parametrize("setup, said", [
    ("none", "refused no token (none found) (HTTP 401 to GET /api/jobs/rs_alice_done)"),
    ("wrong file", "refused the token from $RAY_AUTH_TOKEN_PATH"),
    ("wrong home", "refused the token from ~/.ray/auth_token (HTTP 403"),
    ("missing file", "is missing or empty; nothing stopped"),
    ("two words", "is not one line of printable ASCII"),
    ("disabled", "refused no token (none found) (HTTP 401"),
])
def test_a_refused_or_unusable_token_is_one_line(head, env, capsys, finished, tmp_path,
                                                 setup, said):
    if setup == "none":
        env.delenv("RAY_AUTH_TOKEN_PATH")
    elif setup in ("wrong file", "missing file", "two words"):
        path = tmp_path / "token"
        if setup != "missing file":
            path.write_text("f" * 64 if setup == "wrong file" else "a b\n")
        env.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    elif setup == "wrong home":
        _token_home(env, tmp_path, "e" * 64)
    else:  # auth turned off on this side: no token sent, even though one is there
        env.setenv("RAY_AUTH_MODE", "disabled")
    code, line = _act(head, capsys, "alice", "rs_alice_done")
    assert code == REFUSED and said in line, line
    assert "nothing stopped" in line


class _NotRay(BaseHTTPRequestHandler):
    """A web server that is not a Ray dashboard: HTML, or JSON of the wrong shape."""

    answers = {"/api/jobs/html": b"<html>login</html>", "/api/jobs/list": b"[1, 2]",
               "/api/jobs/meta": json.dumps({"status": "RUNNING",
                                             "metadata": ["tenant", "alice"]}).encode()}

    def do_GET(self):  # noqa: N802
        data = self.answers.get(self.path, b"{")
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.mark.parametrize("job_id, said", [
    ("html", "Ray's answer to GET /api/jobs/html is not JSON"),
    ("cut", "Ray's answer to GET /api/jobs/cut is not JSON"),
    ("list", "is not a JSON object"),
    ("meta", "belongs to tenant None"),
])
def test_a_malformed_answer_is_one_line(env, capsys, job_id, said):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotRay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        code = main(["action", "ray", "--address",
                     f"http://127.0.0.1:{server.server_address[1]}", "--tenant", "alice",
                     "--job-id", job_id])
    finally:
        server.shutdown()
        server.server_close()
    out, err = capsys.readouterr()
    assert code == REFUSED and said in err and len(err.strip().splitlines()) == 1, err
    assert out == ""
