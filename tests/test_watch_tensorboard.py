"""The watch controller following TensorBoard runs (written by PyTorch's SummaryWriter,
read record by record, checksums checked). Needs the ``watch`` extra and torch."""

from __future__ import annotations

import io
import shutil

import pytest
from conftest import watch_decisions

pytest.importorskip("tensorboard")
tb_torch = pytest.importorskip("torch.utils.tensorboard")

from evalstop.cli.main import main
from evalstop.integrations.watch import Controller, StateStore, TensorBoardSource

PEAK = [0.1, 0.3, 0.5, 0.4, 0.2, 0.6]


def _write(run_dir, values, first=1, tag="eval/score"):
    w = tb_torch.SummaryWriter(str(run_dir))
    for i, v in enumerate(values, first):
        w.add_scalar(tag, v, i * 10)
        w.add_scalar("train/loss", 1.0 / i, i * 10)
    w.close()


def _controller(tmp_path, tag="eval/score"):
    err = io.StringIO()
    store = StateStore(str(tmp_path / "state.db"))
    src = TensorBoardSource(str(tmp_path / "runs"), tag=tag, loss_tag="train/loss")
    return Controller(store, [src], detector="evalstop:k=2", err=err,
                      out=io.StringIO()), err


def _decisions(ctl):
    return watch_decisions(ctl.store)


def test_runs_are_jobs_and_resume_by_step(tmp_path):
    runs = tmp_path / "runs"
    _write(runs / "peak", PEAK[:4])
    _write(runs / "team" / "up", [0.1, 0.2])
    ctl, err = _controller(tmp_path)
    ctl.run_until_idle()
    assert _decisions(ctl) == {"peak": (False, None, 30, 4), "team/up": (False, None, 20, 2)}
    ctl.close()

    # Restart: the runs are read again by tensorboard, but no step is fed twice.
    ctl, err = _controller(tmp_path)
    assert ctl.poll_once().fed == []
    _write(runs / "peak", PEAK[4:], first=5)  # a new event file in the same run
    ctl.run_until_idle()
    assert _decisions(ctl)["peak"] == (True, 50, 30, 5)
    assert err.getvalue() == ""
    ctl.close()


def test_tensor_scalars_and_missing_tag(tmp_path):
    from tensorboard.plugins.scalar import summary_v2

    w = tb_torch.SummaryWriter(str(tmp_path / "runs" / "tf2"))
    for step, v in enumerate(PEAK, 1):  # TF2-style scalars are stored as tensors
        w._get_file_writer().add_summary(summary_v2.scalar_pb("eval/score", v), step)
    w.close()
    _write(tmp_path / "runs" / "other_tag", PEAK, tag="eval/acc")
    ctl, _ = _controller(tmp_path)
    ctl.run_until_idle()
    assert _decisions(ctl) == {"tf2": (True, 5, 3, 5)}
    ctl.close()


def test_deleted_run(tmp_path):
    runs = tmp_path / "runs"
    _write(runs / "a", [0.1, 0.2])
    _write(runs / "b", [0.1])
    ctl, err = _controller(tmp_path)
    ctl.run_until_idle()
    shutil.rmtree(runs / "a")
    ctl.run_until_idle()
    assert "a: run deleted; the job keeps its state" in err.getvalue()
    assert _decisions(ctl)["a"] == (False, None, 20, 2)
    ctl.close()


def test_cli_tensorboard(tmp_path, capsys):
    _write(tmp_path / "runs" / "peak", PEAK)
    rc = main(["watch", "--tensorboard", str(tmp_path / "runs"), "--tb-tag", "eval/score",
               "--detector", "evalstop:k=2", "--db", str(tmp_path / "s.db"), "--once"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.startswith("stop peak at step 50: 2 consecutive declines; best step 30")


def _write_values(run_dir, values):
    """Events whose ``eval/score`` value is each of ``values`` (a float, or a
    ``TensorProto`` as a hostile writer would put there), at steps 1, 2, ..."""
    from tensorboard.compat.proto import summary_pb2

    w = tb_torch.SummaryWriter(str(run_dir))
    for step, v in enumerate(values, 1):
        if isinstance(v, float):
            w.add_scalar("eval/score", v, step)
            continue
        summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="eval/score",
                                                                      tensor=v)])
        w._get_file_writer().add_summary(summary, step)
    w.close()


