"""The same detectors driving real training jobs.

* ``EvalStopCallback`` (``evalstop[hf]``): a ``transformers.TrainerCallback``; works with
  TRL's Trainer-based trainers (GRPO, DPO, ...). ``ExactMatchEval`` (``world_eval``) is a
  world-eval hook: the score the rule reads, computed from the model on held-out prompts.
* ``EvalStopScheduler`` and ``EvalStopStopper`` (``evalstop[ray]``): a Ray Tune scheduler
  overlay that wraps a base scheduler, and a ``tune.Stopper``.
* ``evalstop watch`` (``evalstop.integrations.watch``; TensorBoard needs
  ``evalstop[watch]``, MLflow ``evalstop[mlflow]``): follows many jobs' metric logs and
  tracking-server runs and runs an action on each stop.

Names are resolved lazily so that ``import evalstop.integrations`` never imports torch,
transformers or ray; a missing extra raises ``ImportError`` naming it.
"""

from __future__ import annotations

import importlib

_LAZY = {
    "EvalStopCallback": "evalstop.integrations.hf",
    "EvalStopScheduler": "evalstop.integrations.ray_tune",
    "EvalStopStopper": "evalstop.integrations.ray_tune",
    "ExactMatchEval": "evalstop.integrations.world_eval",
}

__all__ = ["EvalStopCallback", "EvalStopScheduler", "EvalStopStopper", "ExactMatchEval"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
