"""Compiled loops, when the ``fast`` extra (numba) is installed, and only where they pay.

A few hot loops of the simulator have a numba twin (a module whose functions are
``numba.njit``-compiled) that gives the same floats and the same decisions as the Python
or numpy version; the tests compare them. Nothing is imported until a twin is asked for.

A twin has costs the Python version does not. The first twin in a process pays numba's
import and its first load (``NUMBA_S``: numba also imports ``scipy.linalg`` for its BLAS
check), each twin the load of its cached compiled code (``Cost.load_s``), and the first
use on a machine compiles it (12-20 CPU-s per twin, cached on disk with ``cache=True``,
beside the module or in numba's user cache directory when that is not writable). So by
default (``EVALSTOP_JIT`` unset) a twin runs only when its estimated saving, linear in the
work (``Cost.job_s`` per job plus ``Cost.eval_s`` per (job, eval) pair, measured by
``benchmarks/bench_jit_switch.py`` as whole ``evalstop simulate`` processes), exceeds what
loading it still costs in this process; small runs never load numba. ``EVALSTOP_JIT=1``
uses twins at any size (the tests do), ``EVALSTOP_JIT=0`` never. Results are the same
either way.

When a twin's compiled code is not yet cached beside its module and stderr is a terminal,
one line says it is compiling (first run only), since that run takes 10-20 s longer.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import NamedTuple


class Cost(NamedTuple):
    """What a twin costs to load and saves per unit of work, in CPU-seconds."""

    load_s: float
    job_s: float = 0.0
    eval_s: float = 0.0


# Whole-process runs of the Philly trace at 1x and 4x (bench_jit_switch; docs/benchmarks.md),
# taking the smallest saving seen so that a run the switch sends to a twin is not slower.
# SRTF-Est's loop saved 4-7 us per job: it pays from about 2.6x Philly. The default rule's
# plan saves about 0.09 s per 1.64M (job, eval) pairs inside one process, but whole
# processes showed no saving up to 4x; counted at half that, it pays from about 16x.
NUMBA_S = 0.7
COSTS = {
    "evalstop.sim.planned_jit": Cost(load_s=0.15, job_s=4e-6),
    # Tiresias on the same twin saved 27-33 us per job against its Python planned loop
    # (whole processes, the load counted back in; 1x Philly and its first 30,000 jobs, least
    # with evalstop:k=2): counted at half, it pays from about 61,000 jobs.
    "evalstop.sim.planned_jit:levels": Cost(load_s=0.15, job_s=1.4e-5),
    # LossAware on the same twin saved 6.8-9.8 us per job at 1x Philly and 5.3-14.7 on its
    # first 30,000 jobs (whole processes, the load counted back in; least: LossAware+default
    # on 30,000 jobs, where the twin was 1.58x slower): counted at 5, it pays from about
    # 170,000 jobs (2.1x Philly), or from 30,000 once numba is loaded.
    "evalstop.sim.planned_jit:loss": Cost(load_s=0.15, job_s=5e-6),
    # SJF-Est on the same twin saved 1.5-2.6 us per job at 1x Philly and 2.5-3.1 at 4x
    # (whole processes, the load counted back in; least: SJF-Est alone at 1x, whose
    # queue is the shortest): counted at 2, it pays from about 425,000 jobs (5.2x Philly), or from 75,000
    # jobs once numba is loaded.
    "evalstop.sim.planned_jit:fixed": Cost(load_s=0.15, job_s=2e-6),
    "evalstop.detectors.cusum_drop_jit": Cost(load_s=0.08, eval_s=3e-8),
    # Past the default rule's first merge (32 evals) the objects run each row the plan
    # leaves, 6-8 us per eval (whole processes, 2k-5k Philly jobs at 50-100 evals; it is
    # asked with those rows): it pays from about 1,600 such jobs of 100 evals.
    "evalstop.detectors.block_cusum_jit": Cost(load_s=0.1, eval_s=5e-6),
    # With the default's collapse and dead-run paths (issue 46) the objects cost about
    # 22 us per eval and the twin's whole rule under 1 (plan_speed_failshapes: 2,000 jobs
    # of 100 evals, in one process): counted at 10 us, well under half of the saving.
    "evalstop.detectors.block_cusum_jit:late": Cost(load_s=0.1, eval_s=1e-5),
}
# A twin not measured yet is taken to save what the default rule's plan saves per job.
UNMEASURED = Cost(load_s=0.1, job_s=20 * COSTS["evalstop.detectors.cusum_drop_jit"].eval_s)
_loaded: dict[str, ModuleType | None] = {}


def mode() -> str:
    """``off``, ``on`` (any size) or ``auto`` (where a twin repays its load), from
    ``EVALSTOP_JIT`` and whether numba is installed."""
    flag = os.environ.get("EVALSTOP_JIT", "").strip()
    if flag == "0" or not _installed():
        return "off"
    return "on" if flag == "1" else "auto"


def enabled() -> bool:
    """Whether compiled twins may be used at all: numba is installed and ``EVALSTOP_JIT`` is
    not 0."""
    return mode() != "off"


@cache
def _installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def pays(module: str, n_jobs: int, n_evals: int = 0) -> bool:
    """Whether twin ``module`` saves more than loading it still costs in this process, for
    ``n_jobs`` jobs of ``n_evals`` evals each. ``MODULE:USE`` names one use of a twin
    with a cost of its own (``COSTS``); it loads ``MODULE``."""
    cost = COSTS.get(module, UNMEASURED)
    if _module(module) in _loaded:
        return True  # already paid for
    to_pay = cost.load_s + (0.0 if "numba" in sys.modules else NUMBA_S)
    return n_jobs * (cost.job_s + n_evals * cost.eval_s) > to_pay


def twin(module: str, n_jobs: int, n_evals: int = 0) -> ModuleType | None:
    """The compiled twin ``module`` (imported once) for a workload of ``n_jobs`` jobs with
    ``n_evals`` evals each, or None when the Python version should run."""
    m = mode()
    if m == "off" or (m == "auto" and not pays(module, n_jobs, n_evals)):
        return None
    return _load(_module(module))


def expect(uses) -> None:
    """Load now the twins that the calls ahead repay together: ``uses`` holds ``(name,
    n_jobs, n_evals)`` (or None) for each call this process is about to make (one task's
    simulations, say). Each twin whose summed saving exceeds its load is loaded, provided
    those twins' savings, less their loads, exceed numba's import when numba is not in yet;
    ``twin`` then runs them at any size (paid for). Does nothing unless the mode is
    ``auto``: the greedy rule in ``pays`` alone leaves a twin out that no single call
    repays, though the calls together would (six SJF-Est runs on 1x Philly)."""
    if mode() != "auto":
        return
    saving: dict[str, float] = {}
    for use in uses:
        if use is not None:
            name, n_jobs, n_evals = use
            cost = COSTS.get(name, UNMEASURED)
            module = _module(name)
            saving[module] = saving.get(module, 0.0) + n_jobs * (cost.job_s
                                                                 + n_evals * cost.eval_s)
    net = {m: s - COSTS.get(m, UNMEASURED).load_s for m, s in saving.items()
           if m not in _loaded}
    chosen = [m for m, s in net.items() if s > 0]
    if chosen and ("numba" in sys.modules or sum(net[m] for m in chosen) > NUMBA_S):
        for module in chosen:
            _load(module)


def _load(module: str) -> ModuleType | None:
    """Twin ``module``, imported once (None when it cannot be)."""
    if module not in _loaded:
        if _cold(module) and sys.stderr.isatty():
            print(f"evalstop: compiling {module} with numba (first run only, 10-20 s)",
                  file=sys.stderr, flush=True)
        try:
            _loaded[module] = importlib.import_module(module)
        except ImportError as exc:
            # numba refuses to import under a numpy newer than it supports: the Python
            # version gives the same results, so say so once and go on without the twin.
            warnings.warn(f"compiled twin {module} unavailable ({exc}); running the Python "
                          "version (set EVALSTOP_JIT=0 to silence this)", RuntimeWarning,
                          stacklevel=3)
            _loaded[module] = None
    return _loaded[module]


def _module(name: str) -> str:
    """The module of twin ``name`` (``MODULE`` or ``MODULE:USE``)."""
    return name.partition(":")[0]


def forget_stale(module_file: str, *deps: ModuleType) -> None:
    """Drop numba's cache index beside ``module_file`` when a module its compiled code is
    built from (``deps``: functions it inlines or calls) changed after that cache was
    written: numba checks only the cached function's own file, so an edited dependency
    would leave the old compiled code in use (an editable install after a pull). A twin
    module calls this before its first compiled function is defined; numba then compiles
    afresh and writes a new index."""
    src, dropped = Path(module_file), False
    try:
        newest = max(Path(d.__file__).stat().st_mtime for d in deps)
        for index in (src.parent / "__pycache__").glob(f"{src.stem}.*.nbi"):
            if index.stat().st_mtime < newest:
                index.unlink()
                dropped = True
    except OSError:
        return  # (a read-only install keeps its cache elsewhere, and is not edited)
    if dropped and sys.stderr.isatty():
        print(f"evalstop: compiling {src.stem} again with numba (a module it uses changed; "
              "10-20 s)", file=sys.stderr, flush=True)


def _cold(module: str) -> bool:
    """Whether no compiled code newer than the module's source is cached beside it (numba
    names its index files ``__pycache__/STEM.FUNCTION-LINE.pyXY.nbi``). False when unsure:
    a cache elsewhere (a read-only package) is not looked for."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    src = Path(spec.origin)
    if not os.access(src.parent, os.W_OK):
        return False
    try:
        born = src.stat().st_mtime
        return not any(p.stat().st_mtime >= born
                       for p in (src.parent / "__pycache__").glob(f"{src.stem}.*.nbi"))
    except OSError:
        return False
