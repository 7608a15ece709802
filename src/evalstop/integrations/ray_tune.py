"""EvalStop on Ray Tune: a scheduler overlay, a ``tune.Stopper``, and a scripted trainable.

``EvalStopScheduler(base_scheduler)`` wraps any Tune ``TrialScheduler`` the way Ray's
``ResourceChangingScheduler`` does: every hook is forwarded to the base, so the base keeps
ordering and deciding as before; on each result the trial's own detector (one per trial,
an unchanged ``evalstop.detectors`` object) is fed ``(result[time_attr], result[metric])``
(and, with ``max_t``, the progress ``result[time_attr] / max_t``) and, when it fires, the overlay answers ``STOP`` whatever the base said. Tune then frees
the trial's resources and the base scheduler picks the next trial for them.

``EvalStopStopper`` gives the same decisions to users who keep their scheduler as it is
(``tune.RunConfig(stop=EvalStopStopper(...))``).

Which trial stopped where, and its best step, are kept per trial id: ``decisions()``;
``best_checkpoint(result)`` finds the best step's checkpoint among a trial's reported
checkpoints (keep them with ``tune.CheckpointConfig(num_to_keep=None)``, or with
``checkpoint_score_attribute=metric`` so that the best one is never dropped).

Resume: Tune pickles the scheduler when the ``Tuner`` is built and never calls its
``save``/``restore``, so a restored experiment would start every detector afresh. The
overlay therefore writes its detectors' state (``STATE_FILE``, atomically, after each
result) into the experiment's driver staging directory, which Tune's experiment
checkpointing syncs to the storage path together with its own experiment state and
syncs back down on ``Tuner.restore``; the overlay reads it when the restored trials are
added. ``EvalStopScheduler.from_experiment(path)`` reads it after a run.
"""

from __future__ import annotations

import json
import logging
import math
import numbers
import os
import tempfile
import time
from typing import Any

from evalstop.detectors import DEFAULT_SPEC, Decision, Detector, make_detector
from evalstop.integrations._extras import require
from evalstop.integrations._strict import check_direction, missing_metric_error

_sched = require("ray.tune.schedulers", what="EvalStopScheduler/EvalStopStopper", extra="ray")
_tune = require("ray.tune", what="EvalStopScheduler/EvalStopStopper", extra="ray")
TrialScheduler = _sched.TrialScheduler
FIFOScheduler = _sched.FIFOScheduler

logger = logging.getLogger(__name__)

STATE_FILE = "evalstop-scheduler-state.json"


