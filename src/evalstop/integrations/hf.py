"""``EvalStopCallback``: the EvalStop detector stopping a ``transformers.Trainer`` run.

Works with every Trainer subclass, so TRL's GRPOTrainer, DPOTrainer, SFTTrainer, ... too.
At each evaluation the callback feeds ``metrics[metric]`` at ``state.global_step`` to the
detector (an unchanged ``evalstop.detectors`` object); on a stop it sets
``control.should_training_stop``. It keeps the detector's best checkpoint on disk:

* **Unaligned saves.** A new best found at an eval step where no save is due would have
  no checkpoint; with ``save_best=True`` (default) the callback asks for a save there
  (``control.should_save``), so the best step always has a checkpoint.
* **save_total_limit.** The Trainer's rotation spares only ``state.best_model_checkpoint``
  (and the newest checkpoint). With no ``metric_for_best_model`` the Trainer never sets
  it, so the callback sets it to EvalStop's best; with a ``metric_for_best_model`` that is
  not EvalStop's metric (or has the other direction) the Trainer protects *its* best, and
  the callback warns that EvalStop's best may be deleted.
* **load_best_model_at_end** loads the Trainer's best by ``metric_for_best_model``; the
  callback warns when that is not EvalStop's metric and direction.

Resuming: the callback is an ``ExportableState``, so its detector state is stored in the
``trainer_state.json`` of every checkpoint. The Trainer rebuilds the callback from it when
``restore_callback_states_from_checkpoint=True``; otherwise the callback restores itself
at ``on_train_begin`` from the state the Trainer loaded out of the checkpoint given to
``train(resume_from_checkpoint=...)``, wherever that checkpoint lies. It also writes
``evalstop_callback.json`` into every checkpoint in ``output_dir`` (the fallback for a
``trainer_state.json`` without callback states).

World feedback (``world_eval=HOOK``): the score the rule sees comes from a hook the
callback calls with the model and tokenizer (``evalstop.integrations.world_eval``), at each
evaluation or every ``world_eval_every`` steps, not from the Trainer's eval metrics. Each
call's score, cost in seconds and the proxy beside it (``proxy_metric``, GRPO's
``eval_reward`` by default) go to ``world_history``, ``state.log_history`` and the log.

Strictness (``strict=True``, default): a loss-like metric under ``mode="max"`` raises at
construction, and a metric that the first evaluation round does not report raises before
training goes on; ``strict=False`` turns both off (a missing metric is logged once).
"""

from __future__ import annotations

import json
import logging
import math
import os
import warnings
from typing import Any

from evalstop.detectors import DEFAULT_SPEC, Decision, make_detector
from evalstop.integrations._extras import require
from evalstop.integrations._strict import check_direction, missing_metric_error
from evalstop.integrations.world_eval import WorldScore, call_hook, hook_name

_tc = require("transformers.trainer_callback", what="EvalStopCallback", extra="hf")
TrainerCallback = _tc.TrainerCallback
# ExportableState appeared in transformers 4.44; older versions fall back to the json file.
ExportableState = getattr(_tc, "ExportableState", object)

logger = logging.getLogger(__name__)

STATE_FILE = "evalstop_callback.json"
CHECKPOINT_PREFIX = "checkpoint"  # transformers.trainer_utils.PREFIX_CHECKPOINT_DIR


def _eval_key(name: str) -> str:
    """Metric names as the Trainer spells them in eval metrics (it adds ``eval_``)."""
    return name if name.startswith("eval_") else f"eval_{name}"


def _strategy(value: Any) -> str:
    """``IntervalStrategy.STEPS`` or ``"steps"`` -> ``"steps"``."""
    return str(getattr(value, "value", value))


