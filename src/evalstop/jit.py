"""Compiled loops, when the ``fast`` extra (numba) is installed.

A few hot loops of the simulator have a numba twin (a module whose functions are
``numba.njit``-compiled) that gives the same floats and the same decisions as the Python
or numpy version; the tests compare them. The twin is used when numba imports; without it
(or with ``EVALSTOP_JIT=0`` in the environment) the Python version runs, only slower.
Nothing is imported until a twin is asked for, so a run that never needs one never pays
numba's import (about half a CPU-second). Compiled code is cached on disk
(``cache=True``: beside the module, or numba's user cache directory when that is not
writable), so only the first run on a machine pays the compilation.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from functools import cache
from types import ModuleType

_loaded: dict[str, ModuleType | None] = {}


def enabled() -> bool:
    """Whether compiled twins may be used: numba is installed and ``EVALSTOP_JIT`` is not 0."""
    if os.environ.get("EVALSTOP_JIT", "1").strip() == "0":
        return False
    return _installed()


@cache
def _installed() -> bool:
    return importlib.util.find_spec("numba") is not None


def twin(module: str) -> ModuleType | None:
    """The compiled twin ``module`` (imported once), or None when twins are off."""
    if not enabled():
        return None
    if module not in _loaded:
        _loaded[module] = importlib.import_module(module)
    return _loaded[module]
