"""Plain FIFO's loop with its rule written in (``sim.ends._fifo_starts``) gives the general
ends-only loop's result, which asks the scheduler object; a subclass or a patched method
keeps the general loop. (``test_sim_fastpath`` compares both with the event path.)"""

import numpy as np
import pytest
from conftest import make_workload

from evalstop.schedulers import EvalStop, build, make_scheduler
from evalstop.schedulers.fifo import FIFO
from evalstop.sim import ends
from evalstop.sim.engine import simulate

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "timeline_t", "timeline_used")


def test_the_loop_is_taken_for_plain_fifo_only():
    assert ends._plain_fifo(build("fifo")) and ends._plain_fifo(build("fifo", "default"))
    assert not ends._plain_fifo(build("sjf-est", "evalstop:k=2"))

    class Mine(FIFO):
        pass

    assert not ends._plain_fifo(Mine())
    spied = build("fifo")
    spied.schedule = spied.schedule  # a patched method (a test's spy) keeps the general loop
    assert not ends._plain_fifo(spied)

    class Overlay(EvalStop):
        pass

    assert not ends._plain_fifo(Overlay(make_scheduler("fifo"), "evalstop:k=2"))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rule", [None, "evalstop:k=1", "default"])
def test_random_traces_with_ties_match_the_general_loop(monkeypatch, seed, rule):
    # Arrivals on a coarse grid (many at one instant), durations that end together, jobs of
    # 1-4 GPUs on 4 GPUs: the head blocks often, ends and arrivals meet.
    rng = np.random.default_rng(seed)
    n = 60
    evals = np.cumsum(rng.normal(0.0, 0.03, (n, 5)), axis=1)
    w = make_workload(np.sort(rng.integers(0, 20, n)).astype(float) * 10,
                      rng.choice([10.0, 20.0, 40.0], n), rng.integers(1, 5, n), evals=evals)
    fast = simulate(w, 4, build("fifo", rule))
    monkeypatch.setattr(ends, "_plain_fifo", lambda scheduler: False)
    slow = simulate(w, 4, build("fifo", rule))
    for f in FIELDS:
        assert np.array_equal(getattr(fast, f), getattr(slow, f), equal_nan=True), f
    if rule == "evalstop:k=1":
        assert fast.stopped.any()
