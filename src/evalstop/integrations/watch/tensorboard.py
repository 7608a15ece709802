"""Follow TensorBoard event directories (needs ``evalstop[watch]``, i.e. ``tensorboard``).

Each directory under the root that holds ``*tfevents*`` files is one run, and the run is
one job, named by its path relative to the root (the run dir name for a flat layout).
Event files are read record by record (``tfrecord``), each file from the byte offset
where the last poll stopped, within the tenant's per-poll budget (``budget``: events,
bytes, files). Which scalar tag is the eval is an option. Scalars logged as
``simple_value`` (PyTorch's ``SummaryWriter``, Keras) and as one-element tensors (TF2
``tf.summary.scalar``) are both taken.

The job id: a text summary tagged ``evalstop/job_id`` (``SummaryWriter.add_text`` writes
it as ``evalstop/job_id/text_summary``, also taken) names the run's scheduler job
(``evalstop.jobid``). Each eval carries the newest valid id read before it in the run's
event files, as a JSONL record carries its own; one that is no job id (the same rules as
a record's ``job_id``) is refused, and the run keeps the id it had.

Resuming: read positions are not saved, so after a restart each run is read again once,
and steps at or below the job's last taken step (kept in the state database) are passed
over silently, as are steps at or below the last one taken while running (events
orphaned by a training restart that went back in steps).

Identity and safety: a run's job is (run directory, run name); its tenant comes from
the run's path under the root (see ``tenants``). Folders and files are opened through
``walk`` (relative to their parent's descriptor, never following a link); a run holding
a linked or special (FIFO, device) event file is refused. Each value is checked like a
JSONL record (``records.check_record``): a tensor that is not one number (two elements,
none, a string) is one refused event; a corrupt event file is refused in one line and
not read further.
"""

from __future__ import annotations

import math
import os
import stat as st_mod
from collections.abc import Callable

from evalstop import jobid
from evalstop.evallog import EvalRecord
from evalstop.integrations._extras import require
from evalstop.integrations.watch import walk
from evalstop.integrations.watch.budget import Budget, Share, Shares
from evalstop.integrations.watch.records import Refused, check_record, name_problem, show
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.tenants import JobKey, Tenancy
from evalstop.integrations.watch.tfrecord import Corrupt, read_events

LOSSES_KEPT = 4096  # recent loss values per run, matched to evals by step
JOB_ID_TAG = "evalstop/job_id"
# tf.summary.text writes the tag as given; PyTorch's add_text appends "/text_summary".
JOB_ID_TAGS = (JOB_ID_TAG, JOB_ID_TAG + "/text_summary")
JOB_ID_BYTES = jobid.MAX_LEN  # ASCII only: a longer string is no id and is not decoded


def _tensor_util():
    return require("tensorboard.util.tensor_util", what="evalstop watch --tensorboard",
                   extra="watch")


def scalar_of(value) -> float:
    """One ``Summary.Value`` as a float, or ValueError saying why it is not a scalar."""
    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return float(value.simple_value)
    if kind != "tensor":
        raise ValueError(f"not a scalar ({kind or 'empty'})")
    proto = value.tensor
    n = math.prod(d.size for d in proto.tensor_shape.dim)
    if n != 1:  # checked before converting: a crafted shape must not allocate
        raise ValueError(f"a tensor of {n} elements, not one number")
    try:
        arr = _tensor_util().make_ndarray(proto)
    except Exception as exc:  # noqa: BLE001 - any malformed tensor is refused
        raise ValueError(f"an unreadable tensor ({type(exc).__name__})") from None
    if arr.size != 1 or arr.dtype.kind not in "iuf":
        raise ValueError(f"a {arr.dtype.name} tensor of {arr.size} elements, not one number")
    return float(arr.reshape(-1)[0])


