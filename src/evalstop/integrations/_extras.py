"""Lazy imports of optional extras, with an error that names the extra to install.

The core package must import without torch, transformers, ray or tensorboard; each
integration imports its heavy dependency only when it is used, through ``require``.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def require(module: str, *, what: str, extra: str) -> ModuleType:
    """Import ``module`` or raise ``ImportError`` saying which extra provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise ImportError(
            f"{what} needs {top}: pip install 'evalstop[{extra}]' ({exc})"
        ) from exc
