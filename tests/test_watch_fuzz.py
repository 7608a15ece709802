"""Fuzzing the watch intake (hypothesis, bounded): random bytes, JSON values and numbers
go to the record parser and, interleaved with a healthy tenant's log, to the
controller's poll. No exception escapes, and every valid record of the healthy tenant is
taken exactly once."""

from __future__ import annotations

import io
import json
import math
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstop.evallog import EvalRecord
from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.records import MAX_STEP, Refused, parse_line

_QUIET = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
FAST = settings(max_examples=200, deadline=None, suppress_health_check=_QUIET)
# Each poll example builds a state database and commits (fsync) per poll: fewer examples.
POLLS = settings(max_examples=30, deadline=None, suppress_health_check=_QUIET)

numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.integers(min_value=10**300, max_value=10**320), st.just(2**63), st.just(2**53),
    st.booleans(), st.none(),
)
names = st.one_of(st.text(max_size=12), st.integers(), st.just("-x"), st.just("a\x00b"),
                  st.just("\ud800"), st.just(""), st.none())
json_values = st.recursive(
    st.one_of(numbers, st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8,
)
records = st.fixed_dictionaries(
    {"job": names, "step": numbers, "eval": numbers},
    optional={"loss": numbers, "proxy": numbers, "progress": numbers, "time": numbers,
              "x": json_values},
)


def _dump(obj) -> bytes:
    try:
        text = json.dumps(obj)
    except ValueError:  # an int beyond the digit limit: write it by hand
        text = '{"job": "j", "step": 1, "eval": 1' + "0" * 5000 + "}"
    return text.encode("utf-8", "surrogatepass")


hostile_lines = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b"")),
    records.map(_dump),
    json_values.map(_dump),
)


def _check_accepted(rec: EvalRecord) -> None:
    assert isinstance(rec.step, int) and 0 <= rec.step < MAX_STEP
    assert not math.isinf(rec.eval)
    rec.job.encode("utf-8")  # storable
    assert rec.job.isprintable() and not rec.job.startswith("-")


@FAST
@given(hostile_lines)
def test_parser_refuses_or_returns_a_valid_record(raw):
    try:
        rec = parse_line(raw, "f:1")
    except Refused as exc:
        assert exc.refusal.reason and exc.refusal.message.startswith("f:1: ")
        return
    _check_accepted(rec)


def _healthy(n, start=1):
    return [json.dumps({"job": f"h{i % 3}", "step": start + i // 3, "eval": float(i % 5)})
            .encode() + b"\n" for i in range(n)]


@POLLS
@given(st.lists(st.lists(hostile_lines, max_size=6), min_size=1, max_size=4))
def test_poll_survives_hostile_lines_and_takes_healthy_records_once(tmp_path_factory, polls):
    tmp = tmp_path_factory.mktemp("fuzz")
    root = tmp / "logs"
    (root / "evil").mkdir(parents=True)
    (root / "good").mkdir()
    store = StateStore(str(tmp / "s.db"))
    ctl = Controller(store, [JsonlDirSource(str(root))], detector="evalstop:k=1000",
                     err=io.StringIO(), out=io.StringIO())
    fed = []
    healthy = _healthy(6 * len(polls))
    per = len(healthy) // len(polls)
    for i, lines in enumerate(polls):
        with open(root / "evil" / "x.jsonl", "ab") as fh:
            fh.write(b"".join(line + b"\n" for line in lines))
        with open(root / "good" / "run.jsonl", "ab") as fh:
            fh.write(b"".join(healthy[i * per:(i + 1) * per]))
        if i == len(polls) // 2:  # a restart in the middle changes nothing
            ctl.close()
            store = StateStore(str(tmp / "s.db"))
            ctl = Controller(store, [JsonlDirSource(str(root))], detector="evalstop:k=1000",
                             err=io.StringIO(), out=io.StringIO())
        for res in ctl.run_until_idle():
            fed += [r for r in res.fed]
    good = os.path.realpath(root / "good" / "run.jsonl")
    taken = {j.job: (j.n_evals, j.last_step, j.skipped) for j in ctl.store.jobs().values()
             if j.source == good}
    n = 2 * len(polls)  # each healthy job: steps 1..n, each fed once, none re-read
    assert taken == {"h0": (n, n, 0), "h1": (n, n, 0), "h2": (n, n, 0)}
    for rec in fed:
        _check_accepted(rec)
    ctl.close()


# ---- TensorBoard event files: the same guarantee ---------------------------------------------
def _frame(data: bytes) -> bytes:
    import struct

    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    head = struct.pack("<Q", len(data))
    return (head + struct.pack("<I", masked_crc32c(head)) + data
            + struct.pack("<I", masked_crc32c(data)))


def _event(step: int, value) -> bytes:
    from tensorboard.compat.proto import event_pb2, summary_pb2

    v = summary_pb2.Summary.Value(tag="eval")
    if isinstance(value, float):
        v.simple_value = value
    else:
        v.tensor.CopyFrom(value)
    return event_pb2.Event(step=step, summary=summary_pb2.Summary(value=[v])).SerializeToString()


def _tensor_of(draw_value):
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2

    shape, dtype, vals, strs = draw_value
    proto = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in shape]))
    if dtype == types_pb2.DT_STRING:
        proto.string_val.extend(strs)
    else:
        proto.float_val.extend(vals)
    return proto


