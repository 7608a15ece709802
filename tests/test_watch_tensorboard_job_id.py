"""A TensorBoard run names its scheduler job with a text summary ``evalstop/job_id``
(written here by PyTorch's ``SummaryWriter.add_text`` and by TensorBoard's own
``text_pb``): the stop's ``{job_id}`` is the newest valid id read before the eval it was
decided on; an id that is no job id is refused and changes nothing."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("tensorboard")
tb_torch = pytest.importorskip("torch.utils.tensorboard")

from tensorboard.compat.proto.summary_pb2 import Summary  # noqa: E402
from tensorboard.compat.proto.tensor_pb2 import TensorProto  # noqa: E402
from tensorboard.plugins.text import summary_v2 as text_v2  # noqa: E402

from evalstop.integrations.watch import (  # noqa: E402
    Controller,
    ShellAction,
    StateStore,
    TensorBoardSource,
)

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]  # evalstop:k=2 stops at the 5th eval (step 50)


def _run(tmp_path, write):
    """Write one run of tenant acme with ``write(SummaryWriter)``; watch it to the end;
    (the action rows, the controller's log)."""
    w = tb_torch.SummaryWriter(str(tmp_path / "runs" / "acme" / "run-7"))
    write(w)
    w.close()
    err = io.StringIO()
    store = StateStore(str(tmp_path / "state.db"))
    ctl = Controller(store, [TensorBoardSource(str(tmp_path / "runs"), tag="eval/score")],
                     detector="evalstop:k=2", action=ShellAction("echo {tenant} {job_id}"),
                     err=err, out=io.StringIO())
    ctl.run_until_idle()
    rows = store.actions()
    ctl.close()
    return rows, err.getvalue()


def _evals(w, values=PEAK, first=1):
    for i, v in enumerate(values, first):
        w.add_scalar("eval/score", v, i * 10)


def _tb_text(w, text, step=0):
    """TensorBoard's own text summary (a scalar string tensor, the tag as given, as
    tf.summary.text writes it)."""
    w._get_file_writer().add_summary(text_v2.text_pb("evalstop/job_id", text), step)


def _raw(w, tensor: TensorProto, step=0):
    w._get_file_writer().add_summary(
        Summary(value=[Summary.Value(tag="evalstop/job_id", tensor=tensor)]), step)


def test_add_text_names_the_job_the_action_stops(tmp_path):
    def write(w):
        w.add_text("evalstop/job_id", "raysubmit_Ab9", 0)  # tag evalstop/job_id/text_summary
        _evals(w)

    (row,), err = _run(tmp_path, write)
    assert row.command == "echo acme raysubmit_Ab9" and row.output.strip() == \
        "acme raysubmit_Ab9", row
    assert err == ""


def test_tensorboards_own_text_summary_names_the_job(tmp_path):
    def write(w):
        _tb_text(w, "4242_3")
        _evals(w)

    (row,), _ = _run(tmp_path, write)
    assert row.command == "echo acme 4242_3"


def test_the_newest_id_before_the_deciding_eval_wins(tmp_path):
    # A resubmission into the same run folder: a new id, then its evals. The stop is
    # decided at step 50, after the second id: it acts on that one.
    def write(w):
        _tb_text(w, "100")
        _evals(w, PEAK[:3])
        _tb_text(w, "200", step=30)
        _evals(w, PEAK[3:], first=4)

    (row,), _ = _run(tmp_path, write)
    assert row.command == "echo acme 200"


def test_an_id_logged_after_the_deciding_eval_is_not_used(tmp_path):
    def write(w):
        _evals(w)
        _tb_text(w, "999", step=60)

    (row,), _ = _run(tmp_path, write)
    assert row.command == "echo acme ''"  # no id: the shipped actions refuse it


def _strings(*values: bytes, shape=()):
    t = TensorProto(dtype="DT_STRING", string_val=list(values))
    for size in shape:
        t.tensor_shape.dim.add(size=size)
    return t


@pytest.mark.parametrize("crafted, said", [
    ("12,13", "is not a scheduler job id"),  # two Slurm jobs
    ("-1", "is not a scheduler job id"),  # an option
    ("1; scancel -u bob", "is not a scheduler job id"),
    ("$(id)", "is not a scheduler job id"),
    ("", "is not a scheduler job id"),
    ("x" * 201, "over 200 bytes"),
    ("\u0661\u0662", "is not a scheduler job id"),  # Arabic-Indic digits, not ASCII ones
    (_strings(b"\xff\xfe"), "not UTF-8"),
    (_strings(b"1", b"2", shape=(2,)), "not one text string"),
    (_strings(b"1" * 100_000), "over 200 bytes"),
    (TensorProto(dtype="DT_FLOAT", float_val=[42.0]), "not one text string"),
    (None, "not a text summary"),  # a simple_value scalar under the id's tag
])
def test_a_crafted_id_is_refused_and_the_run_keeps_its_id(tmp_path, crafted, said):
    def write(w):
        _tb_text(w, "100")
        if isinstance(crafted, str):
            w.add_text("evalstop/job_id", crafted, 1)
        elif crafted is None:
            w.add_scalar("evalstop/job_id", 7.0, 1)
        else:
            _raw(w, crafted, step=1)
        _evals(w)

    (row,), err = _run(tmp_path, write)
    assert row.command == "echo acme 100"  # the refused id took nothing over
    lines = err.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "keeps its job id (100)" in lines[0], err


def test_a_run_whose_only_id_is_crafted_has_none(tmp_path):
    def write(w):
        w.add_text("evalstop/job_id", "12,13", 0)
        _evals(w)

    (row,), err = _run(tmp_path, write)
    assert row.command == "echo acme ''"
    assert "keeps its job id (none)" in err
