"""Schedulers and detectors see a JobView only: no hidden label, no true duration, no
future scores. The boundary is structural, and checked here by a spy scheduler that walks
everything reachable from what it is given. One narrow, explained exception, the oracle
reference method that is handed the truly hacking jobs' indices, is checked at the end."""

import numpy as np
from conftest import make_workload

from evalstop.experiments import select
from evalstop.experiments.runner import hacking_jobs
from evalstop.schedulers import EvalStop, make_scheduler
from evalstop.sim.engine import simulate
from evalstop.sim.view import JobView
from evalstop.workload.model import Workload

HIDDEN = {"hacking", "duration_s", "eval_true", "peak_progress", "eval_obs", "label"}


def test_view_has_no_hidden_fields():
    assert not HIDDEN & set(JobView.__slots__)
    v = JobView(0, "a", "rlhf", "t", 1, 0.0, 10.0)
    assert not hasattr(v, "__dict__")  # nowhere to hang a hidden field


def reachable(obj, seen=None):
    """Every object reachable from ``obj`` through attributes and containers."""
    seen = set() if seen is None else seen
    stack = [obj]
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (str, int, float, bool, type(None))):
            continue
        seen.add(id(o))
        yield o
        if isinstance(o, dict):
            stack.extend(o.keys())
            stack.extend(o.values())
        elif isinstance(o, (list, tuple, set, frozenset)):
            stack.extend(o)
        for name in getattr(type(o), "__slots__", ()):
            if hasattr(o, name):
                stack.append(getattr(o, name))
        if hasattr(o, "__dict__") and not isinstance(o, type):
            stack.extend(vars(o).values())


class Spy(EvalStop):
    """Checks, at every call, that nothing it can reach is hidden or from the future."""

    def __init__(self, base, workload, only_jobs=None):
        super().__init__(base, "evalstop:k=2", only_jobs=only_jobs)
        self.w = workload  # the test's own handle, never given to the views
        self.calls = 0

    def check(self, job, now):
        self.calls += 1
        for o in reachable(job):
            assert not isinstance(o, (Workload, np.ndarray)), type(o)
        i = job.index
        n_seen = len(job.evals)
        assert job.evals == list(self.w.eval_obs[i, :n_seen])  # only what was observed
        assert job.est_duration_s == self.w.est_duration_s[i]

    def submit(self, job, now):
        self.check(job, now)
        super().submit(job, now)

    def on_eval(self, job, now):
        self.check(job, now)
        # the eval just reported is the latest one, at the job's current checkpoint
        assert job.progress == self.w.eval_progress[len(job.evals) - 1]
        return super().on_eval(job, now)


def _spy_workload():
    rng = np.random.default_rng(0)
    n = 30
    return make_workload(np.sort(rng.integers(0, 50, n)).astype(float),
                         rng.integers(5, 60, n).astype(float), rng.integers(1, 3, n),
                         evals=rng.random((n, 5)), hacking=rng.random(n) < 0.5,
                         est=rng.integers(5, 60, n).astype(float))


def test_scheduler_and_detector_never_reach_hidden_data():
    w = _spy_workload()
    n = w.n_jobs
    for name in ("fifo", "srtf-est", "loss-aware", "tiresias"):
        spy = Spy(make_scheduler(name), w)
        for o in reachable(spy.base):
            assert not isinstance(o, Workload)
        simulate(w, 3, spy)
        assert spy.calls > n


# The one exception, kept narrow: an oracle method (``Method.oracle_hacking_only``, the
# default_rule study's "k=2, true stops only") is handed by the runner the indices of the
# truly hacking jobs, so its overlay applies the rule's stops to those jobs only. It is a
# measuring device that splits a rule's gain into true and false stops, not a scheduler a
# platform could run. What it holds is a plain frozenset of ints, given explicitly; it
# never reaches the workload, and the views it is handed stay as blind as everyone else's.

def test_the_oracle_sees_views_only_like_every_scheduler():
    w = _spy_workload()
    spy = Spy(make_scheduler("srtf-est"), w, only_jobs=hacking_jobs(w))
    for o in reachable(spy.only_jobs):
        assert not isinstance(o, (Workload, np.ndarray))
    assert all(type(i) is int for i in spy.only_jobs)
    simulate(w, 3, spy)
    assert spy.calls > w.n_jobs


def test_only_oracle_methods_are_handed_hidden_labels():
    n_oracles = 0
    for exp in select(None):
        for point in exp.points:
            for m in point.methods:
                allow = frozenset({0}) if m.oracle_hacking_only else None
                sched = m.build(allow)
                for o in reachable(sched):
                    assert not isinstance(o, (Workload, np.ndarray)), (m.label, type(o))
                if m.oracle_hacking_only:  # labelled so no result passes for a deployable rule
                    n_oracles += 1
                    assert "oracle" in m.label and sched.name.endswith("+oracle")
                else:
                    assert getattr(sched, "only_jobs", None) is None, m.label
    assert n_oracles > 0
