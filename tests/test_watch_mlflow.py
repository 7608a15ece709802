"""``evalstop watch --mlflow``: a real ``mlflow server`` on 127.0.0.1 (SQLite store, started
and stopped by this module, by process group id), experiments owned by tenants through the
policy (by id), a declining run stopped and tagged, incremental reads, restarts and
hostile values; the attacks of a tenant on another (experiment names, renames, floods,
a dead server beside JSONL) and the credentials of the URI. Ownership by MLflow
permission, on a server with MLflow's basic-auth app: tests/test_watch_mlflow_auth.py."""

from __future__ import annotations

import io
import json
import math
import os
import socket
import subprocess
import sys
import time

import pytest
from mlflow_server import ENV, HOST, MlflowServer, free_port

os.environ.update(ENV)
mlflow = pytest.importorskip("mlflow")

from evalstop.cli.main import main
from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.mlflow_budget import MlflowBudget
from evalstop.integrations.watch.mlflow_source import MlflowSource, check_uri, display_uri
from evalstop.integrations.watch.observe import Health
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]  # evalstop:k=2 stops at the 5th eval, best the 3rd
UP = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
K2 = ["--detector", "evalstop:k=2"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow")).start()
    yield srv
    srv.stop()
    assert srv.proc is None


@pytest.fixture
def client(server):
    return mlflow.MlflowClient(server.uri)


def _experiment(client, name):
    return client.create_experiment(name)


def _run(client, exp_id, name, values, *, key="eval", first_step=10, every=10):
    run = client.create_run(exp_id, run_name=name)
    for i, v in enumerate(values):
        client.log_metric(run.info.run_id, key, v, step=first_step + i * every)
    return run.info.run_id


def _tags(client, run_id):
    return {k: v for k, v in client.get_run(run_id).data.tags.items()
            if k.startswith("evalstop.")}


def _policy_file(tmp_path, tenants, metric="eval", action=None):
    """A policy giving each tenant the MLflow experiments listed: {tenant: [ids]}."""
    path = tmp_path / f"policy-{len(list(tmp_path.iterdir()))}.toml"
    lines = ['[defaults]', 'detector = "evalstop:k=2"', f'metric = "{metric}"']
    if action is not None:
        lines.append(f"action = {json.dumps(action)}")
    for tenant, ids in tenants.items():
        lines += [f"[tenants.{tenant}]", f"mlflow_experiments = {json.dumps(list(ids))}"]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# The budget's time limits are for production; tests count requests and points.
ROOMY = {"seconds": 60.0, "server_seconds": 120.0}


def _controller(server, db, policy_path, *, budget=None, wait=None, extra=()):
    policy = load_policy(policy_path)
    budget = budget if budget is not None else MlflowBudget(**ROOMY)
    err, out = io.StringIO(), io.StringIO()
    src = MlflowSource(server.uri, tenancy=PolicyTenancy(policy), budget=budget, wait=wait)
    ctl = Controller(StateStore(str(db)), [src, *extra], policy=policy, err=err, out=out)
    return ctl, src, err, out


def _own_lines(err):
    """What a controller said, less the experiments of other tests (one server is shared
    by the module), which no tenant of its policy owns: one line each."""
    return [x for x in err.getvalue().splitlines() if "nobody's" not in x]


def test_two_tenants_a_declining_run_is_stopped_and_tagged(server, client, tmp_path,
                                                           capsys):
    a = _experiment(client, "teamA-main")
    b = _experiment(client, "teamB-main")
    hacked = _run(client, a, "rl-grpo", PEAK)
    healthy = _run(client, b, "rl-grpo", UP)  # the same run name, another experiment
    db = tmp_path / "state.db"
    policy = _policy_file(tmp_path, {"teamA": [a], "teamB": [b]},
                          action="echo stopping {job} of {tenant} at {best_step}")
    rc = main(["watch", "--mlflow", server.uri, "--db", str(db), "--once",
               "--policy", policy])
    assert rc == 0
    tags = _tags(client, hacked)
    assert tags["evalstop.stopped"] == "true"
    assert (tags["evalstop.stop_step"], tags["evalstop.best_step"]) == ("50", "30")
    assert float(tags["evalstop.best_score"]) == 0.5
    assert "declin" in tags["evalstop.reason"]
    assert _tags(client, healthy) == {}  # a run of another experiment is never touched
    capsys.readouterr()

    assert main(["watch", "--status", "--db", str(db), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    jobs = {r["tenant"]: r for r in rows if "job" in r}
    assert set(jobs) == {"teamA", "teamB"}
    stopped, running = jobs["teamA"], jobs["teamB"]
    assert (stopped["job"], running["job"]) == (hacked, healthy)  # keyed by run id
    assert stopped["source"].endswith(f"#{a}/{hacked}")
    assert (stopped["stopped"], stopped["stop_step"], stopped["best_step"]) == (True, 50, 30)
    assert running["stopped"] is False and running["last_step"] == 60
    assert stopped["action"] == "done" and stopped["action_rc"] == 0
    assert stopped["action_output"].strip() == f"stopping {hacked} of teamA at 30"


def test_mlflow_needs_a_policy(server, tmp_path, capsys):
    rc = main(["watch", "--mlflow", server.uri, "--db", str(tmp_path / "s.db"), "--once"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--mlflow needs --policy" in err[0]


def test_reads_incrementally_and_resumes(server, client, tmp_path):
    exp = _experiment(client, "inc-team")
    r1 = _run(client, exp, "r1", PEAK[:3])
    r2 = _run(client, exp, "r2", UP[:3])
    db = tmp_path / "state.db"
    policy = _policy_file(tmp_path, {"inc": [exp]})
    ctl, src, err, _ = _controller(server, db, policy)
    ctl.run_until_idle()
    assert src.fetches == 2
    assert ctl.poll_once().fed == []
    assert src.fetches == 2  # nothing new: no run's history was read again
    client.log_metric(r1, "eval", PEAK[3], step=40)
    fed = ctl.poll_once().fed
    assert [(r.job, r.step) for r in fed] == [(r1, 40)]
    assert src.fetches == 3  # only the run that moved
    ctl.close()

    # Restart: the marks come back with the state; nothing is read or fed twice.
    ctl, src, err, _ = _controller(server, db, policy)
    assert ctl.poll_once().fed == []
    assert src.fetches == 0
    client.log_metric(r1, "eval", PEAK[4], step=50)
    client.log_metric(r2, "eval", UP[3], step=40)
    ctl.run_until_idle()
    assert src.fetches == 2
    stopped = {k.name: j.detector.stopped for k, j in ctl.jobs.items()}
    assert stopped == {r1: True, r2: False}
    assert _tags(client, r1)["evalstop.stop_step"] == "50"
    # A stopped run's later points are never read, and its tags are not rewritten.
    client.log_metric(r1, "eval", 0.9, step=60)
    ctl.poll_once()
    assert src.fetches == 2
    assert _own_lines(err) == []
    ctl.close()


def test_tags_are_written_again_when_missing(server, client, tmp_path):
    exp = _experiment(client, "repair-team")
    run = _run(client, exp, "r", PEAK)
    db = tmp_path / "state.db"
    policy = _policy_file(tmp_path, {"rep": [exp]})
    ctl, src, err, _ = _controller(server, db, policy)
    src.on_stop = lambda key, decision: "down"  # the write-back fails once
    ctl.run_until_idle()
    assert "down" in err.getvalue()
    assert _tags(client, run) == {}
    ctl.close()
    ctl, src, err, _ = _controller(server, db, policy)
    ctl.poll_once()  # a restarted controller finds the stopped run untagged: tags it
    assert _tags(client, run)["evalstop.stopped"] == "true"
    ctl.close()


def test_hostile_values_cost_one_line_each(server, client, tmp_path):
    exp = _experiment(client, "hostile-team")
    run = client.create_run(exp, run_name="\x1b[2Jevil").info.run_id
    # MLflow stores an infinite value as the largest float (1.797e308): not a score.
    for step, v in [(10, 0.1), (20, math.nan), (30, 0.3), (2**60, 0.4), (40, 0.2),
                    (50, math.inf), (60, -math.inf), (70, 0.25)]:
        client.log_metric(run, "eval", v, step=step)
    policy = _policy_file(tmp_path, {"hos": [exp]})
    ctl, _src, err, _ = _controller(server, tmp_path / "state.db", policy)
    ctl.run_until_idle()
    ctl.poll_once()
    lines = _own_lines(err)
    assert len([x for x in lines if "2**53" in x]) == 1
    assert len([x for x in lines if "'eval' is infinite" in x]) == 2
    assert "\x1b" not in err.getvalue()  # run names are never read, let alone shown
    assert len(lines) == 3
    job = ctl.jobs[next(iter(ctl.jobs))]
    # 10, 30, 40, 70 are evals; the NaN at 20 is taken without a line, ignored by the rule.
    assert job.last_step == 70 and job.detector.state_dict()["n_evals"] == 4
    assert job.detector.best_score == 0.3
    assert ctl.refused["step"] == 1 and ctl.refused["value"] == 2
    ctl.close()


def test_experiment_names_claim_nothing(server, client, tmp_path):
    """An experiment named after a tenant (``alice/evil``, ``Alice``) is nobody's until
    the policy lists its id: said once, never read."""
    mine = _experiment(client, "alice")
    _run(client, mine, "job1", UP)
    claims = [_experiment(client, "alice/evil"), _experiment(client, "Alice")]
    for exp in claims:
        _run(client, exp, "alice-train", PEAK)
    policy = _policy_file(tmp_path, {"alice": [mine]})
    ctl, src, err, _ = _controller(server, tmp_path / "s.db", policy)
    ctl.run_until_idle()
    ctl.poll_once()
    assert {(j.tenant, k.source.rsplit("#", 1)[1].split("/")[0], j.detector.stopped)
            for k, j in ctl.jobs.items()} == {("alice", mine, False)}
    assert src.fetches == 1  # the claimed experiments' runs were never read
    said = err.getvalue().splitlines()
    for exp in claims:
        assert len([x for x in said if f"experiment {exp} " in x]) == 1
    assert all("nobody's" in x for x in said)
    ctl.close()


def test_a_renamed_run_is_the_same_job(server, client, tmp_path):
    exp = _experiment(client, "rename-team")
    run = _run(client, exp, "before", PEAK[:5])
    policy = _policy_file(tmp_path, {"ren": [exp]}, action="echo stop {job}")
    ctl, _src, _err, out = _controller(server, tmp_path / "s.db", policy)
    ctl.run_until_idle()
    client.update_run(run, name="after")
    for i, v in enumerate([0.1, 0.05, 0.01]):
        client.log_metric(run, "eval", v, step=60 + 10 * i)
    ctl.run_until_idle()
    assert len(ctl.jobs) == 1
    assert [a.status for a in ctl.store.actions()] == ["done"]
    assert out.getvalue().count("stop ") - out.getvalue().count("action exited") == 1
    ctl.close()


def test_a_run_tagged_with_its_job_id_hands_it_to_the_action(server, client, tmp_path):
    """The run tag ``evalstop.job_id`` is the scheduler job a stop acts on ({job_id}); a
    tag that is no job id renders nothing, which the shipped actions refuse."""
    exp = _experiment(client, "jobid-team")
    tagged = _run(client, exp, "tagged", PEAK[:5])
    client.set_tag(tagged, "evalstop.job_id", "4242_3")
    bad = _run(client, exp, "bad", PEAK[:5])
    client.set_tag(bad, "evalstop.job_id", "1; scancel -u alice")
    policy = _policy_file(tmp_path, {"jid": [exp]}, action="echo id={job_id}")
    ctl, _src, _err, _out = _controller(server, tmp_path / "s.db", policy)
    ctl.run_until_idle()
    ctl.drain()
    got = {a.job: a.output.strip() for a in ctl.store.actions()}
    assert got == {tagged: "id=4242_3", bad: "id="}
    ctl.close()


def test_an_ended_run_is_recorded_not_acted_on(server, client, tmp_path):
    exp = _experiment(client, "ended-team")
    finished = _run(client, exp, "done", PEAK)
    client.set_terminated(finished, "FINISHED")
    policy = _policy_file(tmp_path, {"end": [exp]}, action="echo stop {job}")
    ctl, _src, _err, _out = _controller(server, tmp_path / "s.db", policy)
    ctl.run_until_idle()
    (job,) = ctl.jobs.values()
    assert job.detector.stopped  # the decision is recorded...
    (row,) = ctl.store.actions()
    assert row.status == "skipped" and "ended (FINISHED)" in row.output  # ...not acted on
    ctl.poll_once()
    assert _tags(client, finished) == {}
    ctl.close()


def test_a_huge_history_is_read_a_page_at_a_time(server, client, tmp_path):
    """5,000 points, 400 a poll (pages of 100): each poll reads at most the tenant's
    share, every point is fed once, in order, none lost."""
    exp = _experiment(client, "huge-team")
    run = client.create_run(exp).info.run_id
    from mlflow.entities import Metric

    t0 = int(time.time() * 1000)
    for lo in range(0, 5000, 1000):
        client.log_batch(run, [Metric("eval", 1.0 + s, t0 + s, s) for s in range(lo, lo + 1000)])
    policy = _policy_file(tmp_path, {"huge": [exp]})
    budget = MlflowBudget(points=400, page=100, **ROOMY)
    ctl, src, err, _ = _controller(server, tmp_path / "s.db", policy, budget=budget)
    steps, polls = [], 0
    while True:
        res = ctl.poll_once()
        polls += 1
        assert len(res.fed) <= 400
        steps += [r.step for r in res.fed]
        if not res.progressed:
            break
    assert steps == list(range(5000))
    assert polls >= 5000 // 400 and src.fetches >= 50
    assert _own_lines(err) == [] or all("budget" in x for x in _own_lines(err))
    ctl.close()


def test_a_flood_of_runs_leaves_the_quiet_tenant_its_share(server, client, tmp_path):
    """Tenant ``flood`` has 30 runs moving on every poll; tenant ``quiet``'s new point is
    still read in the poll after it is logged."""
    flood = _experiment(client, "flood-team")
    quiet = _experiment(client, "quiet-team")
    runs = [_run(client, flood, f"f{i}", [0.5]) for i in range(30)]
    q = _run(client, quiet, "q", [0.1])
    policy = _policy_file(tmp_path, {"flood": [flood], "quiet": [quiet]})
    budget = MlflowBudget(requests=6, **ROOMY)  # a listing, 5 history reads a poll
    ctl, src, err, _ = _controller(server, tmp_path / "s.db", policy, budget=budget)
    ctl.poll_once()
    for step in range(20, 60, 10):
        for r in runs:
            client.log_metric(r, "eval", 0.5 + step / 1000, step=step)
        client.log_metric(q, "eval", step / 100, step=step)
        res = ctl.poll_once()
        assert [(r.job, r.step) for r in res.fed if r.job == q] == [(q, step)]
        assert len({r.job for r in res.fed if r.job != q}) <= 5  # runs read this poll
    ctl.run_until_idle()  # the flood's backlog drains over the next polls
    flood_fed = {k.name: j.last_step for k, j in ctl.jobs.items() if k.name != q}
    assert flood_fed == {r: 50 for r in runs}  # nothing lost
    ctl.close()


def test_unreachable_server_is_one_line(tmp_path):
    policy = load_policy(_policy_file(tmp_path, {"t": ["1"]}))
    src = MlflowSource(f"http://127.0.0.1:{free_port()}", tenancy=PolicyTenancy(policy),
                       wait=None)
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], policy=policy,
                     err=(err := io.StringIO()), out=io.StringIO())
    ctl.poll_once()
    ctl.poll_once()
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "cannot list experiments" in lines[0]
    ctl.close()


def test_a_dead_server_holds_up_only_itself(tmp_path):
    """A server that accepts and never answers, beside a JSONL folder: the JSONL records
    are fed, the stuck source is said once and named by /healthz."""
    dead = socket.socket()
    dead.bind((HOST, 0))
    dead.listen(64)  # connections complete in the backlog; nothing ever answers
    try:
        logs = tmp_path / "logs" / "j"
        logs.mkdir(parents=True)
        (logs / "a.jsonl").write_text('{"job": "a", "step": 1, "eval": 0.5}\n')
        policy_path = tmp_path / "p.toml"
        policy_path.write_text('[tenants.j]\n[tenants.m]\nmlflow_experiments = ["1"]\n')
        policy = load_policy(str(policy_path))
        tenancy = PolicyTenancy(policy)
        src = MlflowSource(f"http://{HOST}:{dead.getsockname()[1]}", tenancy=tenancy,
                           wait=0.1, stuck_after=0.3)
        jsonl = JsonlDirSource(str(tmp_path / "logs"), tenancy=tenancy)
        health = Health(60.0, sources=[src])
        ctl = Controller(StateStore(str(tmp_path / "s.db")), [src, jsonl], policy=policy,
                         err=(err := io.StringIO()), out=io.StringIO(), health=health)
        assert [r.job for r in ctl.poll_once().fed] == ["a"]
        time.sleep(0.5)
        with open(logs / "a.jsonl", "a") as fh:
            fh.write('{"job": "a", "step": 2, "eval": 0.6}\n')
        assert [r.step for r in ctl.poll_once().fed] == [2]
        ctl.poll_once()
        ok, why = health.check()
        assert not ok and why.startswith(f"source stuck: mlflow:http://{HOST}:")
        said = [x for x in err.getvalue().splitlines() if "no answer" in x]
        assert len(said) == 1 and "the other sources go on" in said[0]
    finally:
        dead.close()  # the source's request fails: its poll ends, the server still down
    while ctl.poll_once().backlog or src._worker.running_for() is not None:
        time.sleep(0.1)
    ctl.poll_once()
    lines = err.getvalue().splitlines()
    assert len([x for x in lines if "no answer" in x]) == 1
    assert len([x for x in lines if "cannot list experiments" in x]) == 1
    assert not any("answering again" in x for x in lines)  # a failed poll is no answer
    ctl.close()


def test_the_password_is_never_printed(tmp_path):
    """MLflow's own error text holds the URI it was given, user:password@ included."""
    policy = _policy_file(tmp_path, {"t": ["1"]})
    uri = f"http://alice:S3cretPassw0rd@127.0.0.1:{free_port()}"
    proc = subprocess.run(
        [sys.executable, "-m", "evalstop", "watch", "--mlflow", uri, "--policy", policy,
         "--db", str(tmp_path / "s.db"), "--once"],
        capture_output=True, text=True, timeout=300, env={**os.environ, **ENV})
    assert proc.returncode == 0
    assert "cannot list experiments" in proc.stderr
    assert "S3cretPassw0rd" not in proc.stderr + proc.stdout
    assert "alice:" not in proc.stderr + proc.stdout


@pytest.mark.parametrize("uri, match", [
    ("ftp://host/x", "not a tracking URI"),
    ("sqlite:////nonexistent/mlruns.db", "no such SQLite file"),
    ("", "must be a tracking URI"),
])
def test_bad_uris(uri, match):
    with pytest.raises(ValueError, match=match):
        check_uri(uri)


def test_credentials_never_shown():
    assert display_uri("http://user:secret@127.0.0.1:5000") == "http://127.0.0.1:5000"
    with pytest.raises(ValueError) as exc:
        check_uri("ftp://user:secret@host/x")
    assert "secret" not in str(exc.value)


def test_missing_extra_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    rc = main(["watch", "--mlflow", "http://127.0.0.1:1", "--db", str(tmp_path / "s.db"),
               "--once"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [("evalstop: error: evalstop watch --mlflow needs mlflow: "
                    "pip install 'evalstop[mlflow]'")]


@pytest.mark.parametrize("body, match", [
    ('[defaults]\nmlflow_experiments = ["1"]\n[tenants.a]\n', "a tenant's own key"),
    ('[tenants.a]\nmlflow_experiments = ["1"]\n[tenants.b]\nmlflow_experiments = [1]\n',
     "'1' is already tenant a's"),
    ('[tenants.a]\nmlflow_user = "u"\n[tenants.b]\nmlflow_user = "u"\n',
     "'u' is already tenant a's"),
    ('[tenants.a]\nmlflow_experiments = ["../x"]\n', "experiment ids"),
    ('[tenants.a]\nmlflow_user = ""\n', "MLflow user name"),
])
def test_policy_ownership_keys_are_checked(tmp_path, body, match):
    from evalstop.integrations.watch.policy import PolicyError

    path = tmp_path / "p.toml"
    path.write_text(body)
    with pytest.raises(PolicyError, match=match):
        load_policy(str(path))


def test_every_form_of_the_password_is_cut():
    """As given (URL-encoded), decoded, inside user:password@, and as a Basic-auth token."""
    import base64

    from evalstop.integrations.watch.redact import Redactor

    redact = Redactor("http://al:p%40ss%3Aw0rd@h:1")
    token = base64.b64encode(b"al:p@ss:w0rd").decode()
    said = redact(f"GET http://al:p%40ss%3Aw0rd@h:1/api failed; pw p@ss:w0rd; Basic {token}")
    assert "p%40ss" not in said and "p@ss" not in said and token not in said
    assert said.startswith("GET http://***h:1/api failed")
    assert Redactor("http://h:1")("nothing to cut") == "nothing to cut"