def _tensor(values, dtype=None):
    from tensorboard.util import tensor_util

    return tensor_util.make_tensor_proto(values, dtype=dtype)


@pytest.mark.parametrize("bad", [
    pytest.param(lambda: _tensor([0.5, 0.6]), id="two-elements"),
    pytest.param(lambda: _tensor([], dtype="float32"), id="empty"),
    pytest.param(lambda: _tensor("high"), id="string"),
    pytest.param(lambda: _tensor([[1.0]] * 3), id="matrix"),
])
def test_non_scalar_eval_tensor_costs_one_refused_event(tmp_path, bad):
    runs = tmp_path / "runs"
    _write_values(runs / "evil", [0.1, bad(), 0.3])
    _write(runs / "peak", PEAK)
    ctl, err = _controller(tmp_path)
    ctl.run_until_idle()  # used to end the controller (rc 2) on every start
    assert ctl.refused == {"tensor": 1}
    (msg,) = err.getvalue().splitlines()
    assert "evil@eval/score:2: " in msg and msg.endswith("; refused")
    d = _decisions(ctl)
    assert d["peak"] == (True, 50, 30, 5) and d["evil"][3] == 2
    ctl.close()


def test_corrupt_event_file_is_refused_loudly(tmp_path):
    runs = tmp_path / "runs"
    _write(runs / "bad", PEAK)
    _write(runs / "peak", PEAK)
    (events,) = (runs / "bad").iterdir()
    data = bytearray(events.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte: a checksum no longer matches
    events.write_bytes(bytes(data))
    ctl, err = _controller(tmp_path)
    ctl.run_until_idle()
    assert ctl.refused == {"corrupt": 1}
    (msg,) = err.getvalue().splitlines()
    assert "/bad/events.out.tfevents" in msg and ": corrupt event file (bad record" in msg
    assert "not read further" in msg
    assert _decisions(ctl)["peak"] == (True, 50, 30, 5)
    ctl.run_until_idle()
    assert err.getvalue().count("corrupt event file") == 1  # said once
    ctl.close()


def test_fifo_or_linked_event_file_is_refused_without_opening(tmp_path):
    import os

    runs = tmp_path / "runs"
    (runs / "fifo").mkdir(parents=True)
    os.mkfifo(runs / "fifo" / "events.out.tfevents.1.host")  # would block a reader
    (runs / "link").mkdir()
    _write(tmp_path / "outside", PEAK)
    (outside,) = (tmp_path / "outside").iterdir()
    os.symlink(outside, runs / "link" / "events.out.tfevents.2.host")
    _write(runs / "peak", PEAK)
    ctl, _err = _controller(tmp_path)
    ctl.run_until_idle()
    assert ctl.refused == {"special": 1, "symlink": 1}
    assert set(_decisions(ctl)) == {"peak"}
    ctl.close()


def test_events_are_read_within_the_budget(tmp_path):
    from evalstop.integrations.watch.budget import Budget

    runs = tmp_path / "runs"
    _write(runs / "a" / "flood", [0.1 * i for i in range(1, 41)])
    _write(runs / "b" / "quiet", PEAK)
    store = StateStore(str(tmp_path / "state.db"))
    src = TensorBoardSource(str(runs), tag="eval/score", budget=Budget(events=10))
    ctl = Controller(store, [src], detector="evalstop:k=2", err=io.StringIO(),
                     out=io.StringIO())
    first = ctl.poll_once()
    # The flood (80 events: eval and loss) drains over several polls; the quiet run's
    # 12 events are read in the first one.
    assert {r.job for r in first.fed} == {"a/flood", "b/quiet"}
    assert sum(r.job == "a/flood" for r in first.fed) <= 10
    assert sum(r.job == "b/quiet" for r in first.fed) >= 3
    ctl.run_until_idle()
    assert _decisions(ctl)["a/flood"][3] == 40
    ctl.close()