def config_warnings(args: Any, metric: str, mode: str, save_best: bool,
                    scheduled: bool = False) -> list[str]:
    """Reasons why this ``TrainingArguments`` could lose EvalStop's stop or best checkpoint.

    Pure (reads ``args`` only) so that it can be tested without a Trainer.
    """
    out: list[str] = []
    key = _eval_key(metric)
    # transformers < 4.41 spelled it evaluation_strategy.
    eval_strategy = _strategy(
        getattr(args, "eval_strategy", getattr(args, "evaluation_strategy", "no"))
    )
    save_strategy = _strategy(args.save_strategy)
    hf_metric = args.metric_for_best_model
    same_metric = hf_metric is not None and _eval_key(hf_metric) == key
    same_direction = args.greater_is_better is None or bool(args.greater_is_better) == (mode == "max")
    aligned = same_metric and same_direction
    fix = (
        f"set metric_for_best_model={key!r} and greater_is_better={mode == 'max'} "
        "in TrainingArguments"
    )
    if eval_strategy == "no" and not scheduled:  # a world eval on its own schedule needs none
        out.append(
            "eval_strategy='no': the Trainer never evaluates, so EvalStop can never stop it; "
            "set eval_strategy='steps' (with eval_steps) or 'epoch'"
        )
    if save_strategy == "no" and not save_best:
        out.append(
            "save_strategy='no' and save_best=False: no checkpoint is saved, so EvalStop's "
            "best step will have no checkpoint to keep"
        )
    if save_strategy == "best" and not aligned:
        out.append(
            f"save_strategy='best' saves only when metric_for_best_model={hf_metric!r} "
            f"improves, and overrides EvalStop's request to save its own best ({key!r}); "
            f"{fix}"
        )
    limited = args.save_total_limit is not None and args.save_total_limit > 0
    if limited and hf_metric is not None and not aligned:
        out.append(
            f"save_total_limit={args.save_total_limit} spares only the Trainer's best by "
            f"metric_for_best_model={hf_metric!r}, so EvalStop's best checkpoint (by "
            f"{key!r}, mode={mode!r}) may be deleted; {fix}"
        )
    if args.load_best_model_at_end and not aligned:
        out.append(
            f"load_best_model_at_end loads the Trainer's best by metric_for_best_model="
            f"{hf_metric!r}, not EvalStop's best by {key!r}; {fix}"
        )
    if (
        not save_best
        and eval_strategy == "steps"
        and save_strategy == "steps"
        and args.eval_steps
        and args.save_steps
        and args.save_steps % args.eval_steps
        and args.eval_steps % args.save_steps
    ):
        out.append(
            f"save_steps={args.save_steps} is not aligned with eval_steps={args.eval_steps} "
            "and save_best=False: the best eval step may have no checkpoint"
        )
    return out


