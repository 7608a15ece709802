"""Follow TensorBoard event directories (needs ``evalstop[watch]``, i.e. ``tensorboard``).

Each directory under the root that holds ``*tfevents*`` files is one run, and the run is
one job, named by its path relative to the root (the run dir name for a flat layout).
Events are read with tensorboard's own ``EventAccumulator`` (no protobuf parsing here);
which scalar tag is the eval is an option. Scalars logged as ``simple_value`` (PyTorch's
``SummaryWriter``, Keras) and as tensors (TF2 ``tf.summary.scalar``) are both taken.

Resuming: the accumulator's read position cannot be saved, so after a restart each run
is read again once, and steps at or below the job's last taken step (kept in the state
database) are passed over silently. While running, only steps above the last one taken
are handed on; TensorBoard itself drops ("purges") events orphaned by a training
restart that went back in steps.

Identity and safety: a run's job is (run directory, run name); its tenant comes from
the run's path under the root (see ``tenants``). Symbolic links are not followed: a
directory link is not entered and a run holding a linked event file is refused. Each
value is checked like a JSONL record (``records.check_record``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

from evalstop.evallog import EvalRecord
from evalstop.integrations._extras import require
from evalstop.integrations.watch.records import Refused, check_record, name_problem, show
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.tenants import JobKey, Tenancy


def _event_accumulator():
    return require(
        "tensorboard.backend.event_processing.event_accumulator",
        what="evalstop watch --tensorboard",
        extra="watch",
    )


class TensorBoardSource:
    def __init__(self, root: str, *, tag: str = "eval", loss_tag: str | None = None,
                 tenancy: Tenancy | None = None) -> None:
        if not os.path.isdir(root):
            raise ValueError(f"--tensorboard {root!r} is not a directory")
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"--tb-tag must name a scalar tag, got {tag!r}")
        self._ea = _event_accumulator()
        self.root = os.path.realpath(root)
        self.tag, self.loss_tag = tag, loss_tag
        self.tenancy = tenancy if tenancy is not None else Tenancy()
        self.name = f"tensorboard:{self.root}"
        self._runs: dict[str, object] = {}  # job -> EventAccumulator
        self._taken: dict[str, int] = {}  # job -> last step handed on
        self._announced: set[str] = set()  # refused runs, logged once per run
        self.last_step: Callable[[JobKey], int | None] = lambda key: None

    def load(self, offsets) -> None:
        """Offsets are a JSONL notion; TensorBoard runs resume by step (see module doc)."""

    def _job(self, run_dir: str) -> str:
        rel = os.path.relpath(run_dir, self.root)
        return os.path.basename(self.root) if rel == "." else rel.replace(os.sep, "/")

    def _refuse_once(self, batch: Batch, run_dir: str, reason: str, message: str) -> None:
        if run_dir not in self._announced:
            self._announced.add(run_dir)
            batch.refused.append(Refused(reason, message).refusal)

    def _run_dirs(self, batch: Batch) -> list[str]:
        runs = []
        for dirpath, _dirs, files in os.walk(self.root):  # does not enter linked dirs
            events = [f for f in files if "tfevents" in f]
            if not events:
                continue
            problem = name_problem(os.path.relpath(dirpath, self.root), "run name")
            if problem is not None:
                self._refuse_once(batch, dirpath, "file-name", f"{show(dirpath)}: {problem}; "
                                                               "not read")
            elif any(os.path.islink(os.path.join(dirpath, f)) for f in events):
                self._refuse_once(batch, dirpath, "symlink", f"{show(dirpath)}: an event file "
                                                             "is a symbolic link; not followed")
            else:
                runs.append(dirpath)
        return sorted(runs)

    def poll(self) -> Batch:
        batch = Batch(self.name)
        ea = self._ea
        seen = set()
        for run_dir in self._run_dirs(batch):
            job = self._job(run_dir)
            try:
                tenant = self.tenancy.tenant(self.root, run_dir)
                self.tenancy.admit(tenant, job, show(run_dir))
            except Refused as exc:
                self._refuse_once(batch, run_dir, exc.refusal.reason, exc.refusal.message)
                continue
            seen.add(job)
            acc = self._runs.get(job)
            if acc is None:
                acc = ea.EventAccumulator(
                    run_dir,
                    size_guidance={ea.SCALARS: 0, ea.TENSORS: 0, ea.HISTOGRAMS: 1,
                                   ea.IMAGES: 1, ea.AUDIO: 1, ea.COMPRESSED_HISTOGRAMS: 1},
                )
                self._runs[job] = acc
                last = self.last_step(JobKey(run_dir, job))
                self._taken[job] = -math.inf if last is None else last
            try:
                acc.Reload()
            except Exception as exc:  # noqa: BLE001 - a run dir can vanish mid-read
                batch.problems.append(f"{run_dir}: cannot read events ({exc}); will retry")
                continue
            self._take(job, tenant, run_dir, acc, batch)
        for job in sorted(set(self._runs) - seen):
            batch.problems.append(f"{show(self.root)}/{show(job)}: run deleted; the job keeps "
                                  "its state")
            del self._runs[job]
            self._taken.pop(job, None)
        return batch

    def _series(self, acc, tag: str) -> list[tuple[int, float]]:
        tags = acc.Tags()
        if tag in tags.get("scalars", ()):
            return [(e.step, float(e.value)) for e in acc.Scalars(tag)]
        if tag in tags.get("tensors", ()):
            tensor_util = require("tensorboard.util.tensor_util",
                                  what="evalstop watch --tensorboard", extra="watch")
            return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                    for e in acc.Tensors(tag)]
        return []

    def _take(self, job: str, tenant: str, run_dir: str, acc, batch: Batch) -> None:
        taken = self._taken[job]
        tag = self.tenancy.metric(tenant, self.tag)
        evals = [(s, v) for s, v in self._series(acc, tag) if s > taken]
        if not evals:
            return
        losses = dict(self._series(acc, self.loss_tag)) if self.loss_tag else {}
        for step, value in sorted(evals):
            where = f"{show(run_dir)}@{show(tag)}:{step}"
            rec = EvalRecord(job, int(step), value, loss=losses.get(step))
            try:
                check_record(rec, where)
            except Refused as exc:
                batch.refused.append(exc.refusal)
                continue
            batch.records.append(Item(rec, where, JobKey(run_dir, job), tenant))
        self._taken[job] = max(s for s, _ in evals)
        batch.progressed = True
