"""``evalstop watch --mlflow``: a real ``mlflow server`` on 127.0.0.1 (SQLite store, started
and stopped by this module, by process group id), two experiments as two tenants, a
declining run stopped and tagged, incremental reads, restarts and hostile values."""

from __future__ import annotations

import io
import json
import math
import os
import sys

import pytest
from mlflow_server import ENV, MlflowServer, free_port

os.environ.update(ENV)
mlflow = pytest.importorskip("mlflow")

from evalstop.cli.main import main
from evalstop.integrations.watch import Controller, StateStore
from evalstop.integrations.watch.mlflow_source import MlflowSource, check_uri, display_uri
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


def _controller(server, db, *, tenancy=None, metric="eval", detector="evalstop:k=2",
                policy=None):
    err, out = io.StringIO(), io.StringIO()
    src = MlflowSource(server.uri, metric=metric, tenancy=tenancy)
    rules = {"policy": policy} if policy is not None else {"detector": detector}
    ctl = Controller(StateStore(str(db)), [src], **rules, err=err, out=out)
    return ctl, src, err, out


def test_two_experiments_a_declining_run_is_stopped_and_tagged(server, client, tmp_path,
                                                               capsys):
    a = _experiment(client, "teamA-main")
    b = _experiment(client, "teamB-main")
    hacked = _run(client, a, "rl-grpo", PEAK)
    healthy = _run(client, b, "rl-grpo", UP)  # the same run name, another experiment
    db = tmp_path / "state.db"
    rc = main(["watch", "--mlflow", server.uri, "--db", str(db), "--once", *K2,
               "--action", "echo stopping {job} of {tenant} at {best_step}"])
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
    assert set(jobs) >= {"teamA-main", "teamB-main"}
    stopped, running = jobs["teamA-main"], jobs["teamB-main"]
    assert stopped["job"] == running["job"] == "rl-grpo"
    assert stopped["source"].endswith(f"#{a}/{hacked}")
    assert (stopped["stopped"], stopped["stop_step"], stopped["best_step"]) == (True, 50, 30)
    assert running["stopped"] is False and running["last_step"] == 60
    # The action ran, and what it printed is in the status.
    assert stopped["action"] == "done" and stopped["action_rc"] == 0
    assert stopped["action_output"].strip() == "stopping rl-grpo of teamA-main at 30"


def test_reads_incrementally_and_resumes(server, client, tmp_path):
    exp = _experiment(client, "inc-team")
    r1 = _run(client, exp, "r1", PEAK[:3])
    r2 = _run(client, exp, "r2", UP[:3])
    db = tmp_path / "state.db"
    tenancy = PolicyTenancy(_policy(tmp_path, "inc", "inc-team/**"))
    ctl, src, err, _ = _controller(server, db, tenancy=tenancy,
                                   policy=tenancy.policy)
    ctl.run_until_idle()
    assert src.fetches == 2
    assert ctl.poll_once().fed == []
    assert src.fetches == 2  # nothing new: no run's history was read again
    client.log_metric(r1, "eval", PEAK[3], step=40)
    fed = ctl.poll_once().fed
    assert [(r.job, r.step) for r in fed] == [("r1", 40)]
    assert src.fetches == 3  # only the run that moved
    ctl.close()

    # Restart: the marks come back with the state; nothing is read or fed twice.
    ctl, src, err, _ = _controller(server, db, tenancy=tenancy, policy=tenancy.policy)
    assert ctl.poll_once().fed == []
    assert src.fetches == 0
    client.log_metric(r1, "eval", PEAK[4], step=50)
    client.log_metric(r2, "eval", UP[3], step=40)
    ctl.run_until_idle()
    assert src.fetches == 2
    stopped = {k.name: j.detector.stopped for k, j in ctl.jobs.items()}
    assert stopped == {"r1": True, "r2": False}
    assert _tags(client, r1)["evalstop.stop_step"] == "50"
    # A stopped run's later points are never read, and its tags are not rewritten.
    client.log_metric(r1, "eval", 0.9, step=60)
    ctl.poll_once()
    assert src.fetches == 2
    assert _own_lines(err) == []
    ctl.close()


def _own_lines(err):
    """What a controller said, less the runs of other tests' experiments (one server is
    shared by the module), which its policy refuses, one line each."""
    return [x for x in err.getvalue().splitlines() if "no tenant of policy" not in x]


