"""MLflow ownership by permission: a real ``mlflow server`` with MLflow's basic-auth app on
127.0.0.1 (users, per-experiment permissions), started and stopped by this module by
process group id. The controller logs in as the admin; each tenant's ``mlflow_user`` owns
the experiments that user may write, whatever they are named."""

from __future__ import annotations

import io
import os

import pytest
from mlflow_server import ADMIN, ADMIN_PASSWORD, ENV, MlflowServer

os.environ.update(ENV)
mlflow = pytest.importorskip("mlflow")
pytest.importorskip("flask_wtf")  # MLflow's auth app needs it (evalstop[mlflow] has it)

from evalstop.integrations.watch import Controller, StateStore
from evalstop.integrations.watch.mlflow_budget import MlflowBudget
from evalstop.integrations.watch.mlflow_source import MlflowSource
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]  # evalstop:k=2 stops at the 5th eval
PASSWORDS = {"alice": "alice-password-1", "bob": "bob-password-22",
             "mallory": "mallory-password-3"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = MlflowServer(tmp_path_factory.mktemp("mlflow-auth"), auth=True).start()
    from mlflow.server.auth.client import AuthServiceClient

    admin = AuthServiceClient(srv.user_uri(ADMIN, ADMIN_PASSWORD))
    for user, password in PASSWORDS.items():
        admin.create_user(user, password)
    yield srv
    srv.stop()


def _as(server, user):
    return mlflow.MlflowClient(server.user_uri(user, PASSWORDS[user]))


def _declining_run(client, exp_id):
    run = client.create_run(exp_id, run_name="alice-train").info.run_id
    for i, v in enumerate(PEAK):
        client.log_metric(run, "eval", v, step=10 * (i + 1))
    return run


def _controller(server, tmp_path):
    path = tmp_path / "policy.toml"
    path.write_text('[defaults]\ndetector = "evalstop:k=2"\naction = "echo stop {job}"\n'
                    '[tenants.alice]\nmlflow_user = "alice"\n'
                    '[tenants.bob]\nmlflow_user = "bob"\n')
    policy = load_policy(str(path))
    src = MlflowSource(server.user_uri(ADMIN, ADMIN_PASSWORD), tenancy=PolicyTenancy(policy),
                       wait=None, budget=MlflowBudget(seconds=60.0, server_seconds=120.0))
    err = io.StringIO()
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], policy=policy, err=err,
                     out=io.StringIO())
    return ctl, src, err


def test_owner_is_who_may_write_never_the_name(server, tmp_path):
    alice, bob, mallory = (_as(server, u) for u in ("alice", "bob", "mallory"))
    mine = alice.create_experiment("alice-main")
    runs = {"alice": _declining_run(alice, mine)}
    # Experiments named for alice by others: bob's are bob's; mallory is no tenant's user.
    evil = bob.create_experiment("alice/evil")
    runs["bob"] = _declining_run(bob, evil)
    twin = mallory.create_experiment("Alice")
    runs["mallory"] = _declining_run(mallory, twin)
    # An experiment both tenants' users may write is nobody's (bob's grant to alice would
    # otherwise make his runs pass for hers).
    shared = bob.create_experiment("shared")
    from mlflow.server.auth.client import AuthServiceClient

    AuthServiceClient(server.user_uri("bob", PASSWORDS["bob"])).grant_user_permission(
        "alice", "experiment", shared, "EDIT")
    runs["shared"] = _declining_run(bob, shared)

    ctl, src, err = _controller(server, tmp_path)
    ctl.run_until_idle()
    owners = {k.name: j.tenant for k, j in ctl.jobs.items()}
    assert owners == {runs["alice"]: "alice", runs["bob"]: "bob"}
    assert all(j.detector.stopped for j in ctl.jobs.values())
    said = err.getvalue().splitlines()
    assert len([x for x in said if f"experiment {twin} " in x and "nobody's" in x]) == 1
    assert len([x for x in said if f"experiment {shared} " in x
                and "alice, bob may all write it" in x]) == 1
    ctl.poll_once()  # said once, never read
    assert err.getvalue().splitlines() == said
    ctl.close()