class EvalStopCallback(TrainerCallback, ExportableState):
    """Stop a Trainer run when the EvalStop detector fires on an eval metric.

    Args:
        metric: the eval metric to watch, e.g. ``"eval_reward"`` or ``"accuracy"``
            (``eval_`` is added when missing, as the Trainer does).
        mode: ``"max"`` if higher is better, ``"min"`` if lower is better (e.g. a loss).
        detector: a detector spec, ``NAME[:key=value,...]`` (default: the recommended rule).
        save_best: ask the Trainer to save a checkpoint at each eval step that becomes the
            new best when no save is due there, so that the best step has a checkpoint.
        fleet: a ``evalstop.detectors.FleetNoise`` shared with other runs of the same eval
            (its pooled noise is used until a stated ``sigma=``/``eval_n=`` in the spec).
        strict: raise on a loss-like metric under ``mode="max"`` and on a metric missing
            from the first evaluation round (default); False turns both checks off.
        world_eval: a hook ``hook(model=, processing_class=, step=) -> float`` giving the
            downstream score (e.g. ``ExactMatchEval``); the rule then sees its score, logged
            as ``eval_<metric>`` (``metric`` defaults to the hook's ``name``).
        world_eval_every: call the hook every N training steps instead of at each
            evaluation (``None``: at each evaluation).
        proxy_metric: the Trainer's eval metric logged beside the world score for
            comparison (GRPO's ``eval_reward`` by default); never fed to the rule.

    After training: ``stopped``, ``stop_step``, ``best_step``, ``best_score``,
    ``best_checkpoint`` (a directory, or None if the best step was never saved) and
    ``decision`` (the last ``Decision``).
    """

    def __init__(
        self,
        metric: str | None = None,
        mode: str = "max",
        detector: str = DEFAULT_SPEC,
        save_best: bool = True,
        fleet: Any = None,
        strict: bool = True,
        world_eval: Any = None,
        world_eval_every: int | None = None,
        proxy_metric: str | None = "eval_reward",
    ) -> None:
        if world_eval is not None and not callable(world_eval):
            raise ValueError(f"world_eval must be a callable hook, got {world_eval!r}")
        if world_eval_every is not None and (
                world_eval is None or isinstance(world_eval_every, bool)
                or not isinstance(world_eval_every, int) or world_eval_every < 1):
            raise ValueError(f"world_eval_every must be an integer >= 1 with a world_eval "
                             f"hook, got {world_eval_every!r}")
        if metric is None and world_eval is not None:
            metric = hook_name(world_eval)
        if (world_eval is not None and proxy_metric is not None and isinstance(metric, str)
                and _eval_key(metric.strip()) == _eval_key(proxy_metric)):
            raise ValueError(f"metric {metric!r} is the proxy {proxy_metric!r}: name the "
                             "world-eval score otherwise (the hook's score would overwrite it)")
        # Bad arguments are ValueErrors naming the value, project-wide (not TypeError).
        if not isinstance(metric, str) or not metric.strip():
            raise ValueError(f"metric must be a metric name such as 'eval_loss', got {metric!r}")
        if not isinstance(save_best, bool):
            raise ValueError(f"save_best must be True or False, got {save_best!r}")  # noqa: TRY004
        if not isinstance(strict, bool):
            raise ValueError(f"strict must be True or False, got {strict!r}")  # noqa: TRY004
        self.metric = metric.strip()
        self.mode = mode
        self.detector_spec = detector
        self.save_best = save_best
        self.strict = strict
        self.fleet = fleet
        self.world_eval = world_eval
        self.world_eval_every = world_eval_every
        self.proxy_metric = proxy_metric
        self.world_history: list[WorldScore] = []
        self.detector = make_detector(detector, mode=mode, fleet=fleet)  # ValueError if bad
        check_direction("EvalStopCallback", self.metric, mode, strict)
        self.decision: Decision | None = None
        self.best_checkpoint: str | None = None
        self._checked = False
        self._warned_missing = False
        self._seen_metric = False
        # (step, metric names) of the first evaluation round while our metric is unseen.
        self._unseen_round: tuple[int, set[str]] | None = None

    # ---- results ------------------------------------------------------------------------
    @property
    def stopped(self) -> bool:
        return self.detector.stopped

    @property
    def stop_step(self) -> int | None:
        return self.detector.stop_step

    @property
    def best_step(self) -> int | None:
        return self.detector.best_step

    @property
    def best_score(self) -> float | None:
        return self.detector.best_score

    @classmethod
    def find(cls, trainer: Any) -> EvalStopCallback | None:
        """The live callback of ``trainer``: a resume with
        ``restore_callback_states_from_checkpoint=True`` replaces the object passed in."""
        for cb in trainer.callback_handler.callbacks:
            if isinstance(cb, cls):
                return cb
        return None

    # ---- ExportableState (trainer_state.json "stateful_callbacks") ----------------------
    def state(self) -> dict:
        return {
            "args": {
                "metric": self.metric,
                "mode": self.mode,
                "detector": self.detector_spec,
                "save_best": self.save_best,
                "strict": self.strict,
            },
            "attributes": {"evalstop_state": self.evalstop_state},
        }

    @property
    def evalstop_state(self) -> dict:
        return {"detector": self.detector.state_dict(), "best_checkpoint": self.best_checkpoint}

    @evalstop_state.setter
    def evalstop_state(self, value: dict) -> None:
        # The Trainer restores ExportableState attributes with setattr; load them properly.
        self.detector.load_state_dict(value["detector"])
        self.best_checkpoint = value.get("best_checkpoint")

    # ---- Trainer events -----------------------------------------------------------------
    def on_init_end(self, args, state, control, **kwargs):
        self._check(args)

    def on_train_begin(self, args, state, control, **kwargs):
        self._check(args)
        if state.global_step > 0:
            self._restore_from_checkpoint(args, state)
        self._protect_best(args, state)
        self._warn_checkpoint_count(args, state)

    def on_step_begin(self, args, state, control, **kwargs):
        self._check_round_had_metric()

    def on_step_end(self, args, state, control, **kwargs):
        every = self.world_eval_every
        if self.world_eval is None or every is None or state.global_step % every:
            return
        proxy = _last_logged(state, self.proxy_metric)
        self._world(state, control, kwargs, proxy, metrics=None)

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        if self.world_eval is not None:
            if self.world_eval_every is None and metrics is not None:
                proxy = _number(metrics.get(_eval_key(self.proxy_metric))) \
                    if self.proxy_metric else None
                self._world(state, control, kwargs, proxy, metrics=metrics)
            return  # the Trainer's own metrics never reach the rule
        if not metrics:
            return
        self._check_round_had_metric(int(state.global_step))
        key = self.metric if self.metric in metrics else _eval_key(self.metric)
        if key not in metrics:
            if self.strict and not self._seen_metric:
                # Several eval datasets each report their own keys in one round (one
                # on_evaluate each): judge the name once the round is over.
                step, names = self._unseen_round or (int(state.global_step), set())
                self._unseen_round = (step, names | set(metrics))
                return
            # Several eval datasets each report their own metrics; only one has ours.
            if not self._warned_missing:
                self._warned_missing = True
                logger.warning(
                    "EvalStopCallback: metric %r is not in this evaluation's metrics %s; "
                    "this evaluation is ignored",
                    self.metric,
                    sorted(metrics),
                )
            return
        self._seen_metric = True
        self._unseen_round = None
        self._feed(int(state.global_step), metrics[key], state, control, key)

    def _world(self, state, control, kwargs: dict, proxy: float | None,
               metrics: dict | None) -> None:
        """Call the world-eval hook once for this step and feed its score to the rule."""
        step = int(state.global_step)
        if self.world_history and self.world_history[-1].step == step:
            return  # several eval datasets: one world eval per step
        score, seconds = call_hook(self.world_eval, model=kwargs.get("model"),
                                   processing_class=kwargs.get("processing_class"), step=step)
        self.world_history.append(WorldScore(step, score, seconds, proxy))
        key = _eval_key(self.metric)
        entry = {key: score, f"{key}_seconds": round(seconds, 4)}
        if proxy is not None and self.proxy_metric:
            entry[_eval_key(self.proxy_metric)] = proxy
        if metrics is not None:
            metrics.update(entry)  # what trainer.evaluate() returns
        state.log_history.append({**entry, "step": step})
        logger.info("EvalStop world eval at step %d: %s=%.6g (%.2f s); proxy %s=%s",
                    step, key, score, seconds, self.proxy_metric, proxy)
        self._feed(step, score, state, control, key)

    def _feed(self, step: int, value: Any, state, control, key: str) -> None:
        last = self.detector.state_dict()["last_step"]
        if last is not None and step <= last:
            logger.warning(
                "EvalStopCallback: a second evaluation at step %d (last fed: %d) is ignored",
                step,
                last,
            )
            return
        score = _number(value)
        if score is None:
            score = math.nan  # the detector ignores non-finite scores (stated policy)
        progress = step / state.max_steps if state.max_steps else None
        decision = self.detector.update(
            step, score, loss=_last_train_loss(state), progress=progress
        )
        self.decision = decision
        if decision.best_step == step and self.save_best and not control.should_save:
            # A new best: make sure the Trainer saves this step (saves may not be aligned).
            control.should_save = True
        if decision.stop and not control.should_training_stop:
            control.should_training_stop = True
            logger.warning(
                "EvalStop: stopping at step %d (%s); best step %s (%s=%s)",
                step,
                decision.reason,
                decision.best_step,
                key,
                decision.best_score,
            )

    def on_save(self, args, state, control, **kwargs):
        self._check_round_had_metric()
        self._resolve_best(args)
        self._protect_best(args, state)
        if args.should_save:  # the main process writes files
            path = os.path.join(_run_dir(args), f"{CHECKPOINT_PREFIX}-{state.global_step}")
            if os.path.isdir(path):
                with open(os.path.join(path, STATE_FILE), "w", encoding="utf-8") as fh:
                    json.dump(self.state(), fh)

    def on_train_end(self, args, state, control, **kwargs):
        self._check_round_had_metric()
        self._resolve_best(args)
        if self.best_step is not None and self.best_checkpoint is None:
            msg = (
                f"EvalStopCallback: no checkpoint of EvalStop's best step {self.best_step} is on "
                f"disk in {_run_dir(args)} (never saved, or deleted by save_total_limit)"
            )
            warnings.warn(msg, stacklevel=2)
            logger.warning(msg)

    # ---- helpers ------------------------------------------------------------------------
    def _check(self, args) -> None:
        if self._checked:
            return
        self._checked = True
        for msg in config_warnings(args, self.metric, self.mode, self.save_best,
                                   scheduled=self.world_eval_every is not None):
            warnings.warn(f"EvalStopCallback: {msg}", stacklevel=3)
            logger.warning("EvalStopCallback: %s", msg)

    def _check_round_had_metric(self, step: int | None = None) -> None:
        """Raise (strict) once the first evaluation round is over without our metric."""
        if self._unseen_round is None or self._seen_metric:
            return
        first, names = self._unseen_round
        if step is not None and step == first:
            return  # another eval dataset of the same round
        self._unseen_round = None
        raise missing_metric_error(
            "EvalStopCallback", self.metric, names,
            "(e.g. when only some evaluations report it)",
        )

    def _warn_checkpoint_count(self, args, state) -> None:
        if not self.save_best or (args.save_total_limit or 0) > 0:
            return
        counts = expected_checkpoints(args, state)
        if counts is None or sum(counts) <= 2:
            return
        scheduled, extra = counts
        msg = (
            f"save_best=True without save_total_limit keeps every checkpoint: this run of "
            f"{state.max_steps} steps may leave up to {scheduled + extra} checkpoints in "
            f"{_run_dir(args)} ({scheduled} scheduled saves + up to {extra} saves of a new "
            f"best between them), fewer if EvalStop stops it early; set save_total_limit=2 "
            f"to keep only the newest and EvalStop's best"
        )
        warnings.warn(f"EvalStopCallback: {msg}", stacklevel=3)
        logger.warning("EvalStopCallback: %s", msg)

    def _saved_state(self, state) -> dict | None:
        """This callback's entry in the ``stateful_callbacks`` of the trainer_state.json
        that the Trainer loaded from the resumed checkpoint (wherever it lies)."""
        entries = (getattr(state, "stateful_callbacks", None) or {}).get(type(self).__name__)
        if isinstance(entries, dict):
            entries = [entries]
        if not isinstance(entries, list):
            return None
        # Newest last: with several callbacks of this class the Trainer appends each save.
        for entry in reversed(entries):
            args = entry.get("args") if isinstance(entry, dict) else None
            if (isinstance(args, dict) and args.get("metric") == self.metric
                    and args.get("detector") == self.detector_spec):
                return entry
        return None

    def _restore_from_checkpoint(self, args, state) -> None:
        if self.detector.state_dict()["last_step"] is not None:
            return  # the Trainer rebuilt us (restore_callback_states_from_checkpoint=True)
        saved = self._saved_state(state)
        source = "the resumed checkpoint's trainer_state.json"
        if saved is None:
            source = os.path.join(
                _run_dir(args), f"{CHECKPOINT_PREFIX}-{state.global_step}", STATE_FILE
            )
            try:
                with open(source, encoding="utf-8") as fh:
                    saved = json.load(fh)
            except FileNotFoundError:
                logger.warning(
                    "EvalStopCallback: resuming at step %d with no EvalStop state in the "
                    "checkpoint's trainer_state.json nor at %s: the detector starts afresh "
                    "(its streak and best are lost)",
                    state.global_step,
                    source,
                )
                return
            except (OSError, ValueError) as exc:
                logger.warning("EvalStopCallback: cannot read %s (%s); the detector keeps its "
                               "current state", source, exc)
                return
        try:
            self.evalstop_state = saved["attributes"]["evalstop_state"]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # another spec, damage
            logger.warning("EvalStopCallback: %s does not fit this callback (%s); the "
                           "detector keeps its current state", source, exc)
            return
        logger.info("EvalStopCallback: restored detector state from %s", source)

    def _resolve_best(self, args) -> None:
        """The checkpoint directory of the detector's best step, if it is on disk."""
        best = self.detector.best_step
        if best is None:
            self.best_checkpoint = None
            return
        name = f"{CHECKPOINT_PREFIX}-{best}"
        path = os.path.join(_run_dir(args), name)
        if os.path.isdir(path):
            self.best_checkpoint = path
            return
        # Resumed into another output_dir: the best saved before the resume stays where it was.
        prev = self.best_checkpoint
        keep = prev and os.path.basename(os.path.normpath(prev)) == name and os.path.isdir(prev)
        self.best_checkpoint = prev if keep else None

    def _protect_best(self, args, state) -> None:
        # Without metric_for_best_model the Trainer never sets best_model_checkpoint, so
        # rotation (save_total_limit) would treat EvalStop's best as any old checkpoint.
        best = self.best_checkpoint
        if args.metric_for_best_model is None and best is not None and os.path.isdir(best):
            state.best_model_checkpoint = best