def job_id_of(value) -> str:
    """A ``evalstop/job_id`` text summary's job id, or ValueError saying why it is none."""
    if value.WhichOneof("value") != "tensor":
        raise ValueError("the job id is not a text summary")
    proto = value.tensor
    types = require("tensorboard.compat.proto.types_pb2", what="evalstop watch --tensorboard",
                    extra="watch")
    n = math.prod(d.size for d in proto.tensor_shape.dim)
    if proto.dtype != types.DT_STRING or n != 1 or len(proto.string_val) != 1:
        raise ValueError("the job id is not one text string")
    raw = proto.string_val[0]
    if len(raw) > JOB_ID_BYTES:
        raise ValueError(f"the job id is over {JOB_ID_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("the job id is not UTF-8") from None
    problem = jobid.check(text)
    if problem is not None:
        raise ValueError(problem)
    return text


class _Run:
    __slots__ = ("files", "job_id", "losses", "pending", "taken")

    def __init__(self, taken: float) -> None:
        self.files: dict[str, tuple[int, int, tuple]] = {}  # name -> (ino, pos, seen)
        self.taken = taken  # last step handed on
        self.losses: dict[int, float] = {}
        self.pending: list[tuple[int, float, str, str | None]] = []
        self.job_id: str | None = None  # the newest valid evalstop/job_id read


class TensorBoardSource:
    def __init__(self, root: str, *, tag: str = "eval", loss_tag: str | None = None,
                 tenancy: Tenancy | None = None, budget: Budget | None = None) -> None:
        if not os.path.isdir(root):
            raise ValueError(f"--tensorboard {root!r} is not a directory")
        if not isinstance(tag, str) or not tag:
            raise ValueError(f"--tb-tag must name a scalar tag, got {tag!r}")
        require("tensorboard.compat.proto.event_pb2", what="evalstop watch --tensorboard",
                extra="watch")
        self.root = os.path.realpath(root)
        self.tag, self.loss_tag = tag, loss_tag
        self.tenancy = tenancy if tenancy is not None else Tenancy()
        self.budget = budget if budget is not None else Budget()
        self.name = f"tensorboard:{self.root}"
        self._runs: dict[str, _Run] = {}  # job -> its read state
        self._announced: set[str] = set()  # refused runs and files, logged once per run
        self._cursors: dict[str, str] = {}  # tenant -> last run read (round-robin)
        self._failing: set[tuple[str, int]] = set()
        self.last_step: Callable[[JobKey], int | None] = lambda key: None

    def load(self, offsets) -> None:
        """Offsets are a JSONL notion; TensorBoard runs resume by step (see module doc)."""

    def _path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def _job(self, rel: str) -> str:
        return os.path.basename(self.root) if not rel else rel

    def _refuse_once(self, batch: Batch, key: str, reason: str, message: str,
                     tenant: str = "") -> None:
        if key not in self._announced:
            self._announced.add(key)
            batch.refuse(Refused(reason, message).refusal, tenant)

    def _run_dirs(self, batch: Batch) -> tuple[dict[str, list[walk.Entry]], walk.Listing]:
        """Run folder (relative to the root) -> its event files (regular files only)."""
        listing = walk.walk(self.root)
        for rel, exc in sorted(listing.unreadable.items()):
            key = (self._path(rel), exc.errno or 0)
            if key not in self._failing:
                self._failing.add(key)
                batch.problems.append(f"{show(self._path(rel))}: cannot list it "
                                      f"({walk.describe(exc)}); its runs are kept and it is "
                                      "retried")
        runs: dict[str, list[walk.Entry]] = {}
        bad: set[str] = set()
        for e in listing.entries:
            if "tfevents" not in e.name:
                continue
            rel = e.rel.rpartition("/")[0]
            path = self._path(rel)
            mode = e.stat.st_mode
            if st_mod.S_ISLNK(mode):
                bad.add(rel)
                self._refuse_once(batch, path, "symlink", f"{show(path)}: an event file is "
                                                          "a symbolic link; not followed")
            elif not st_mod.S_ISREG(mode):
                bad.add(rel)
                self._refuse_once(batch, path, "special", f"{show(path)}: an event file is "
                                                          "not a regular file; not read")
            else:
                runs.setdefault(rel, []).append(e)
        for rel in sorted(set(runs)):
            problem = name_problem(rel, "run name") if rel else None
            if problem is not None or rel in bad:
                if problem is not None:
                    self._refuse_once(batch, self._path(rel), "file-name",
                                      f"{show(self._path(rel))}: {problem}; not read")
                del runs[rel]
        return runs, listing

    def poll(self) -> Batch:
        batch = Batch(self.name)
        runs, listing = self._run_dirs(batch)
        by_tenant: dict[str, list[str]] = {}
        for rel in sorted(runs):
            run_dir, job = self._path(rel), self._job(rel)
            try:
                tenant = self.tenancy.tenant(self.root, run_dir)
                self.tenancy.admit(tenant, job, show(run_dir))
            except Refused as exc:
                self._refuse_once(batch, run_dir, exc.refusal.reason, exc.refusal.message)
                continue
            by_tenant.setdefault(tenant, []).append(rel)
        shares = Shares(self.budget, self._cursors)
        for tenant, rels in sorted(by_tenant.items()):
            share = shares.of(tenant)
            for rel in shares.order(tenant, rels):
                if share.spent:
                    share.short = True
                    break
                self._read_run(rel, runs[rel], tenant, share, batch)
                shares.read(tenant, rel)
        batch.over_budget.update(shares.short())
        self._forget(runs, listing, batch)
        return batch

    def _forget(self, runs: dict, listing: walk.Listing, batch: Batch) -> None:
        for job in sorted(set(self._runs) - {self._job(r) for r in runs}):
            rel = "" if job == os.path.basename(self.root) else job
            if listing.under_unreadable(rel):
                continue
            batch.problems.append(f"{show(self.root)}/{show(job)}: run deleted; the job keeps "
                                  "its state")
            del self._runs[job]

    def _run(self, rel: str) -> _Run:
        job = self._job(rel)
        run = self._runs.get(job)
        if run is None:
            last = self.last_step(JobKey(self._path(rel), job))
            run = self._runs[job] = _Run(-math.inf if last is None else last)
        return run

    def _read_run(self, rel: str, files: list[walk.Entry], tenant: str, share: Share,
                  batch: Batch) -> None:
        run = self._run(rel)
        tag = self.tenancy.metric(tenant, self.tag)
        for e in sorted(files, key=lambda f: f.name):
            if share.spent:
                share.short = True
                break
            self._read_file(rel, e, run, tag, tenant, share, batch)
        self._emit(rel, run, tenant, batch)

    def _read_file(self, rel: str, e: walk.Entry, run: _Run, tag: str, tenant: str,
                   share: Share, batch: Batch) -> None:
        path = self._path(e.rel)
        if path in self._announced:
            return  # refused as corrupt: not read again
        ino, pos, seen = run.files.get(e.name, (e.stat.st_ino, 0, None))
        if ino != e.stat.st_ino:
            ino, pos, seen = e.stat.st_ino, 0, None  # replaced: a new file
        sig = (e.stat.st_size, e.stat.st_mtime_ns)
        if seen == sig or e.stat.st_size <= pos:
            return
        share.files -= 1
        try:
            fd = walk.open_file(self.root, e.rel)
        except walk.NotRegular:
            self._refuse_once(batch, path, "special", f"{show(path)}: not a regular file; "
                                                      "not read", tenant)
            return
        except OSError as exc:
            if exc.errno not in walk.GONE:
                self._refuse_once(batch, f"{path}\0{exc.errno}", "read",
                                  f"{show(path)}: cannot read it ({walk.describe(exc)}); "
                                  "retried", tenant)
            return
        try:
            if (os.fstat(fd).st_ino) != ino:
                return
            got = read_events(fd, pos, max_events=share.events, max_bytes=share.bytes)
        except Corrupt as exc:
            self._refuse_once(batch, path, "corrupt", f"{show(path)}: corrupt event file "
                                                      f"({exc}); not read further", tenant)
            return
        except OSError as exc:
            batch.problems.append(f"{show(path)}: cannot read it ({walk.describe(exc)}); "
                                  "retried")
            return
        finally:
            os.close(fd)
        share.events -= len(got.events)
        share.bytes -= got.nbytes
        if got.oversize:
            batch.refuse(Refused("too-long", f"{show(path)}: {got.oversize} event(s) over "
                                             "16 MiB passed over").refusal, tenant)
        run.files[e.name] = (ino, got.pos, sig if got.pos == pos else None)
        for ev in got.events:
            self._event(rel, ev, run, tag, tenant, batch)
        batch.progressed = True

    def _event(self, rel: str, ev, run: _Run, tag: str, tenant: str, batch: Batch) -> None:
        if not ev.HasField("summary"):
            return
        for v in ev.summary.value:
            if v.tag in JOB_ID_TAGS:
                try:
                    run.job_id = job_id_of(v)
                except ValueError as exc:
                    where = f"{show(self._path(rel))}@{v.tag}:{ev.step}"
                    batch.refuse(Refused("schema", f"{where}: {exc}; the run keeps its job "
                                                   f"id ({run.job_id or 'none'})").refusal,
                                 tenant)
                continue
            if v.tag != tag and v.tag != self.loss_tag:
                continue
            where = f"{show(self._path(rel))}@{show(v.tag)}:{ev.step}"
            try:
                x = scalar_of(v)
            except ValueError as exc:
                batch.refuse(Refused("tensor", f"{where}: {exc}").refusal, tenant)
                continue
            if v.tag == tag:
                run.pending.append((int(ev.step), x, where, run.job_id))
            else:
                run.losses[int(ev.step)] = x
                if len(run.losses) > LOSSES_KEPT:
                    del run.losses[next(iter(run.losses))]

    def _emit(self, rel: str, run: _Run, tenant: str, batch: Batch) -> None:
        """Hand on the evals read this poll, in step order, above the last step taken."""
        pending, run.pending = sorted(run.pending, key=lambda p: p[0]), []
        job, run_dir = self._job(rel), self._path(rel)
        for step, value, where, job_id in pending:
            if step <= run.taken:
                continue
            rec = EvalRecord(job, step, value, loss=run.losses.get(step), job_id=job_id)
            try:
                check_record(rec, where)
            except Refused as exc:
                batch.refuse(exc.refusal, tenant)
                continue
            batch.records.append(Item(rec, where, JobKey(run_dir, job), tenant))
            run.taken = step