class TrialDetectors:
    """One detector per trial id, fed from Tune result dicts. Shared by the scheduler
    overlay and the stopper, so the two cannot disagree."""

    def __init__(
        self, spec: str, metric: str | None, mode: str | None, time_attr: str,
        fleet: Any = None, strict: bool = True, who: str = "EvalStopScheduler",
        max_t: float | None = None,
    ) -> None:
        probe = make_detector(spec, fleet=fleet)  # a bad spec fails here, before any trial runs
        self.max_t = _check_max_t(max_t)
        if self.max_t is None:
            try:  # a rule that reads progress only (stopat) would fail at the first result
                probe._check_inputs(0.0, 0.0, None)
            except ValueError as exc:
                raise ValueError(f"{who}: {exc}: pass max_t (a trial's planned length in "
                                 f"{time_attr} units)") from None
        self.fleet = fleet  # one FleetNoise shared by every trial's detector, or None
        if mode is not None and mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        if not isinstance(time_attr, str) or not time_attr:
            raise ValueError(f"time_attr must be a result key, got {time_attr!r}")
        if metric is not None and (not isinstance(metric, str) or not metric):
            raise ValueError(f"metric must be a result key, got {metric!r}")
        if not isinstance(strict, bool):
            raise ValueError(f"strict must be True or False, got {strict!r}")  # noqa: TRY004
        self.spec, self.metric, self.mode, self.time_attr = spec, metric, mode, time_attr
        self.strict, self.who = strict, who
        self.detectors: dict[str, Detector] = {}
        self.stop_reasons: dict[str, str] = {}
        self._seen_metric = False
        self.check_direction()

    def check_direction(self) -> None:
        check_direction(self.who, self.metric, self.mode, self.strict)

    def feed(self, trial_id: str, result: dict[str, Any]) -> Decision | None:
        """Feed one result; None when it has no usable metric or step."""
        if self.metric is None or self.time_attr not in result:
            return None
        if self.metric not in result:
            if self.strict and not self._seen_metric:
                raise missing_metric_error(
                    self.who, self.metric, result,
                    "(e.g. when the metric is reported on some iterations only)",
                )
            return None
        self._seen_metric = True
        det = self.detectors.get(trial_id)
        if det is not None and det.stopped:
            # A result after the stop: replayed by a restore that came before Tune acted
            # on the stop, or a result already in flight. The stop stands.
            return Decision(True, self.stop_reasons.get(trial_id, ""), det.best_step,
                            det.best_score)
        if det is None:
            det = self.detectors[trial_id] = make_detector(self.spec, mode=self.mode or "max",
                                                           fleet=self.fleet)
        raw_step = result[self.time_attr]
        try:
            step = math.floor(float(raw_step))
            score = float(result[self.metric])
        except (TypeError, ValueError):
            logger.warning("EvalStop: trial %s: unusable result %s=%r %s=%r, skipped",
                           trial_id, self.time_attr, raw_step, self.metric,
                           result.get(self.metric))
            return None
        last = det.state_dict()["last_step"]
        if last is not None and step <= last:
            # Buffered or replayed results (e.g. after a restore) repeat steps: skip them.
            logger.warning("EvalStop: trial %s: %s=%s does not increase (last %s), skipped",
                           trial_id, self.time_attr, step, last)
            return None
        decision = det.update(step, score, progress=self.progress(raw_step))
        if decision.stop and trial_id not in self.stop_reasons:
            self.stop_reasons[trial_id] = decision.reason
            # A warning, so that it reaches Tune's console without any logging setup.
            logger.warning("EvalStop: stopping trial %s at %s=%d (%s); best %s=%s",
                        trial_id, self.time_attr, step, decision.reason, self.time_attr,
                        decision.best_step)
        return decision

    def progress(self, raw_step: Any) -> float | None:
        """The share of the trial done, ``t / max_t`` clipped to 1; None without ``max_t``
        (or at ``t <= 0``, where no share of the run is done yet)."""
        if self.max_t is None:
            return None
        t = float(raw_step)
        if not math.isfinite(t) or t <= 0:
            return None
        # A trial may run past max_t (a base scheduler other than ASHA, a longer stop
        # condition): it is then at the end of its planned length, not beyond.
        return min(t / self.max_t, 1.0)

    def result_fields(self, trial_id: str) -> dict[str, Any] | None:
        """What a stopped trial's last result carries (``evalstop_*`` keys), or None."""
        det = self.detectors.get(trial_id)
        if det is None or not det.stopped:
            return None
        return {"evalstop_stopped": True, "evalstop_stop_step": det.stop_step,
                "evalstop_best_step": det.best_step, "evalstop_best_score": det.best_score,
                "evalstop_reason": self.stop_reasons.get(trial_id, "")}

    def decisions(self) -> dict[str, dict[str, Any]]:
        return {
            tid: {
                "stopped": det.stopped,
                "stop_step": det.stop_step,
                "best_step": det.best_step,
                "best_score": det.best_score,
                "reason": self.stop_reasons.get(tid, ""),
            }
            for tid, det in self.detectors.items()
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "metric": self.metric,
            "mode": self.mode,
            "time_attr": self.time_attr,
            "max_t": self.max_t,
            "detectors": {tid: det.state_dict() for tid, det in self.detectors.items()},
            "stop_reasons": dict(self.stop_reasons),
            **({} if self.fleet is None else {"fleet": self.fleet.state_dict()}),
            "seen_metric": self._seen_metric,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.metric = self.metric or state["metric"]
        self.mode = self.mode or state["mode"]
        self.detectors = {}
        for tid, det_state in state["detectors"].items():
            det = make_detector(self.spec, mode=det_state["mode"], fleet=self.fleet)
            det.load_state_dict(det_state)  # ValueError if the spec changed
            self.detectors[tid] = det
        self.stop_reasons = dict(state["stop_reasons"])
        if self.fleet is not None and "fleet" in state:
            self.fleet.load_state_dict(state["fleet"])
        self._seen_metric = bool(state.get("seen_metric", self.detectors))

    def best_checkpoint(self, result: Any):
        """The checkpoint of the best step of ``result`` (a ``tune.Result``), or None."""
        tid = (result.metrics or {}).get("trial_id")
        det = self.detectors.get(tid)
        if det is None or det.best_step is None:
            return None
        for ckpt, metrics in result.best_checkpoints or []:
            value = metrics.get(self.time_attr)
            if value is not None and math.floor(float(value)) == det.best_step:
                return ckpt
        return None


class EvalStopScheduler(TrialScheduler):
    """Overlay on a Tune scheduler: STOP a trial when its EvalStop detector fires.

    Args:
        base_scheduler: the scheduler that keeps ordering and deciding (default FIFO).
        metric, mode: the eval metric and its direction; when None they come from
            ``tune.TuneConfig(metric=..., mode=...)`` as for Ray's own schedulers.
        detector: a detector spec, ``NAME[:key=value,...]``.
        time_attr: the increasing counter used as the step (default
            ``training_iteration``).
        fleet: one ``evalstop.detectors.FleetNoise`` that pools the eval noise across
            trials (saved and restored with the scheduler's state).
        strict: raise (default) when the metric looks like a loss under ``mode="max"``,
            or when the first result has no ``metric``; False turns both checks off
            (results without the metric are then skipped).
        max_t: a trial's planned length in ``time_attr`` units (as ASHA's ``max_t``);
            each result then carries the progress ``t / max_t`` (clipped to 1) to the
            detector, which rules that read progress (``block-cusum``'s ``plong``,
            ``stopat``) use. None (default): no progress, nothing changes.
    """

    def __init__(
        self,
        base_scheduler: Any = None,
        metric: str | None = None,
        mode: str | None = None,
        detector: str = DEFAULT_SPEC,
        time_attr: str = "training_iteration",
        fleet: Any = None,
        strict: bool = True,
        max_t: float | None = None,
    ) -> None:
        super().__init__()
        if base_scheduler is not None and not isinstance(base_scheduler, TrialScheduler):
            raise ValueError(f"base_scheduler must be a Tune TrialScheduler, got {base_scheduler!r}")
        self._base = base_scheduler if base_scheduler is not None else FIFOScheduler()
        self._trials = TrialDetectors(detector, metric, mode, time_attr, fleet, strict,
                                      "EvalStopScheduler", max_t)
        self._metric = metric
        self._mode = mode
        self._state_dir: str | None = None  # the experiment's driver staging directory
        self._warned_persist = False

    @classmethod
    def from_experiment(cls, path: str) -> EvalStopScheduler:
        """The overlay's detectors as last checkpointed in the experiment directory
        ``path`` (e.g. ``results.experiment_path``): ``decisions()`` and
        ``best_checkpoint(result)`` after ``Tuner.restore``, whose live scheduler is
        Tune's unpickled copy rather than the object the user built."""
        text = _read_experiment_file(path, STATE_FILE)
        try:
            state = json.loads(text)
            sched = cls(metric=state["metric"], mode=state["mode"], detector=state["spec"],
                        time_attr=state["time_attr"], strict=False,
                        max_t=state.get("max_t"))
            sched._trials.load_state_dict(state)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}/{STATE_FILE}: not an EvalStopScheduler state ({exc})") \
                from None
        return sched

    # ---- what the overlay adds -----------------------------------------------------------
    @property
    def base_scheduler(self):
        return self._base

    def decisions(self) -> dict[str, dict[str, Any]]:
        """Per trial id: stopped, stop_step, best_step, best_score, reason."""
        return self._trials.decisions()

    def best_checkpoint(self, result: Any):
        return self._trials.best_checkpoint(result)

    # ---- TrialScheduler, forwarded to the base -------------------------------------------
    @property
    def metric(self):
        return self._metric

    @property
    def supports_buffered_results(self):
        return self._base.supports_buffered_results

    def set_search_properties(self, metric: str | None, mode: str | None, **spec) -> bool:
        if self._metric is None:
            self._metric = self._trials.metric = metric
        if self._mode is None:
            self._mode = self._trials.mode = mode
        if self._metric is None or self._mode is None:
            # Without them the overlay could never stop anything: say so before the run.
            raise ValueError(
                f"EvalStopScheduler needs a metric and a mode (got metric={self._metric!r}, "
                f"mode={self._mode!r}): pass them to it or to tune.TuneConfig"
            )
        self._trials.check_direction()
        # A base created without a metric (e.g. ASHAScheduler()) learns the overlay's.
        return self._base.set_search_properties(metric or self._metric, mode or self._mode,
                                                **spec)

    def on_trial_add(self, tune_controller, trial, **kwargs):
        self._attach(trial)
        return self._base.on_trial_add(tune_controller, trial, **kwargs)

    def on_trial_error(self, tune_controller, trial, **kwargs):
        return self._base.on_trial_error(tune_controller, trial, **kwargs)

    def on_trial_result(self, tune_controller, trial, result):
        base_decision = self._base.on_trial_result(tune_controller, trial, result)
        decision = self._trials.feed(trial.trial_id, result)
        if decision is not None:
            self._persist()
            if decision.stop:
                return TrialScheduler.STOP
        return base_decision

    def on_trial_complete(self, tune_controller, trial, result, **kwargs):
        fields = self._trials.result_fields(trial.trial_id)
        if fields is not None:
            # Tune hands schedulers a flattened copy of each result; the trial's own
            # last_result is what ResultGrid, the console table and callbacks read.
            last = getattr(trial, "last_result", None)
            if isinstance(last, dict):
                last.update(fields)
            if isinstance(result, dict):
                result.update(fields)
        return self._base.on_trial_complete(tune_controller, trial, result, **kwargs)

    def on_trial_remove(self, tune_controller, trial, **kwargs):
        return self._base.on_trial_remove(tune_controller, trial, **kwargs)

    def choose_trial_to_run(self, tune_controller, **kwargs):
        return self._base.choose_trial_to_run(tune_controller, **kwargs)

    def debug_string(self) -> str:
        stops = [f"{tid} at {d['stop_step']} (best {d['best_step']}): {d['reason']}"
                 for tid, d in self._trials.decisions().items() if d["stopped"]]
        said = f"; stopped by EvalStop: {'; '.join(stops[-5:])}" if stops else ""
        if len(stops) > 5:
            said += f" (+{len(stops) - 5} more)"
        return f"(EvalStopScheduler {self._trials.spec}{said}) {self._base.debug_string()}"

    # ---- resume: state kept beside Tune's experiment state --------------------------------
    def _attach(self, trial) -> None:
        """Learn the experiment's staging directory from the trials added (the same object
        may serve several experiments); in a restored experiment Tune has synced our
        state file back down into it."""
        path = getattr(getattr(trial, "storage", None), "experiment_driver_staging_path", None)
        if not isinstance(path, str) or path == self._state_dir:
            return  # not a Tune trial (unit tests feed results directly), or known
        self._state_dir = path
        file = os.path.join(path, STATE_FILE)
        if not os.path.exists(file):
            return
        try:
            with open(file, encoding="utf-8") as fh:
                self._trials.load_state_dict(json.load(fh))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{file}: cannot restore EvalStop's detectors ({exc}); delete "
                             "the file to restore the experiment with fresh detectors") \
                from None
        self._metric = self._metric or self._trials.metric
        self._mode = self._mode or self._trials.mode
        logger.info("EvalStop: restored %d trials' detectors from %s",
                    len(self._trials.detectors), file)

    def _persist(self) -> None:
        # Atomic: Tune may sync the directory up at any moment, and a driver may die mid-write.
        if self._state_dir is None:
            return
        tmp = None
        try:
            os.makedirs(self._state_dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self._state_dir, prefix=".evalstop-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self._trials.state_dict(), fh)
            os.replace(tmp, os.path.join(self._state_dir, STATE_FILE))
        except OSError as exc:
            # Losing resumability is no reason to kill the experiment: say so and go on.
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            if not self._warned_persist:
                self._warned_persist = True
                logger.warning("EvalStop: cannot write %s in %s (%s): a restored experiment "
                               "would start its detectors afresh", STATE_FILE,
                               self._state_dir, exc)

    def save(self, checkpoint_path: str):
        """Detector state as JSON at ``checkpoint_path``; the base's beside it (``.base``)."""
        with open(checkpoint_path, "w", encoding="utf-8") as fh:
            json.dump(self._trials.state_dict(), fh)
        try:
            self._base.save(checkpoint_path + ".base")
        except NotImplementedError:  # FIFOScheduler and others keep no state
            pass

    def restore(self, checkpoint_path: str):
        with open(checkpoint_path, encoding="utf-8") as fh:
            self._trials.load_state_dict(json.load(fh))
        self._metric = self._metric or self._trials.metric
        self._mode = self._mode or self._trials.mode
        if os.path.exists(checkpoint_path + ".base"):
            self._base.restore(checkpoint_path + ".base")


class EvalStopStopper(_tune.Stopper):
    """``tune.Stopper`` with EvalStop's decision, for users who keep their scheduler.
    Its arguments mean what ``EvalStopScheduler``'s do (``max_t``: progress ``t / max_t``)."""

    def __init__(
        self,
        metric: str,
        mode: str = "max",
        detector: str = DEFAULT_SPEC,
        time_attr: str = "training_iteration",
        fleet: Any = None,
        strict: bool = True,
        max_t: float | None = None,
    ) -> None:
        if not isinstance(metric, str) or not metric:
            raise ValueError(f"metric must be a result key, got {metric!r}")
        make_detector(detector, mode=mode)  # ValueError on a bad spec or mode
        self._trials = TrialDetectors(detector, metric, mode, time_attr, fleet, strict,
                                      "EvalStopStopper", max_t)

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        decision = self._trials.feed(trial_id, result)
        return bool(decision is not None and decision.stop)

    def stop_all(self) -> bool:
        return False

    def decisions(self) -> dict[str, dict[str, Any]]:
        return self._trials.decisions()

    def best_checkpoint(self, result: Any):
        return self._trials.best_checkpoint(result)


def _check_max_t(max_t: Any) -> float | None:
    if max_t is None:
        return None
    if isinstance(max_t, bool) or not isinstance(max_t, numbers.Real) \
            or not math.isfinite(max_t) or max_t <= 0:
        raise ValueError(f"max_t must be a positive number of time_attr units (a trial's "
                         f"planned length), got {max_t!r}")
    return float(max_t)


def _read_experiment_file(path: str, name: str) -> str:
    """A file of an experiment directory, local or on Tune's storage (``s3://...``)."""
    try:
        if "://" in path:
            import pyarrow.fs  # a Ray dependency

            fs, fs_path = pyarrow.fs.FileSystem.from_uri(path)
            with fs.open_input_stream(f"{fs_path.rstrip('/')}/{name}") as fh:
                return fh.readall().decode("utf-8")
        with open(os.path.join(path, name), encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: no readable {name} ({exc}); was the experiment run "
                         "with EvalStopScheduler?") from None


def scripted_trainable(config: dict[str, Any]) -> None:
    """A tiny Tune function trainable for tests and examples (it lives in the package so
    that Ray workers can import it).

    Reports ``curve[i]`` as ``score`` at iteration ``i + 1``, after sleeping ``sleep``
    seconds (both read from ``config``, or from ``config["script"]`` so that a
    ``tune.grid_search`` over dicts can pair each curve with its own pace), with a checkpoint holding that iteration, and the
    wall-clock times ``wall_start`` (trial start) and ``wall_now``. Resumes from its last
    checkpoint when Tune restores it.
    """
    script = config.get("script", config)
    curve = [float(x) for x in script["curve"]]
    pause = float(script.get("sleep", 0.0))
    started = time.time()
    first = 0
    ckpt = _tune.get_checkpoint()
    if ckpt is not None:
        with ckpt.as_directory() as d, open(os.path.join(d, "state.json"), encoding="utf-8") as fh:
            first = int(json.load(fh)["iteration"])
    for i in range(first, len(curve)):
        if pause > 0:
            time.sleep(pause)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "state.json"), "w", encoding="utf-8") as fh:
                json.dump({"iteration": i + 1, "score": curve[i]}, fh)
            _tune.report(
                {"score": curve[i], "wall_start": started, "wall_now": time.time()},
                checkpoint=_tune.Checkpoint.from_directory(d),
            )
