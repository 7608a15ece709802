"""The detector interface: pure, per-job, online. Scores in, decision out.

A detector sees one job's evaluations in step order through ``update`` and answers with a
``Decision``. It has no clock, no cluster and no I/O, and it keeps its whole state in
``state_dict()`` (JSON-serialisable) so that a restarted controller does not forget a
streak.

Shared policy, implemented once here for every rule:

* **Direction**: ``mode="max"`` (default) or ``"min"``; rules see higher-is-better values.
* **Non-finite scores** (NaN, +-inf) are *ignored*: they are not a decline, do not reset a
  streak, cannot be the best checkpoint, and the next finite eval is compared with the last
  finite one. The decision says so in its reason. A crashed eval should not decide a stop.
* **Steps** must strictly increase; a repeated or earlier step raises ``ValueError``
  (callers that read logs sort them first).
* **Best checkpoint**: the step of the highest score seen so far, the earliest on ties.
* **After a stop** the detector is frozen: further updates return the stop decision again.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, NamedTuple

from evalstop.detectors.direction import sign_of


class Decision(NamedTuple):
    """Immutable; a tuple underneath because a simulator makes millions of them."""

    stop: bool
    reason: str
    best_step: int | None
    best_score: float | None


class Detector:
    """Base class. Subclasses set ``name`` and ``PARAMS`` and implement ``_observe``.

    Override ``_observe``, never ``update``: the simulator calls ``update_stop``, and
    ``update`` is built on it, so the rule must live where both pass.

    ``PARAMS`` maps each spec key to ``(type, default)``; the registry builds detectors
    from specs with it, and ``spec`` writes the canonical spec back.
    """

    name: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, tuple[type, Any]]] = {}
    #: True when a decision depends only on this job's own evals (and their step and
    #: progress): the simulator may then find the stop point before simulating the job
    #: (``evalstop.sim.stops``). Off by default, so a rule that pools jobs (a fleet prior)
    #: keeps the event path unless it says otherwise. Every shipped rule sets it.
    per_job: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # Skip the hook call on the hot path for the rules that do not define it.
        cls._checks_inputs = cls._check_inputs is not Detector._check_inputs
        cls._checks_value = cls._check_value is not Detector._check_value

    def __init__(self, *, mode: str = "max") -> None:
        self.mode = mode
        self._sign = sign_of(mode)
        self._best_step: int | None = None
        self._best: float = -math.inf
        self._last_step: int | None = None
        self._n_evals = 0
        self._stop_step: int | None = None
        self._stop_reason = ""

    # ---- public API -------------------------------------------------------------------
    def update(
        self,
        step: int,
        score: float,
        *,
        loss: float | None = None,
        proxy: float | None = None,
        progress: float | None = None,
    ) -> Decision:
        stop = self.update_stop(step, score, loss, proxy, progress)
        if stop is not None:
            return stop
        # Running on. update_stop has taken the eval (so ``float(score)`` works); the reason
        # says whether it was ignored as non-finite.
        if math.isfinite(float(score)):  # a best exists (this value at least): no property
            return Decision(False, "", self._best_step, self._sign * self._best)
        return Decision(False, "ignored non-finite score", self._best_step, self.best_score)

    def update_stop(
        self,
        step: int,
        score: float,
        loss: float | None = None,
        proxy: float | None = None,
        progress: float | None = None,
    ) -> Decision | None:
        """``update`` for callers that act on stops only (the simulator): the same rule and
        state change, but it returns the stop ``Decision`` or None while the job runs on.
        ``update`` is built on it; it spares a simulator the millions of "run on" decisions
        that it would throw away."""
        if self._stop_step is not None:
            return Decision(True, self._stop_reason, self._best_step, self.best_score)
        step = int(step)
        if self._checks_inputs:
            self._check_inputs(loss, proxy, progress)  # before any state changes
        if self._last_step is not None and step <= self._last_step:
            raise ValueError(
                f"steps must strictly increase: got step {step} after step {self._last_step}"
            )
        score = float(score)  # before the step is taken: a bad score must not use it up
        if self._checks_value and math.isfinite(score):
            self._check_value(self._sign * score)
        self._last_step = step
        if not math.isfinite(score):
            why = self._observe_nonfinite(step, loss, proxy, progress)
            return None if why is None else self._stop(step, why)
        self._n_evals += 1
        value = self._sign * score
        if value > self._best:
            self._best, self._best_step = value, step
        why = self._observe(step, value, loss, proxy, progress)
        return None if why is None else self._stop(step, why)

    @property
    def stopped(self) -> bool:
        return self._stop_step is not None

    @property
    def stop_step(self) -> int | None:
        return self._stop_step

    @property
    def best_step(self) -> int | None:
        return self._best_step

    @property
    def best_score(self) -> float | None:
        return None if self._best_step is None else self._sign * self._best

    @property
    def spec(self) -> str:
        # Options left unset (None) are not written: a spec that does not name them is
        # canonical without them.
        args = ",".join(f"{k}={getattr(self, k)}" for k in self.PARAMS
                        if getattr(self, k) is not None)
        return f"{self.name}:{args}" if args else self.name

    def state_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "mode": self.mode,
            "best_step": self._best_step,
            "best": None if self._best_step is None else self._best,
            "last_step": self._last_step,
            "n_evals": self._n_evals,
            "stop_step": self._stop_step,
            "stop_reason": self._stop_reason,
            "rule": self._rule_state(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("spec") != self.spec or state.get("mode") != self.mode:
            raise ValueError(
                f"state is for {state.get('spec')!r} (mode {state.get('mode')!r}), "
                f"not {self.spec!r} (mode {self.mode!r})"
            )
        self._best_step = state["best_step"]
        self._best = -math.inf if state["best"] is None else float(state["best"])
        self._last_step = state["last_step"]
        self._n_evals = int(state["n_evals"])
        self._stop_step = state["stop_step"]
        self._stop_reason = state["stop_reason"]
        self._load_rule_state(state["rule"])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec} mode={self.mode}>"

    # ---- for subclasses ---------------------------------------------------------------
    def _observe(
        self,
        step: int,
        value: float,
        loss: float | None,
        proxy: float | None,
        progress: float | None,
    ) -> str | None:
        """Take one finite, higher-is-better value; return a reason to stop, or None."""
        raise NotImplementedError

    def _observe_nonfinite(
        self, step: int, loss: float | None, proxy: float | None, progress: float | None
    ) -> str | None:
        """Rules that do not read the score (e.g. StopAt) may still act on a NaN eval."""
        return None

    def _check_inputs(
        self, loss: float | None, proxy: float | None, progress: float | None
    ) -> None:
        """Raise ValueError if the rule lacks an input it needs; the state stays as it was."""

    def _check_value(self, value: float) -> None:
        """Raise ValueError if a finite (higher-is-better) value is out of the rule's domain;
        called before any state changes."""

    def _rule_state(self) -> dict[str, Any]:
        return {}

    def _load_rule_state(self, state: dict[str, Any]) -> None:
        pass

    def _stop(self, step: int, reason: str) -> Decision:
        self._stop_step, self._stop_reason = step, reason
        return Decision(True, reason, self._best_step, self.best_score)