def expected_checkpoints(args: Any, state: Any) -> tuple[int, int] | None:
    """(scheduled saves, most extra saves of a new best between them) over a whole run,
    or None when the schedule is not known in steps. Pure, for the save_best warning."""
    max_steps = int(state.max_steps or 0)
    if max_steps <= 0:
        return None
    epochs = float(getattr(state, "num_train_epochs", 0) or 0)

    def schedule(strategy: str, every: Any) -> set[int] | None:
        if strategy == "no":
            return set()
        if strategy == "steps" and every and every > 0:
            # The Trainer also evaluates and saves at the last step.
            return set(range(int(every), max_steps + 1, int(every))) | {max_steps}
        if strategy == "epoch" and epochs > 0:
            per = max_steps / epochs
            return {min(max_steps, round(per * (i + 1))) for i in range(math.ceil(epochs))}
        return None  # "best", or unknown

    saves = schedule(_strategy(args.save_strategy), getattr(state, "save_steps", None))
    evals = schedule(
        _strategy(getattr(args, "eval_strategy", getattr(args, "evaluation_strategy", "no"))),
        getattr(state, "eval_steps", None),
    )
    if saves is None or evals is None:
        return None
    return len(saves), len(evals - saves)


def _run_dir(args) -> str:
    return str(args.output_dir)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _last_logged(state, name: str | None) -> float | None:
    """The latest logged value of ``name`` (either spelling), for the proxy beside a
    world score on the step schedule."""
    if not name:
        return None
    keys = (name, _eval_key(name), name.removeprefix("eval_"))
    for entry in reversed(state.log_history):
        for k in keys:
            if k in entry:
                return _number(entry[k])
    return None


def _last_train_loss(state) -> float | None:
    """The latest logged training loss, for rules that read it (loss-plateau)."""
    for entry in reversed(state.log_history):
        if "loss" in entry:
            try:
                return float(entry["loss"])
            except (TypeError, ValueError):
                return None
    return None
