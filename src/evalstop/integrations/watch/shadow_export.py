"""``evalstop watch --export-corpus FILE``: the fleet's finished jobs as an eval log.

Every job followed in shadow to its end is written in the eval-log format
(``evalstop.evallog``: ``{"job", "step", "eval"}``, plus ``tenant``, and ``time`` and
``gpus`` where known), one record per eval, each job's records in step order, so
``evalstop replay`` and ``evalstop noise`` read it as they read any log. Job
names are unique per file: a name that two followed logs share (one tenant's, or two
tenants') is written ``NAME~2``, ``NAME~3``... in (tenant, source) order. A NaN eval is
written ``null``. The file is written whole or not at all, and an existing file is never
replaced.
"""

from __future__ import annotations

import json
import os

from evalstop.errors import InputError
from evalstop.fileio import atomic_write, check_out_file
from evalstop.integrations.watch import shadow_store
from evalstop.integrations.watch.store import StateStore


def export_corpus(store: StateStore, path: str) -> tuple[int, int]:
    """Write the followed runs that ended to ``path``; returns (jobs, records)."""
    check_out_file(path, "--export-corpus")
    if os.path.lexists(path):
        raise InputError(f"--export-corpus {path!r} exists; not replaced (name a new file)")
    jobs = shadow_store.followed(store)
    seen: dict[str, int] = {}
    n = 0
    with atomic_write(path) as fh:
        for j in jobs:
            name = j["job"]
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name = f"{name}~{seen[name]}"
            for step, score, t in j["curve"]:
                rec = {"job": name, "step": step, "eval": score, "tenant": j["tenant"]}
                if t is not None:
                    rec["time"] = t
                if j["gpus"] is not None:
                    rec["gpus"] = j["gpus"]
                fh.write(json.dumps(rec) + "\n")
                n += 1
    return len(jobs), n