def _policy(tmp_path, tenant, glob, metric="eval"):
    path = tmp_path / f"{tenant}.toml"
    path.write_text(f'[defaults]\ndetector = "evalstop:k=2"\nmetric = "{metric}"\n'
                    f'[tenants.{tenant}]\nsources = ["{glob}"]\n')
    return load_policy(str(path))


def test_tags_are_written_again_when_missing(server, client, tmp_path):
    exp = _experiment(client, "repair-team")
    run = _run(client, exp, "r", PEAK)
    db = tmp_path / "state.db"
    tenancy = PolicyTenancy(_policy(tmp_path, "rep", "repair-team/**"))
    ctl, src, err, _ = _controller(server, db, tenancy=tenancy, policy=tenancy.policy)
    src.on_stop = lambda key, decision: "down"  # the write-back fails once
    ctl.run_until_idle()
    assert "down" in err.getvalue()
    assert _tags(client, run) == {}
    ctl.close()
    ctl, src, err, _ = _controller(server, db, tenancy=tenancy, policy=tenancy.policy)
    ctl.poll_once()  # a restarted controller finds the stopped run untagged: tags it
    assert _tags(client, run)["evalstop.stopped"] == "true"
    ctl.close()


def test_hostile_values_cost_one_line_each(server, client, tmp_path):
    exp = _experiment(client, "hostile-team")
    run = client.create_run(exp, run_name="bad-values").info.run_id
    for step, v in [(10, 0.1), (20, math.nan), (30, 0.3), (2**60, 0.4), (40, 0.2)]:
        client.log_metric(run, "eval", v, step=step)
    _run(client, exp, "\x1b[2Jevil", PEAK)  # a terminal escape in a run name
    _run(client, exp, "-rf", PEAK)  # would read as an option to a scheduler command
    db = tmp_path / "state.db"
    tenancy = PolicyTenancy(_policy(tmp_path, "hos", "hostile-team/**"))
    ctl, _src, err, _ = _controller(server, db, tenancy=tenancy, policy=tenancy.policy)
    ctl.run_until_idle()
    ctl.poll_once()
    lines = _own_lines(err)
    assert len([x for x in lines if "2**53" in x]) == 1
    assert len([x for x in lines if "control or non-text" in x]) == 1
    assert len([x for x in lines if "starts with '-'" in x]) == 1
    assert "\x1b" not in err.getvalue()
    assert len(lines) == 3
    job = next(j for k, j in ctl.jobs.items() if k.name == "bad-values")
    # 10, 30, 40 are evals; the NaN at 20 is taken without a line and ignored by the rule.
    assert job.last_step == 40 and job.detector.state_dict()["n_evals"] == 3
    assert ctl.refused["step"] == 1 and ctl.refused["name"] == 2
    ctl.close()


def test_tenant_from_the_policy_and_refused_experiments(server, client, tmp_path):
    mine = _experiment(client, "proj-alice")
    other = _experiment(client, "proj-mallory")
    _run(client, mine, "job1", PEAK, key="val-core/gsm8k/reward/mean_at_1")
    _run(client, other, "job1", PEAK, key="val-core/gsm8k/reward/mean_at_1")
    policy = _policy(tmp_path, "alice", "proj-alice/**",
                     metric="val-core/gsm8k/reward/mean_at_1")
    ctl, _src, err, _ = _controller(server, tmp_path / "s.db", tenancy=PolicyTenancy(policy),
                                   policy=policy)
    ctl.run_until_idle()
    tenants = {(j.tenant, k.name, j.detector.stopped) for k, j in ctl.jobs.items()}
    assert tenants == {("alice", "job1", True)}
    assert "proj-mallory" in err.getvalue() and "no tenant of policy" in err.getvalue()
    ctl.close()


def test_unreachable_server_is_one_line(tmp_path):
    src = MlflowSource(f"http://127.0.0.1:{free_port()}")
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], err=(err := io.StringIO()),
                     out=io.StringIO())
    ctl.poll_once()
    ctl.poll_once()
    lines = err.getvalue().splitlines()
    assert len(lines) == 1 and "cannot list experiments" in lines[0]
    ctl.close()


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


def test_missing_extra_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    rc = main(["watch", "--mlflow", "http://127.0.0.1:1", "--db", str(tmp_path / "s.db"),
               "--once"])
    assert rc == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [("evalstop: error: evalstop watch --mlflow needs mlflow: "
                    "pip install 'evalstop[mlflow]'")]
