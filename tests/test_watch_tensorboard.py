"""The watch controller following TensorBoard runs (written by PyTorch's SummaryWriter,
read with tensorboard's EventAccumulator). Needs the ``watch`` extra and torch."""

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
