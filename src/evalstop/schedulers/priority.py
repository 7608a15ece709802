"""A priority scheduler with bounded backfill and optional preemption; the base of
SJF-Est, SRTF-Est, LossAware and Tiresias, which differ only in ``key`` and in when they
preempt.

Lower key = served first; ties go to the earlier submission. Waiting jobs' keys are fixed
while they wait (nothing about a waiting job changes). Running jobs' keys are refreshed
at their eval checkpoints, the only moments a scheduler hears from a job.

* **Start**: queued jobs are started in key order; a job that does not fit is skipped, not
  waited for (backfill), looking at most ``depth`` jobs deep so one call stays cheap on a
  long queue. The jobs a fill skipped stay in a sorted front of the queue, before its
  heap, so the next fill reads them there instead of popping and pushing them back.
* **Preempt on arrival** (SRTF): when the best waiting job does not fit, running jobs whose
  key is worse by more than ``margin`` are preempted, worst first, if that makes it fit.
* **Preempt at checkpoint** (LossAware, Tiresias): a running job that, at its eval
  checkpoint, ranks behind the best waiting job yields to it (when that makes it fit).
  Yielding at checkpoints avoids throwing away work between them.

A call after nothing but checkpoints (no arrival, end or change of free GPUs since the
last call) is answered from what it can change: the checkpointed jobs' yields, and, for a
base that preempts for the head, a rise of their keys. When none can act, and the last
call left nothing that a repeat would do (``_settled``), it returns nothing at once: the
same answer as the full call, without re-reading the queue. On Philly most calls of
LossAware and Tiresias are of this kind.
"""

from __future__ import annotations

import heapq
from bisect import insort
from itertools import count

from evalstop.schedulers.base import Scheduler

# A running entry whose key is not made yet (see ``on_eval``).
_UNKEYED = (None, 0)


