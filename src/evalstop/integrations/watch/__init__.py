"""``evalstop watch``: a platform controller that follows many jobs' metric streams
(JSONL eval logs, TensorBoard runs), runs the EvalStop detector per job, and acts on
stops, with its state in SQLite so that it can be killed and restarted at any moment.

Parts: ``jsonl``, ``tensorboard`` and ``mlflow_source`` (sources; MLflow's experiment
ownership in ``mlflow_owner``, its per-poll shares in ``mlflow_budget``, a source's poll in
a thread of its own in ``isolated``, credentials cut out of messages in ``redact``),
``records`` (what is accepted from a tenant's log, and how tenant text is shown),
``tenants`` (job identity and tenant resolution; one exact name per tenant is
``evalstop.identity``, which the shipped actions share), ``store`` (SQLite state),
``actions`` (the stop command), ``controller`` (the loop), ``status`` (the status view),
``shadow`` (stops a rule would have made, followed to the job's end: ``shadow_score``,
``shadow_store``, ``shadow_status``, ``shadow_report``, ``shadow_export``).
"""

from evalstop.integrations.watch.actions import ShellAction
from evalstop.integrations.watch.controller import Controller, PollResult
from evalstop.integrations.watch.jsonl import JsonlDirSource
from evalstop.integrations.watch.mlflow_source import MlflowSource
from evalstop.integrations.watch.records import Refusal
from evalstop.integrations.watch.store import StateStore
from evalstop.integrations.watch.tenants import JobKey, Tenancy
from evalstop.integrations.watch.tensorboard import TensorBoardSource

__all__ = ["Controller", "JobKey", "JsonlDirSource", "MlflowSource", "PollResult", "Refusal", "ShellAction",
           "StateStore", "Tenancy", "TensorBoardSource"]
