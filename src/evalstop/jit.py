"""Compiled loops, when the ``fast`` extra (numba) is installed.

A few hot loops of the simulator have a numba twin (a module whose functions are
``numba.njit``-compiled) that gives the same floats and the same decisions as the Python
or numpy version; the tests compare them. Nothing is imported until a twin is asked for.

A twin has costs the Python version does not: the first use in a process pays about one
CPU-second (numba's import, which also imports ``scipy.linalg`` for its BLAS check, and
loading the compiled code), and the first use on a machine compiles it (12-20 CPU-s per
twin; cached on disk with ``cache=True``, beside the module or in numba's user cache
directory when that is not writable). On the Philly trace (82k jobs) a twin saves about
0.9 s per SRTF-Est run and 0.1 s per plan of the default rule, so by default
(``EVALSTOP_JIT`` unset) twins are used for workloads of ``MIN_JOBS`` jobs or more, where
they pay for themselves, and small runs never load numba. ``EVALSTOP_JIT=1`` uses them at
any size (the tests do), ``EVALSTOP_JIT=0`` never. Results are the same either way.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from functools import cache
from types import ModuleType

MIN_JOBS = 50_000
_loaded: dict[str, ModuleType | None] = {}


def mode() -> str:
    """``off``, ``on`` (any size) or ``auto`` (``MIN_JOBS`` or more), from ``EVALSTOP_JIT``
    and whether numba is installed."""
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


def twin(module: str, n_jobs: int) -> ModuleType | None:
    """The compiled twin ``module`` (imported once) for a workload of ``n_jobs`` jobs, or
    None when the Python version should run."""
    m = mode()
    if m == "off" or (m == "auto" and n_jobs < MIN_JOBS):
        return None
    if module not in _loaded:
        try:
            _loaded[module] = importlib.import_module(module)
        except ImportError as exc:
            # numba refuses to import under a numpy newer than it supports: the Python
            # version gives the same results, so say so once and go on without the twin.
            warnings.warn(f"compiled twin {module} unavailable ({exc}); running the Python "
                          "version (set EVALSTOP_JIT=0 to silence this)", RuntimeWarning,
                          stacklevel=2)
            _loaded[module] = None
    return _loaded[module]
