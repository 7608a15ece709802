"""SRTF-Est with planned stops: the checkpoint loop's result without its checkpoint events.

SRTF-Est hears a running job's evals only to re-key it (estimated remaining time as of
the last checkpoint), and reads those keys only when the best waiting job does not fit
and it looks for victims. So here each job gets one event, its end (planned stop or
completion); a running job's last checkpoint is found when SRTF-Est looks at the job,
from its segment's start, overhead and progress with the expression the checkpoint loop
uses for each eval's event time, so it is the same float. The victims' heap holds each
job's key as of when it was last looked at: keys only fall while a job runs, so a stale
key is an upper bound, and the top is refreshed until it stays on top (the job the
checkpoint loop would find there).

Ties between equal keys go, in the checkpoint loop, to the key set first. When keys tie,
``_Rank`` recovers that order: it is the order in which the checkpoint loop would have
processed the two checkpoints (or starts) that set them (see ``_chain``).

Every start, finish, stop and preemption is the checkpoint loop's (``engine._run``);
``tests/test_sim_srtf_loop.py`` compares them on random traces with many ties and on a
slice of Philly. ``ENABLED = False`` sends SRTF-Est back to that loop.
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from evalstop.schedulers.overlay import EvalStop
from evalstop.schedulers.srtf import SRTFEst
from evalstop.sim.result import SimResult

ENABLED = True
_HOOKS = ("bind", "submit", "schedule", "on_eval", "on_end", "key")


def fits(scheduler) -> bool:
    """Whether ``scheduler`` is a plain SRTF-Est (alone or under the plain overlay): the
    loop here is that scheduler's, so a subclass or a patched method keeps the general
    loop."""
    if not ENABLED:
        return False
    base = scheduler
    if isinstance(scheduler, EvalStop):
        if type(scheduler) is not EvalStop:
            return False
        base = scheduler.base
    return type(base) is SRTFEst and not any(h in vars(base) for h in _HOOKS)


def _chain(seg, j):
    """The order in which the checkpoint loop processed what set a job's key: its eval
    ``j`` of segment ``seg`` (``j < j0``: the segment's start), as a sequence compared
    lexicographically. An eval's event was pushed when its predecessor (the previous eval,
    or the start) was processed, and events of one time pop in push order; so two evals of
    one time compare as their predecessors do. Within one time, ``round`` counts the
    scheduling calls before the eval: an eval due at once after a start at that time is
    processed after that call (and its other starts)."""
    s, oh, p0, d, j0, call, order, grid = seg
    b = s + oh
    while j >= j0:
        t = b + (grid[j] - p0) * d
        k = j - 1
        while k >= j0 and b + (grid[k] - p0) * d == t:
            k -= 1
        yield (t, call + 1 if k < j0 and s == t else 0, 0)
        j -= 1
    yield (s, call, 1, order)


class _Rank:
    """Tie-break of two equal keys at the same time: see ``_chain``. Rarely compared."""

    __slots__ = ("j", "seg")

    def __init__(self, seg, j):
        self.seg, self.j = seg, j

    def __lt__(self, other):
        for a, b in zip(_chain(self.seg, self.j), _chain(other.seg, other.j)):
            if a != b:
                return a < b
        return False


def run(workload, n_gpus, scheduler, restart_overhead_s, record_timeline, plan, wall0):
    base = getattr(scheduler, "base", scheduler)
    depth, margin = base.depth, base.margin
    n, m = workload.n_jobs, workload.n_evals
    grid = [float(x) for x in workload.eval_progress]
    last = m - 1
    dur = workload.duration_s.tolist()
    gpus = workload.gpus.tolist()
    arrival = workload.arrival_s.tolist()
    est = workload.est_duration_s.tolist()
    end_eval, plan_stop = plan.end_eval.tolist(), plan.stopped.tolist()
    plan_kept = plan.kept_eval.tolist()

    nan, inf = math.nan, math.inf
    start_s = [nan] * n
    finish_s = [nan] * n
    stopped = [False] * n
    stop_eval = [-1] * n
    kept_eval = [last] * n
    end_progress = [0.0] * n
    gpu_s = [0.0] * n
    seg_start = [0.0] * n
    seg_oh = [0.0] * n
    seg_p0 = [0.0] * n
    segs: list = [None] * n  # the running segment: (start, overhead, p0, dur, j0, call, order, grid)
    done = [-1] * n  # the last eval processed (as of when SRTF-Est last looked)
    prog = [0.0] * n  # JobView.progress: as of that eval, or of the preemption
    n_pre = [0] * n
    live: list = [None] * n  # the job's current entry in ``worst``; None when not running
    ev_seq = [0] * n  # the seq of the job's live end event

    push, pop, replace = heapq.heappush, heapq.heappop, heapq.heapreplace
    events: list = []  # (time, seq, job): ends only
    wait: list = []  # (key, seq, job), as PriorityScheduler._wait
    worst: list = []  # (-key, time, _Rank, job): running jobs, worst first
    seq = wseq = order = 0
    n_running = 0
    free = n_gpus
    ai = 0
    tl_t: list[float] = [0.0]
    tl_used: list[int] = [0]

    def start(i, key, t, call, moved, gone):
        nonlocal seq, order, n_running
        moved.add(i)
        n_running += 1
        order += 1
        j = done[i]
        if i in gone:
            # Preempted and restarted in one call: the checkpoint loop keeps it running,
            # on the same segment; only its key (the wait key) is set anew, as a start.
            gone.discard(i)
            e = live[i] = (-key, t, _Rank((t, 0.0, 0.0, 0.0, j + 1, call, order, grid), j), i)
            push(worst, e)
            return
        if n_pre[i]:
            key = est[i] * (1.0 - prog[i])  # the wait key predates the progress made
            oh = restart_overhead_s
        else:
            oh = 0.0
        if start_s[i] != start_s[i]:
            start_s[i] = t
        p0 = seg_p0[i] = prog[i]
        seg_start[i] = t
        seg_oh[i] = oh
        seq += 1
        ev_seq[i] = seq
        push(events, (t + oh + (grid[end_eval[i]] - p0) * dur[i], seq, i))
        seg = segs[i] = (t, oh, p0, dur[i], j + 1, call, order, grid)
        e = live[i] = (-key, t, _Rank(seg, j), i)
        push(worst, e)
        if len(worst) > 64 + 4 * n_running:  # drop entries of jobs no longer running
            worst[:] = [e for e in worst if live[e[3]] is e]
            heapq.heapify(worst)

    def refresh(i, t):
        """Job i's entry as of its last eval at or before t, or None if it has not passed
        an eval since it was last looked at."""
        s, oh, p0, d, j0, call, order, _ = seg = segs[i]
        j = done[i]
        b = s + oh
        k, end = j + 1, end_eval[i]
        while k < end and b + (grid[k] - p0) * d <= t:
            k += 1
        k -= 1
        if k == j:
            return None
        done[i] = k
        g = prog[i] = grid[k]
        return (-(est[i] * (1.0 - g)), b + (g - p0) * d, _Rank(seg, k), i)

    def fill(free, t, call, moved, gone):
        if free <= 0 or not wait:
            return free
        skipped = []
        looked = 0
        while wait and looked < depth and free > 0:
            e = pop(wait)
            looked += 1
            i = e[2]
            if gpus[i] <= free:
                free -= gpus[i]
                start(i, e[0], t, call, moved, gone)
            else:
                skipped.append(e)
        for e in skipped:
            push(wait, e)
        return free

    def preempt_for_head(free, t, call, moved, gone):
        nonlocal wseq, n_running
        rounds = 0
        while wait and rounds < depth:
            rounds += 1
            head_key, _, h = wait[0]
            need = gpus[h]
            if need <= free:
                free = fill(free, t, call, moved, gone)
                continue
            limit = head_key + margin
            victims, popped, gain = [], [], 0
            while worst and free + gain < need:
                e = worst[0]
                i = e[3]
                if live[i] is not e:
                    pop(worst)  # ended or preempted
                    continue
                if i not in moved:  # started in this call: its start key stands
                    new = refresh(i, t)
                    if new is not None:
                        live[i] = new
                        replace(worst, new)
                        continue
                if -e[0] <= limit:
                    break
                popped.append(pop(worst))
                if i in moved:
                    continue
                victims.append(i)
                gain += gpus[i]
            if free + gain < need:
                for e in popped:
                    push(worst, e)
                break
            for e in popped:
                if e[3] in moved:
                    push(worst, e)
            pop(wait)  # the head, before the victims join the queue
            for i in victims:
                moved.add(i)
                live[i] = None
                n_running -= 1
                wseq += 1
                push(wait, (est[i] * (1.0 - prog[i]), wseq, i))
                gone.add(i)  # the segment ends after the call, unless it restarts in it
            free += gain - need
            start(h, head_key, t, call, moved, gone)
        return free

    t_call, call = nan, 0
    while True:
        t_heap = events[0][0] if events else inf
        t_arr = arrival[ai] if ai < n else inf
        t = t_heap if t_heap <= t_arr else t_arr  # noqa: FURB136
        if t == inf:
            break
        changed = False
        while events and events[0][0] == t:
            _, s, i = pop(events)
            if s != ev_seq[i]:
                continue  # a preempted segment's end
            j = end_eval[i]
            finish_s[i] = t
            gpu_s[i] += gpus[i] * (t - seg_start[i])
            end_progress[i] = grid[j]
            if plan_stop[i]:
                stopped[i] = True
                stop_eval[i] = j
                kept_eval[i] = plan_kept[i]
            free += gpus[i]
            live[i] = None
            n_running -= 1
            changed = True
        while ai < n and arrival[ai] == t:
            wseq += 1
            push(wait, (est[ai], wseq, ai))  # est * (1 - 0.0) is est
            ai += 1
            changed = True
        if not changed:
            continue
        if t == t_call:
            call += 1
        else:
            t_call, call = t, 0
        moved: set = set()  # started or preempted in this call: never a victim again
        gone: set = set()  # preempted in this call and not restarted
        free = fill(free, t, call, moved, gone)
        if wait:
            free = preempt_for_head(free, t, call, moved, gone)
            for i in gone:
                p = seg_p0[i] + max(0.0, t - seg_start[i] - seg_oh[i]) / dur[i]
                prog[i] = min(p, grid[done[i] + 1])
                gpu_s[i] += gpus[i] * (t - seg_start[i])
                ev_seq[i] = -1
                n_pre[i] += 1
        if record_timeline:
            used = n_gpus - free
            if used != tl_used[-1]:
                if tl_t[-1] == t:
                    tl_used[-1] = used
                else:
                    tl_t.append(t)
                    tl_used.append(used)
        if free == n_gpus and ai >= n and wait:
            raise RuntimeError(f"scheduler {scheduler.name} left {len(wait)} jobs waiting "
                               "on an idle cluster")

    stop_eval_a = np.array(stop_eval, dtype=np.int64)
    stopped_a = np.array(stopped, dtype=bool)
    n_evals_seen = int(np.where(stopped_a, stop_eval_a + 1, m).sum())
    res = SimResult(
        start_s=np.array(start_s),
        finish_s=np.array(finish_s),
        stopped=stopped_a,
        stop_eval=stop_eval_a,
        kept_eval=np.array(kept_eval, dtype=np.int64),
        end_progress=np.array(end_progress),
        gpu_s=np.array(gpu_s),
        n_preemptions=np.array(n_pre, dtype=np.int64),
        timeline_t=np.array(tl_t),
        timeline_used=np.array(tl_used, dtype=np.int64),
        n_gpus=n_gpus,
        scheduler=scheduler.name,
        detector=getattr(scheduler, "detector_spec", None),
        n_events=n_evals_seen + n,
        n_eval_events=n_evals_seen,
        wall_s=time.perf_counter() - wall0,
    )
    res._arrival = workload.arrival_s
    return res