class PriorityScheduler(Scheduler):
    preempt_on_arrival = False
    preempt_at_checkpoint = False
    #: answer a call after only checkpoints from the checkpointed jobs (see the module's
    #: docstring); False makes every call in full (the tests' reference)
    quiet_calls = True

    def __init__(self, *, depth: int = 32, margin: float = 0.0) -> None:
        if depth < 1:
            raise ValueError(f"depth must be >= 1, got {depth}")
        if not margin >= 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        self.depth, self.margin = depth, margin
        # The wait queue, (key, seq, job) in (key, seq) order: its first entries as a sorted
        # list (``_front``, at most ``depth``: those a fill skipped, kept there so the next
        # fill reads them without popping and pushing back), the rest a heap (``_wait``),
        # every entry of which comes after the front's.
        self._front: list = []
        self._wait: list = []
        self._seq = count()
        self._running: dict[int, tuple[float, int]] = {}  # index -> (key, version)
        # Lazy max-heap of running jobs: (-key, version, version, job). A job's entry
        # (``_entry``: index -> (key, version)) is pushed when its key rises above it; a
        # key that falls or stays leaves it, older and not below, so it sorts first and
        # bounds the job; the search refreshes it at the top (``_live_top``).
        self._worst: list = []
        self._entry: dict[int, tuple[float, int]] = {}
        self._checkpointed: list = []
        self.reschedule_on_eval = self.preempt_at_checkpoint
        # What a call after only checkpoints needs: whether anything but checkpoints came
        # since the last call, the GPUs that call left free, a count of the queue's
        # changes, the (count, free GPUs) of the last fill a repeat would not change,
        # whether a checkpoint raised a running key, and the victims' verdict (None: not
        # yet known since the last full call).
        self._quiet = False
        self._free_after = -1
        self._qver = 0
        self._fill_noop: tuple | None = None
        self._key_rose = False
        self._no_victims: bool | None = None

    def key(self, job, now) -> float:
        raise NotImplementedError

    def twin_key(self, workload):
        """``key`` as the simulator's planned loop (``evalstop.sim.planned``) restates it:
        ``(rule, values)``, or None when it has no restated form for ``workload`` (then the
        checkpoint loop runs). Rules: ``"remaining"`` (SRTF-Est), ``"levels"`` (Tiresias'
        queue levels, ``values`` the thresholds), ``"fixed"`` (SJF-Est) and ``"loss"``
        (LossAware, from the workload's loss rows)."""
        return None

    @property
    def needs_checkpoints(self):
        # Running keys matter only to a scheduler that preempts; without preemption a
        # checkpoint changes nothing here (on_eval below does nothing).
        return self.preempt_on_arrival or self.preempt_at_checkpoint

    # ---- events -----------------------------------------------------------------------
    def submit(self, job, now):
        self._enqueue((self.key(job, now), next(self._seq), job))
        self._quiet = False

    def _enqueue(self, entry):
        front = self._front
        if front and entry < front[-1]:
            insort(front, entry)
            if len(front) > self.depth:
                heapq.heappush(self._wait, front.pop())
        else:
            heapq.heappush(self._wait, entry)
        self._qver += 1

    def _head(self):
        return self._front[0] if self._front else self._wait[0]

    def _pop_head(self):
        return self._front.pop(0) if self._front else heapq.heappop(self._wait)

    def on_eval(self, job, now):
        if self.preempt_on_arrival:
            self._set_running_key(job, self.key(job, now))
        elif self.preempt_at_checkpoint:
            # Only this call's yields read it: the key is made when one asks (_running_key).
            self._running[job.index] = _UNKEYED
        if self.preempt_at_checkpoint:
            self._checkpointed.append(job)

    def on_end(self, job, now, stopped):
        self._running.pop(job.index, None)
        self._entry.pop(job.index, None)
        self._quiet = False

    @property
    def queue_length(self):
        return len(self._front) + len(self._wait)

    # ---- decisions --------------------------------------------------------------------
    def schedule(self, now, free_gpus):
        self._moved = set()  # started or preempted in this call: never a victim again
        if (self.quiet_calls and self._quiet and free_gpus == self._free_after
                and not self._acts(now, free_gpus)):
            self._checkpointed.clear()
            return [], []
        start: list = []
        preempt: list = []
        free_gpus = self._fill(now, free_gpus, start)
        if (self._front or self._wait) and self.preempt_at_checkpoint and self._checkpointed:
            free_gpus = self._yield_at_checkpoints(now, free_gpus, start, preempt)
        elif self._checkpointed:
            self._checkpointed.clear()
        if (self._front or self._wait) and self.preempt_on_arrival:
            free_gpus = self._preempt_for_head(now, free_gpus, start, preempt)
        self._quiet, self._free_after = True, free_gpus
        self._key_rose, self._no_victims = False, None
        return start, preempt

    def _acts(self, now, free):
        """Whether a call after only checkpoints, on the ``free`` GPUs the last call left,
        could start or preempt a job: a checkpointed job would yield to the head, a key
        rose (the victims may differ), or the last call left work a repeat would do."""
        if not (self._front or self._wait):
            return False
        head_key, _, head = self._head()
        limit = head_key + self.margin
        if self.preempt_at_checkpoint:
            running = self._running
            for job in self._checkpointed:
                if (job.index in running and job.running and head.gpus <= free + job.gpus
                        and self._running_key(job, now) > limit):
                    return True
        if free > 0 and self._fill_noop != (self._qver, free):
            return True  # (rare: a fill cut short by ``depth`` after it started jobs)
        if not self.preempt_on_arrival:
            return False
        if self._key_rose or head.gpus <= free:
            return True
        if self._no_victims is None:
            self._no_victims = not self._enough_above(limit, head.gpus - free)
        return not self._no_victims

    def _fill(self, now, free_gpus, start):
        front, wait = self._front, self._wait
        if free_gpus <= 0 or not (front or wait):
            self._fill_noop = (self._qver, free_gpus)
            return free_gpus
        looked = k = n_started = 0
        depth = self.depth
        # The front first, in order (a job started leaves it), then the heap, whose skipped
        # entries join the front's end: they come after all of it and before the rest.
        while k < len(front) and looked < depth and free_gpus > 0:
            entry = front[k]
            looked += 1
            job = entry[2]
            if job.gpus <= free_gpus:
                free_gpus -= job.gpus
                del front[k]
                n_started += 1
                self._started(job, entry[0], start)
            else:
                k += 1
        while wait and looked < depth and free_gpus > 0:
            entry = heapq.heappop(wait)
            looked += 1
            job = entry[2]
            if job.gpus <= free_gpus:
                free_gpus -= job.gpus
                n_started += 1
                self._started(job, entry[0], start)
            else:
                front.append(entry)
        # A repeat would look at the same jobs when this one started none, saw the whole
        # queue (the front, at most ``depth``, is walked to its end unless no GPU is left),
        # or left no GPU free.
        if not n_started or not wait or free_gpus <= 0:
            self._fill_noop = (self._qver, free_gpus)
        return free_gpus

    def _started(self, job, key, start):
        # The wait key of a preempted job predates the progress it made before preemption.
        key = self.key(job, None) if job.n_preemptions else key
        start.append(job)
        self._qver += 1
        self._moved.add(job.index)
        if self.preempt_on_arrival or self.preempt_at_checkpoint:
            self._set_running_key(job, key)
        else:
            self._running[job.index] = (key, 0)

    def _running_key(self, job, now):
        """A running job's key as of its last checkpoint (made then, or now from its view
        as of then)."""
        key = self._running[job.index][0]
        if key is None:
            key = self.key(job, now)
            self._running[job.index] = (key, 0)
        return key

    def _set_running_key(self, job, key):
        version = next(self._seq)  # globally unique, so no stale entry can match again
        old = self._running.get(job.index)
        if old is None or old[0] is None or key > old[0]:
            self._key_rose = True
        self._running[job.index] = (key, version)
        if self.preempt_on_arrival:
            entry = self._entry.get(job.index)
            if entry is None or key > entry[0]:
                self._push_worst(job, key, version)

    def _push_worst(self, job, key, version):
        self._entry[job.index] = (key, version)
        heapq.heappush(self._worst, (-key, version, version, job))
        if len(self._worst) > 64 + 4 * len(self._running):
            self._compact()

    def _compact(self):
        entry = self._entry
        self._worst = [e for e in self._worst if entry.get(e[3].index, (0, -1))[1] == e[2]]
        heapq.heapify(self._worst)

    def _live_top(self):
        """The top of ``_worst`` once stale entries are dropped and a job's entry that its
        key fell below is replaced by the entry it has (None: empty)."""
        entry, running = self._entry, self._running
        while self._worst:  # (a push may compact it into a new list)
            top = self._worst[0]
            i = top[3].index
            if entry.get(i, (0, -1))[1] != top[2]:
                heapq.heappop(self._worst)  # stale
            elif running[i][1] != top[2]:
                heapq.heappop(self._worst)
                self._push_worst(top[3], *running[i])
            else:
                return top
        return None

    def _preempt(self, job, now, preempt):
        self._moved.add(job.index)
        self._running.pop(job.index, None)
        self._entry.pop(job.index, None)
        preempt.append(job)
        # The job's key as it waits: progress is as of its last checkpoint.
        self._enqueue((self.key(job, now), next(self._seq), job))

    def _preempt_for_head(self, now, free_gpus, start, preempt):
        rounds = 0
        while (self._front or self._wait) and rounds < self.depth:
            rounds += 1
            head_key, _, head = self._head()
            if head.gpus <= free_gpus:
                free_gpus = self._fill(now, free_gpus, start)
                continue
            if head.gpus - free_gpus > 1 and not self._enough_above(
                    head_key + self.margin, head.gpus - free_gpus):
                break  # what the search below would find, without popping and pushing back
            victims, popped, gain = [], [], 0
            while free_gpus + gain < head.gpus and (top := self._live_top()) is not None:
                neg_key, _, version, job = top
                if -neg_key <= head_key + self.margin:
                    break
                popped.append(heapq.heappop(self._worst))
                if not job.running or job.index in self._moved:
                    continue
                victims.append(job)
                gain += job.gpus
            for entry in popped:
                if entry[3] not in victims or free_gpus + gain < head.gpus:
                    heapq.heappush(self._worst, entry)
            if free_gpus + gain < head.gpus:
                break
            self._pop_head()  # the head, before the victims join the queue
            for job in victims:
                self._preempt(job, now, preempt)
            free_gpus += gain - head.gpus
            self._started(head, head_key, start)
            # GPUs the victims freed beyond the head's need go to the queue now, not at
            # the next call (which, for SRTF-Est, waits for the next arrival or end).
            free_gpus = self._fill(now, free_gpus, start)
        return free_gpus

    def _enough_above(self, limit, short):
        """Whether running jobs not moved in this call, with keys above ``limit``, hold
        ``short`` GPUs: the heap read in place (a subtree whose root's key is at most
        ``limit`` holds none). When they do not (a big job at the head of the queue), the
        search would pop every candidate and push it back, at every call until the head
        fits. A job counts at its entry, by its key (which an entry's key bounds)."""
        worst, running, moved, entry = self._worst, self._running, self._moved, self._entry
        n = len(worst)
        stack = [0] if n else []
        while stack:
            k = stack.pop()
            neg_key, _, version, job = worst[k]
            if -neg_key <= limit:
                continue
            if (entry.get(job.index, (0, -1))[1] == version and job.running
                    and job.index not in moved and running[job.index][0] > limit):
                short -= job.gpus
                if short <= 0:
                    return True
            k = 2 * k + 1
            if k < n:
                stack.append(k)
                if k + 1 < n:
                    stack.append(k + 1)
        return False

    def _yield_at_checkpoints(self, now, free_gpus, start, preempt):
        for job in self._checkpointed:
            if (not (self._front or self._wait) or job.index not in self._running or not job.running
                    or job.index in self._moved):
                continue
            head_key, _, head = self._head()
            if head.gpus <= free_gpus + job.gpus and (
                    self._running_key(job, now) > head_key + self.margin):
                self._preempt(job, now, preempt)
                free_gpus += job.gpus
                free_gpus = self._fill(now, free_gpus, start)
        self._checkpointed.clear()
        return free_gpus
