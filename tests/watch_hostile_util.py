"""Shared pieces of the hostile-tenant tests: a two-tenant log tree and a controller."""

from __future__ import annotations

import io
import json
import os

from evalstop.integrations.watch import Controller, JsonlDirSource, ShellAction, StateStore
from evalstop.integrations.watch.tenants import Tenancy

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2]  # k=2 stops at the 5th eval, best the 3rd


def line(job, step, ev, **extra) -> bytes:
    return (json.dumps({"job": job, "step": step, "eval": ev, **extra}) + "\n").encode()


def declining(job="train", steps=PEAK) -> bytes:
    return b"".join(line(job, s, ev) for s, ev in enumerate(steps, 1))


def append(path, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "ab") as fh:
        fh.write(data)


class Site:
    """ROOT/<tenant>/*.jsonl logs, a state DB and a controller over them."""

    def __init__(self, tmp_path, *, action=None, tenancy=None, workers=4, busy_ms=5000,
                 **source_kw):
        self.tmp = tmp_path
        self.root = tmp_path / "logs"
        self.root.mkdir(exist_ok=True)
        self.db = str(tmp_path / "state.db")
        self.marker = tmp_path / "acts.txt"
        self.action = action
        self.tenancy = tenancy
        self.workers = workers
        self.busy_ms = busy_ms
        self.source_kw = source_kw
        self.ctl = None
        self.open()

    def open(self):
        self.err, self.out = io.StringIO(), io.StringIO()
        action = self.action
        if action is None:
            action = ShellAction(f"echo {{tenant}} {{job}} >> {self.marker}")
        store = StateStore(self.db, busy_ms=self.busy_ms)
        self.ctl = Controller(store, [JsonlDirSource(str(self.root), tenancy=self.tenancy,
                                                     **self.source_kw)],
                              detector="evalstop:k=2", action=action,
                              action_workers=self.workers, err=self.err, out=self.out)
        return self.ctl

    def restart(self):
        self.ctl.close()
        return self.open()

    def path(self, rel):
        return str(self.root / rel)

    def stopped(self):
        """{(tenant, job): stop_step} of every stopped job."""
        return {(j.tenant, j.job): j.stop_step for j in self.ctl.store.jobs().values()
                if j.stopped}

    def acts(self):
        return self.marker.read_text().splitlines() if self.marker.exists() else []

    def err_lines(self):
        return self.err.getvalue().splitlines()


def tenancy(pattern=None, prefix=None):
    return Tenancy(pattern, prefix)
