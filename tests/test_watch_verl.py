"""verl-shaped runs followed by ``evalstop watch`` with a policy line and no code.

The runs are written through verl's own tracker, ``verl.utils.tracking.Tracking`` (verl
0.9.1, installed with ``--no-deps``; only its tracking module is imported, without verl's
GPU stack), to TensorBoard and to MLflow (a SQLite store, verl's default kind), as verl's
PPO/GRPO trainer logs validation: ``val-core/<data_source>/<var>/mean@N`` at
``global_steps`` (0 before training, then every ``test_freq`` steps). verl's MLflow adapter
renames ``@`` to ``_at_`` (MLflow refuses ``@`` in metric names), so one run carries
``val-core/gsm8k/reward/mean@1`` in TensorBoard and ``val-core/gsm8k/reward/mean_at_1`` in
MLflow; the policy names each.
"""

from __future__ import annotations

import importlib
import importlib.util
import io
import os
import sys
import types
from pathlib import Path

import pytest
from mlflow_server import ENV

os.environ.update(ENV)
pytest.importorskip("orjson")
pytest.importorskip("torch.utils.tensorboard")
pytest.importorskip("tensorboard")
mlflow = pytest.importorskip("mlflow")

from evalstop.cli.main import main
from evalstop.integrations.watch import Controller, StateStore, TensorBoardSource
from evalstop.integrations.watch.mlflow_source import MlflowSource
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy

PEAK = [0.30, 0.42, 0.55, 0.51, 0.47, 0.60]  # evalstop:k=2 stops at the 5th, best the 3rd
UP = [0.30, 0.35, 0.40, 0.45, 0.50, 0.55]
TEST_FREQ = 10
TB_KEY = "val-core/gsm8k/reward/mean@1"
MLFLOW_KEY = "val-core/gsm8k/reward/mean_at_1"


@pytest.fixture(scope="module")
def tracking():
    """verl.utils.tracking, imported without running verl/__init__.py (which pulls in
    tensordict, ray and the trainer)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed (pip install --no-deps verl)")
    root = Path(spec.submodule_search_locations[0])
    saved = {k: sys.modules.get(k) for k in ("verl", "verl.utils", "verl.utils.tracking")}
    for name, path in (("verl", root), ("verl.utils", root / "utils")):
        pkg = types.ModuleType(name)
        pkg.__path__ = [str(path)]
        sys.modules[name] = pkg
    try:
        yield importlib.import_module("verl.utils.tracking")
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _verl_run(tracking, monkeypatch, tmp_path, project, name, curve):
    """What verl's trainer logs for validation, through its Tracking class."""
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb" / project / name))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlruns.db'}")
    logger = tracking.Tracking(project_name=project, experiment_name=name,
                               default_backend=["tensorboard", "mlflow"])
    for i, score in enumerate(curve):
        step = i * TEST_FREQ  # global_steps: 0 (val_before_train), 10, 20, ...
        logger.log(data={TB_KEY: score, "val-aux/gsm8k/reward/std@1": 0.1}, step=step)
        if step:
            logger.log(data={"critic/rewards/mean": 1.0 + i}, step=step)  # the proxy
    logger.finish()


def _policy(tmp_path, metric, experiments=None):
    """One tenant per verl project: its TensorBoard folder, and (``experiments``: project
    -> MLflow experiment id) the MLflow experiment verl made for it, by id."""
    ids = experiments or {}
    p = tmp_path / f"policy-{len(metric)}.toml"
    p.write_text(f'[defaults]\ndetector = "evalstop:k=2"\nmetric = "{metric}"\n'
                 + "".join(f'[tenants.{t}]\nsources = ["{t}-team/**"]\n'
                           + (f'mlflow_experiments = ["{ids[t]}"]\n' if t in ids else "")
                           for t in ("math", "code")))
    return str(p)


def _experiment_ids(uri):
    client = mlflow.MlflowClient(uri)
    return {t: client.get_experiment_by_name(f"{t}-team").experiment_id
            for t in ("math", "code")}


@pytest.fixture(scope="module")
def runs(tracking, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("verl")
    try:
        _verl_run(tracking, mp, tmp, "math-team", "grpo-qwen-hacked", PEAK)
        _verl_run(tracking, mp, tmp, "code-team", "grpo-qwen-ok", UP)
    finally:
        mp.undo()
    return tmp


def _expect(ctl, tb=False, run_ids=None):
    """A TensorBoard job is named by its run directory under the root (verl writes
    tensorboard_log/PROJECT/EXPERIMENT); an MLflow job by its run id (``run_ids``: run
    name -> id)."""
    got = {(j.tenant, k.name): (j.detector.stopped, j.detector.stop_step, j.detector.best_step)
           for k, j in ctl.jobs.items()}
    math_job, code_job = (("math-team/grpo-qwen-hacked", "code-team/grpo-qwen-ok") if tb
                          else (run_ids["grpo-qwen-hacked"], run_ids["grpo-qwen-ok"]))
    assert got == {("math", math_job): (True, 40, 20), ("code", code_job): (False, None, 50)}


def test_verl_tensorboard_run_by_a_policy_line(runs, tmp_path):
    policy = load_policy(_policy(tmp_path, TB_KEY))
    src = TensorBoardSource(str(runs / "tb"), tenancy=PolicyTenancy(policy))
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], policy=policy,
                     err=(err := io.StringIO()), out=io.StringIO())
    ctl.run_until_idle()
    _expect(ctl, tb=True)
    assert err.getvalue() == ""
    ctl.close()


def test_verl_mlflow_run_by_a_policy_line(runs, tmp_path):
    uri = f"sqlite:///{runs / 'mlruns.db'}"
    ids = _experiment_ids(uri)
    policy = load_policy(_policy(tmp_path, MLFLOW_KEY, ids))
    client = mlflow.MlflowClient(uri)
    run_ids = {r.info.run_name: r.info.run_id
               for r in client.search_runs(list(ids.values()))}
    for run_id in run_ids.values():  # verl's finish() ended them; a live job's is RUNNING
        client.update_run(run_id, status="RUNNING")
    src = MlflowSource(uri, tenancy=PolicyTenancy(policy), wait=None)
    ctl = Controller(StateStore(str(tmp_path / "s.db")), [src], policy=policy,
                     err=(err := io.StringIO()), out=io.StringIO())
    ctl.run_until_idle()
    _expect(ctl, run_ids=run_ids)
    # MLflow's own "Default" experiment (id 0) is no tenant's: one line.
    assert [x for x in err.getvalue().splitlines() if "experiment 0 " not in x] == []
    run = client.get_run(run_ids["grpo-qwen-hacked"])
    assert run.data.tags["evalstop.stopped"] == "true"
    assert run.data.tags["evalstop.best_step"] == "20"
    ctl.close()


def test_verl_names_through_the_cli(runs, tmp_path, capsys):
    rc = main(["watch", "--tensorboard", str(runs / "tb"), "--policy",
               _policy(tmp_path, TB_KEY), "--db", str(tmp_path / "s.db"), "--once"])
    assert rc == 0
    out, err = capsys.readouterr()
    assert "stop math-team/grpo-qwen-hacked at step 40" in out
    assert f"metric {TB_KEY!r}" in err  # the startup line names each tenant's metric
