"""The controller: many jobs' metric streams in, one detector per job, an action per stop.

Each poll reads what every source has that is new, feeds each job's records to its
detector in step order, then commits, in one SQLite transaction, the detector states,
the read offsets and a ``pending`` action row for each new stop; only then are actions
run, each marked ``running`` (committed) before its command starts and ``done``/``failed``
after. So, killed at any moment and restarted:

* no streak is lost and no record is fed twice: detector states and offsets are
  committed together;
* no job is stopped twice: a job has at most one action row. A ``pending`` row (decided,
  command never started) is run on restart. A ``running`` row (started, outcome unknown)
  is **reported and not re-run** by default: the command may already have stopped the
  job, and stop commands are not all idempotent. ``retry_running=True``
  (``--retry-pending``) runs them again for actions known to be idempotent.

Out-of-order records: within one poll each job's records are taken in step order. A
record whose step is not above the last step already fed for that job (it arrived after
a later step was taken, or repeats a step) is reported in one line and skipped: a
detector cannot take back a decision. Records of a job that is already stopped are
counted and ignored.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from evalstop.detectors import Detector, make_detector
from evalstop.evallog import EvalRecord
from evalstop.integrations.watch.actions import ShellAction, check_seconds
from evalstop.integrations.watch.sources import Batch
from evalstop.integrations.watch.store import ActionRow, JobRow, StateStore


@dataclass(slots=True)
class _Job:
    detector: Detector
    last_step: int | None = None  # mirrors the detector's, read per record (cheaply)
    source: str | None = None
    last_score: float | None = None
    skipped: int = 0
    updated: float = 0.0


@dataclass(slots=True)
class PollResult:
    """What one poll did; ``fed`` are the records that reached a detector."""

    fed: list[EvalRecord] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)
    skipped: int = 0
    problems: int = 0
    progressed: bool = False
    committed_at: float = 0.0


class Controller:
    def __init__(
        self,
        store: StateStore,
        sources: list[Any],
        *,
        detector: str,
        mode: str = "max",
        action: ShellAction | None = None,
        dry_run: bool = False,
        retry_running: bool = False,
        err: TextIO | None = None,
        out: TextIO | None = None,
    ) -> None:
        if not sources:
            raise ValueError("give at least one source (--jsonl DIR or --tensorboard DIR)")
        self.spec = make_detector(detector, mode=mode).spec  # canonical; ValueError if bad
        self.mode = mode
        self.store = store
        self.sources = sources
        self.action = action
        self.dry_run = dry_run
        self.err = err if err is not None else sys.stderr
        self.out = out if out is not None else sys.stdout
        store.bind(self.spec, mode)
        self.jobs: dict[str, _Job] = {}
        self._announced: set[str] = set()  # dry-run: actions already printed
        for row in store.jobs().values():
            det = make_detector(self.spec, mode=mode)
            det.load_state_dict(row.detector)
            self.jobs[row.job] = _Job(det, row.last_step, row.source, row.last_score,
                                      row.skipped, row.updated)
        offsets = store.offsets()
        for src in sources:
            src.load(offsets)
            if hasattr(src, "last_step"):
                src.last_step = self._last_step
        self._resume_actions(retry_running)

    # ---- helpers ------------------------------------------------------------------------
    def _say(self, msg: str) -> None:
        self.err.write(f"evalstop watch: {msg}\n")
        self.err.flush()

    def _last_step(self, job: str) -> int | None:
        j = self.jobs.get(job)
        return None if j is None else j.last_step

    def _resume_actions(self, retry_running: bool) -> None:
        for row in self.store.actions("running"):
            if retry_running:
                self._say(f"job {row.job}: re-running its stop action, which was started "
                          "but not confirmed before the controller stopped")
                self.store.set_action(row.job, "pending")
            else:
                self._say(f"job {row.job}: its stop action was started but not confirmed "
                          "before the controller stopped; it may or may not have run, so it "
                          "is not re-run (check the job; --retry-pending runs it again)")

    # ---- one poll -----------------------------------------------------------------------
    def poll_once(self) -> PollResult:
        res = PollResult()
        batches: list[Batch] = [src.poll() for src in self.sources]
        by_job: dict[str, list[tuple[EvalRecord, str, str]]] = {}
        offsets, gone = {}, []
        for b in batches:
            res.progressed |= b.progressed or bool(b.gone) or bool(b.offsets)
            for msg in b.problems:
                self._say(msg)
            res.problems += len(b.problems)
            offsets.update(b.offsets)
            gone.extend(b.gone)
            for rec, where in b.records:
                by_job.setdefault(rec.job, []).append((rec, where, b.source))
        now = time.time()
        changed: dict[str, _Job] = {}
        new_actions: list[ActionRow] = []
        for job_name, items in by_job.items():
            items.sort(key=lambda t: t[0].step)  # stable: file order breaks ties
            job = self.jobs.get(job_name)
            if job is None:
                job = self.jobs[job_name] = _Job(make_detector(self.spec, mode=self.mode))
            was_stopped = job.detector.stopped
            for rec, where, source in items:
                if self._feed(job, rec, where, source, res):
                    changed[job_name] = job
                    job.updated = now
            if job.detector.stopped and not was_stopped:
                res.stops.append(job_name)
                new_actions.append(self._decide_action(job_name, job, now))
        self.store.save_batch(
            (self._row(name, j) for name, j in changed.items()), offsets, gone, new_actions
        )
        res.committed_at = time.time()
        for name in res.stops:
            d = self.jobs[name].detector
            self.out.write(
                f"stop {name} at step {d.stop_step}: {d.state_dict()['stop_reason']}; "
                f"best step {d.best_step} (score {d.best_score})\n"
            )
        self.out.flush()
        self.run_pending()
        return res

    def _feed(self, job: _Job, rec: EvalRecord, where: str, source: str,
              res: PollResult) -> bool:
        det = job.detector
        if det.stopped:
            return False
        last = job.last_step
        if last is not None and rec.step <= last:
            what = "repeats" if rec.step == last else "comes after"
            self._say(f"{where}: job {rec.job} step {rec.step} {what} step {last} already "
                      "taken; skipped")
            job.skipped += 1
            res.skipped += 1
            return True
        job.last_step = rec.step  # the detector takes the step even if the rule then fails
        try:
            det.update(rec.step, rec.eval, **rec.extras())
        except ValueError as exc:  # e.g. stopat without progress
            self._say(f"{where}: job {rec.job}: {exc}; skipped")
            job.skipped += 1
            res.skipped += 1
            return True
        job.source = source
        if math.isfinite(rec.eval):
            job.last_score = rec.eval
        res.fed.append(rec)
        return True

    def _decide_action(self, name: str, job: _Job, now: float) -> ActionRow:
        det = job.detector
        if self.action is None:
            return ActionRow(name, "", "done", None, "no action configured", now, now, now)
        cmd = self.action.render(
            job=name, best_step=det.best_step, best_score=det.best_score,
            stop_step=det.stop_step, reason=det.state_dict()["stop_reason"],
        )
        status = "dry-run" if self.dry_run else "pending"
        return ActionRow(name, cmd, status, None, "", now, None, None)

    def _row(self, name: str, job: _Job) -> JobRow:
        det = job.detector
        state = det.state_dict()
        return JobRow(
            name, job.source, state, state["n_evals"], state["last_step"], job.last_score,
            det.best_step, det.best_score, det.stopped, det.stop_step, state["stop_reason"],
            job.skipped, job.updated,
        )

    # ---- actions ------------------------------------------------------------------------
    def run_pending(self) -> int:
        """Run every ``pending`` action; return how many ran."""
        if self.dry_run:
            for row in self.store.actions():
                if row.status in ("pending", "dry-run") and row.job not in self._announced:
                    self._announced.add(row.job)
                    self.out.write(f"dry-run: would run for {row.job}: {row.command}\n")
            self.out.flush()
            return 0
        n = 0
        for row in self.store.actions("pending"):
            self.store.set_action(row.job, "running")  # committed before the command runs
            result = self.action.run(row.command) if self.action else None
            if result is None:
                self.store.set_action(row.job, "failed", output="no action configured")
                continue
            status = "done" if result.rc == 0 else "failed"
            self.store.set_action(row.job, status, rc=result.rc, output=result.output)
            if result.rc != 0:
                tail = result.output.strip().splitlines()[-1:] or [""]
                self._say(f"job {row.job}: action exited {result.rc}: {tail[0]}")
            n += 1
        return n

    # ---- loops --------------------------------------------------------------------------
    def run_until_idle(self, max_polls: int = 1_000_000) -> list[PollResult]:
        """``--once``: poll until a poll finds nothing new, then return."""
        results = []
        for _ in range(max_polls):
            res = self.poll_once()
            results.append(res)
            if not res.progressed:
                break
        return results

    def run_forever(self, interval: float, should_stop: Callable[[float], bool]) -> None:
        """Poll every ``interval`` seconds until ``should_stop(timeout)`` is true
        (``threading.Event.wait`` fits: it returns at once when a signal sets it)."""
        check_seconds("--interval", interval)
        while True:
            started = time.monotonic()
            self.poll_once()
            if should_stop(max(0.0, interval - (time.monotonic() - started))):
                return

    def close(self) -> None:
        self.store.close()