_DTYPES = [1, 2, 3, 7, 9, 10]  # float, double, int32, string, int64, bool
tensors = st.tuples(st.lists(st.integers(-1, 3), max_size=3), st.sampled_from(_DTYPES),
                    st.lists(st.floats(allow_nan=True, width=32), max_size=4),
                    st.lists(st.binary(max_size=6), max_size=3))
tb_steps = st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(0, 50))
tb_records = st.one_of(
    st.tuples(tb_steps, st.floats(allow_nan=True, width=32)).map(lambda t: _frame(_event(*t))),
    st.tuples(tb_steps, tensors).map(lambda t: _frame(_event(t[0], _tensor_of(t[1])))),
    st.binary(max_size=40).map(_frame),                     # framed, not an event
    st.binary(max_size=40),                                 # not even framed
)


@POLLS
@given(st.lists(st.lists(tb_records, max_size=5), min_size=1, max_size=3))
def test_tensorboard_poll_survives_hostile_events_and_takes_healthy_ones_once(
        tmp_path_factory, polls):
    from evalstop.integrations.watch import TensorBoardSource

    tmp = tmp_path_factory.mktemp("tbfuzz")
    root = tmp / "runs"
    (root / "evil" / "run").mkdir(parents=True)
    (root / "good" / "run").mkdir(parents=True)
    evil = root / "evil" / "run" / "events.out.tfevents.1.evil"
    good = root / "good" / "run" / "events.out.tfevents.1.good"

    def controller():
        return Controller(StateStore(str(tmp / "s.db")), [TensorBoardSource(str(root))],
                          detector="evalstop:k=1000", err=io.StringIO(), out=io.StringIO())
    ctl = controller()
    step = 0
    for i, frames in enumerate(polls):
        with open(evil, "ab") as fh:
            fh.write(b"".join(frames))
        with open(good, "ab") as fh:
            for _ in range(2):
                step += 1
                fh.write(_frame(_event(step, float(step % 3))))
        if i == len(polls) // 2:  # a restart: runs are read again, nothing fed twice
            ctl.close()
            ctl = controller()
        for res in ctl.run_until_idle():
            for rec in res.fed:
                _check_accepted(rec)
    (job,) = [j for j in ctl.store.jobs().values() if j.job == "good/run"]
    assert (job.n_evals, job.last_step, job.skipped) == (step, step, 0)
    ctl.close()
