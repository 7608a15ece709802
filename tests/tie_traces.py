"""Random traces made to tie, and the priority bases and overlays run on them: shared by
the tests that compare a fast path of the checkpoint loop with its reference, with the
fields they compare and a counter of a scheduler method's calls."""

import math
from collections import Counter

import numpy as np
import pytest
from conftest import make_workload

from evalstop.schedulers import EvalStop, LossAware, SJFEst, SRTFEst, Tiresias
from evalstop.sim import planned

FIELDS = ("start_s", "finish_s", "stopped", "stop_eval", "kept_eval", "end_progress", "gpu_s",
          "n_preemptions", "timeline_t", "timeline_used")


def assert_same_fields(res, ref):
    for f in FIELDS:
        a, b = getattr(res, f), getattr(ref, f)
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), f


def same_as_checkpoint_loop(w, n_gpus, make, overhead):
    """``simulate``'s result for ``make()`` and the Python checkpoint loop's
    (``engine._run`` with the same plan, whatever loop ``simulate`` takes), compared field
    by field and in event counts; returns both."""
    from evalstop.sim import engine
    from evalstop.sim.stops import plan_for

    res = engine.simulate(w, n_gpus, make(), restart_overhead_s=overhead)
    sched = make()
    sched.bind(n_gpus=n_gpus, restart_overhead_s=overhead)
    ref = engine._run(w, n_gpus, sched, overhead, True, plan_for(w, sched), 0.0)
    assert_same_fields(res, ref)
    assert (res.n_events, res.n_eval_events) == (ref.n_events, ref.n_eval_events)
    return res, ref


def planned_loop_runs(request, monkeypatch):
    """A Counter of the planned loop's runs (``"run"``) for a fixture parametrized
    ``python`` / ``twin``: with ``twin`` (skipped without numba) the compiled twin's kernel
    calls, ``EVALSTOP_JIT=1``; else ``EVALSTOP_JIT=0``, and the caller counts the Python
    loop's. ``count.twin`` says which."""
    count = Counter()
    count.twin = request.param == "twin"
    monkeypatch.setenv("EVALSTOP_JIT", "1" if count.twin else "0")
    if count.twin:
        pytest.importorskip("numba")
        from evalstop.sim import planned_jit

        kernel = planned_jit.run_kernel
        monkeypatch.setattr(planned_jit, "run_kernel",
                            lambda *a: count.update(["run"]) or kernel(*a))
    return count


def python_loop_calls(monkeypatch, cls, name, note):
    """On the Python checkpoint loop for every base (no twin, no SRTF-Est loop), record
    ``note(self, out)`` for each call of ``cls.name``; returns the list of records."""
    monkeypatch.setenv("EVALSTOP_JIT", "0")
    monkeypatch.setattr(planned, "ENABLED", False)
    records = []
    method = getattr(cls, name)

    def counted(self, *args):
        out = method(self, *args)
        records.append(note(self, out))
        return out

    monkeypatch.setattr(cls, name, counted)
    return records


def tie_workload(rng, n, m):
    """Arrivals on a coarse grid (many at once), durations and estimates from a few values,
    losses on an integer grid (equal drops), some non-finite or zero; evals that stop."""
    obs = np.cumsum(rng.integers(-1, 2, (n, m)), axis=1).astype(float) / 8
    losses = 10.0 - np.cumsum(rng.integers(0, 3, (n, m)), axis=1).astype(float)
    losses[rng.random(n) < 0.1, 0] = 0.0
    losses[rng.random(n) < 0.05, rng.integers(0, m)] = np.nan
    losses[rng.random(n) < 0.05, rng.integers(0, m)] = np.inf
    return make_workload(np.sort(rng.integers(0, 12, n)).astype(float) * 10,
                         rng.choice([20.0, 40.0, 80.0, 160.0], n), rng.integers(1, 4, n),
                         evals=obs, est=rng.choice([40.0, 60.0, 80.0, 120.0], n),
                         losses=losses, types=rng.choice(["lora", "dpo", "rlhf"], n))


def bases(rng):
    """One of each base, with a depth from 1 to unbounded; Tiresias' thresholds low enough
    to be crossed within runs."""
    depth = [1, 2, 3, 32, math.inf][int(rng.integers(5))]
    thresholds = sorted(set(rng.choice([10.0, 40.0, 80.0, 160.0, 640.0], 2).tolist()))
    margin = float(rng.choice([0.0, 0.0, 5.0]))
    return {"loss-aware": lambda: LossAware(depth=depth, margin=margin),
            "tiresias": lambda: Tiresias(depth=depth, thresholds_gpu_s=thresholds),
            "srtf-est": lambda: SRTFEst(depth=depth, margin=None if margin else 0.0),
            "sjf-est": lambda: SJFEst(depth=depth, margin=margin)}


def overlays(make, w):
    """The base alone and under the overlay with rules, options and modes that plan."""
    yield make
    for rule in ("evalstop:k=2", "default"):
        yield lambda rule=rule: EvalStop(make(), rule)
    yield lambda: EvalStop(make(), "evalstop:k=1", job_types=["rlhf"])
    yield lambda: EvalStop(make(), "evalstop:k=2", only_jobs=range(0, w.n_jobs, 3))
    yield lambda: EvalStop(make(), "evalstop:k=2", mode="min")


def tie_cases(base, n_seeds=30):
    """``(seed, workload, n_gpus, restart overhead, scheduler factory)`` on random traces
    made to tie: ``base`` alone and under the overlays, on few or many GPUs."""
    for seed in range(n_seeds):
        rng = np.random.default_rng(seed)
        w = tie_workload(rng, int(rng.integers(2, 40)), int(rng.integers(2, 7)))
        n_gpus = int(rng.choice([3, 4, 6, 64]))
        overhead = float(rng.choice([0.0, 10.0, 120.0]))
        for make in overlays(bases(rng)[base], w):
            yield seed, w, n_gpus, overhead, make
