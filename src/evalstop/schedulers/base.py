"""The scheduler interface the simulator drives.

A scheduler owns its wait queue. The simulator tells it what happens (``submit`` on
arrival, ``on_eval`` at each eval checkpoint of a running job, ``on_end`` when a job
finishes or is stopped) and asks it, once per instant after those events, what to do
(``schedule``). It only ever sees ``JobView``s, never the hidden workload.

``bind`` tells it, once before the first event, the run's cluster size and restart overhead.
``schedule(now, free_gpus)`` returns ``(to_start, to_preempt)``. The simulator preempts
first, then starts, and checks that the GPUs add up. A preempted job is back in the
scheduler's own queue (the scheduler put it there when it chose to preempt it).
"""

from __future__ import annotations

from evalstop.detectors.base import Decision
from evalstop.sim.view import JobView


class Scheduler:
    name: str = "base"
    #: ask for ``schedule`` after every eval batch (priorities that change at checkpoints)
    reschedule_on_eval: bool = False

    #: Whether it must hear every eval checkpoint of a running job. One that does not (no
    #: ``on_eval`` of its own, no rescheduling at checkpoints, no preemption) lets the
    #: simulator skip the checkpoints no one acts on. True unless a scheduler says so.
    needs_checkpoints: bool = True

    def bind(self, *, n_gpus: int, restart_overhead_s: float) -> None:
        """Called once by the simulator before the first event: the cluster size and the
        restart overhead of this run, for policies that depend on them."""

    def submit(self, job: JobView, now: float) -> None:
        raise NotImplementedError

    def schedule(self, now: float, free_gpus: int) -> tuple[list[JobView], list[JobView]]:
        raise NotImplementedError

    def on_eval(self, job: JobView, now: float) -> Decision | None:
        """A running job reported an eval. Return a stop ``Decision`` to end it, else None."""
        return None

    def on_end(self, job: JobView, now: float, stopped: bool) -> None:
        """A running job finished or was stopped; its GPUs are already free."""

    @property
    def queue_length(self) -> int:
        raise NotImplementedError
