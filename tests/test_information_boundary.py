"""Schedulers and detectors see a JobView only: no hidden label, no true duration, no
future scores. The boundary is structural, and checked here by a spy scheduler that walks
everything reachable from what it is given."""

import numpy as np
from conftest import make_workload

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

    def __init__(self, base, workload):
        super().__init__(base, "evalstop:k=2")
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


def test_scheduler_and_detector_never_reach_hidden_data():
    rng = np.random.default_rng(0)
    n = 30
    w = make_workload(np.sort(rng.integers(0, 50, n)).astype(float),
                      rng.integers(5, 60, n).astype(float), rng.integers(1, 3, n),
                      evals=rng.random((n, 5)), hacking=rng.random(n) < 0.5,
                      est=rng.integers(5, 60, n).astype(float))
    for name in ("fifo", "srtf-est", "loss-aware", "tiresias"):
        spy = Spy(make_scheduler(name), w)
        for o in reachable(spy.base):
            assert not isinstance(o, Workload)
        simulate(w, 3, spy)
        assert spy.calls > n
