"""EvalStopCallback on a real transformers.Trainer (tiny random GPT-2 on CPU, no downloads).

The eval metric is scripted per global step by a callback that runs before EvalStop's, so
the expected stop step and best checkpoint are known: the score peaks at step 6 and then
declines at steps 8 and 10, so ``evalstop:k=2`` stops at step 10 and keeps checkpoint-6.
"""

from __future__ import annotations

import json
import os
import types
import warnings

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

from evalstop.integrations._extras import require

K2 = "evalstop:k=2"  # the paper's rule: the expected stops below are its
CURVE = {2: 0.1, 4: 0.3, 6: 0.5, 8: 0.4, 10: 0.2, 12: 0.6, 14: 0.7, 16: 0.8}


def test_missing_extra_names_it():
    with pytest.raises(ImportError, match=r"X needs evalstop_nope: pip install 'evalstop\[hf\]'"):
        require("evalstop_nope.sub", what="X", extra="hf")


def test_callback_import_error_names_extra(monkeypatch):
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "transformers.trainer_callback", None)
    monkeypatch.delitem(sys.modules, "evalstop.integrations.hf", raising=False)
    with pytest.raises(ImportError, match=r"EvalStopCallback needs transformers: "
                                          r"pip install 'evalstop\[hf\]'"):
        importlib.import_module("evalstop.integrations.hf")
    monkeypatch.delitem(sys.modules, "evalstop.integrations.hf", raising=False)


@pytest.fixture(scope="module")
def hf():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import torch
    import transformers

    from evalstop.integrations import hf as hfmod

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n):
            gen = torch.Generator().manual_seed(0)
            self.x = torch.randint(0, 64, (n, 8), generator=gen)

        def __len__(self):
            return len(self.x)

        def __getitem__(self, i):
            return {"input_ids": self.x[i], "labels": self.x[i]}

    class Script(transformers.TrainerCallback):
        """Writes the scripted score into the eval metrics, before EvalStop reads them.
        With several eval datasets, only dataset ``only``'s metrics get it."""

        def __init__(self, only=None):
            self.only = only

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            if self.only is None:
                metrics["eval_score"] = CURVE.get(state.global_step, 0.0)
            elif f"eval_{self.only}_loss" in metrics:
                metrics[f"eval_{self.only}_score"] = CURVE.get(state.global_step, 0.0)

    class Interrupt(transformers.TrainerCallback):
        """Ends a run after step ``at`` (its eval and save done), as a crash would."""

        def __init__(self, at):
            self.at = at

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == self.at:
                control.should_training_stop = True

    def model():
        torch.manual_seed(0)
        cfg = transformers.GPT2Config(
            n_layer=1, n_head=2, n_embd=32, vocab_size=64, n_positions=16
        )
        return transformers.GPT2LMHeadModel(cfg)

    def trainer(out, callbacks, script=None, eval_dataset=None, **overrides):
        kw = {
            "output_dir": str(out), "max_steps": 16, "per_device_train_batch_size": 4,
            "eval_strategy": "steps", "eval_steps": 2, "save_strategy": "steps",
            "save_steps": 2, "report_to": "none", "use_cpu": True, "disable_tqdm": True,
            "logging_steps": 2,
        }
        kw.update(overrides)
        args = transformers.TrainingArguments(**kw)
        return transformers.Trainer(
            model=model(), args=args, train_dataset=Tokens(64),
            eval_dataset=Tokens(4) if eval_dataset is None else eval_dataset,
            callbacks=[script or Script(), *callbacks],
        )

    return types.SimpleNamespace(mod=hfmod, trainer=trainer, Interrupt=Interrupt,
                                 Script=Script, Tokens=Tokens)


def _evalstop_warnings(record):
    return [str(w.message) for w in record if "EvalStopCallback" in str(w.message)]


def _checkpoints(out):
    return sorted(p for p in os.listdir(out) if p.startswith("checkpoint-"))


def test_stops_at_expected_step_and_keeps_best(hf, tmp_path):
    cb = hf.mod.EvalStopCallback("score", mode="max", detector=K2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tr = hf.trainer(tmp_path, [cb])
        tr.train()
    # Saves every 2 of 16 steps and no save_total_limit: the one warning is the count.
    (msg,) = _evalstop_warnings(rec)
    assert "save_best=True without save_total_limit" in msg and "up to 8 checkpoints" in msg
    assert tr.state.global_step == 10
    assert (cb.stopped, cb.stop_step, cb.best_step, cb.best_score) == (True, 10, 6, 0.5)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")
    saved = json.loads((tmp_path / "checkpoint-6" / hf.mod.STATE_FILE).read_text())
    assert saved["attributes"]["evalstop_state"]["detector"]["best_step"] == 6


def test_feeds_progress_from_max_steps(hf, tmp_path):
    """Each eval carries progress = global_step / max_steps (what block-cusum's ``plong``
    and ``stopat`` read): ``stopat:p=0.5`` over 16 steps stops at step 8."""
    cb = hf.mod.EvalStopCallback("score", mode="max", detector="stopat:p=0.5",
                                 save_best=False)
    tr = hf.trainer(tmp_path, [cb])
    tr.train()
    assert (cb.stopped, cb.stop_step) == (True, 8)
    assert cb.decision.reason == "reached progress 0.5"


def test_unaligned_saves_and_save_total_limit_keep_best(hf, tmp_path):
    # Saves every 5 steps, evals every 2, keep 1: step 6 is saved only because it is a
    # new best, and rotation spares it because the callback marks it best_model_checkpoint.
    cb = hf.mod.EvalStopCallback("eval_score", detector=K2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tr = hf.trainer(tmp_path, [cb], save_steps=5, save_total_limit=1)
        tr.train()
    assert _evalstop_warnings(rec) == []
    assert (tr.state.global_step, cb.stop_step, cb.best_step) == (10, 10, 6)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")
    assert _checkpoints(tmp_path) == ["checkpoint-6"]


def test_save_best_false_unaligned_loses_best_and_warns(hf, tmp_path):
    cb = hf.mod.EvalStopCallback("score", detector=K2, save_best=False)
    with pytest.warns(UserWarning, match="not aligned with eval_steps"):
        tr = hf.trainer(tmp_path, [cb], save_steps=5)
    with pytest.warns(UserWarning, match="no checkpoint of EvalStop's best step 6"):
        tr.train()
    assert cb.stop_step == 10 and cb.best_checkpoint is None


def test_load_best_model_at_end_aligned(hf, tmp_path):
    import torch
    from safetensors.torch import load_file

    cb = hf.mod.EvalStopCallback("score", mode="max", detector=K2)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tr = hf.trainer(
            tmp_path, [cb], save_total_limit=2, load_best_model_at_end=True,
            metric_for_best_model="score", greater_is_better=True,
        )
        tr.train()
    assert _evalstop_warnings(rec) == []
    assert cb.best_checkpoint == tr.state.best_model_checkpoint == str(tmp_path / "checkpoint-6")
    weights = load_file(str(tmp_path / "checkpoint-6" / "model.safetensors"))
    name = "transformer.h.0.attn.c_attn.weight"
    assert torch.equal(tr.model.state_dict()[name], weights[name])


def test_other_best_metric_with_limit_warns_and_reports_loss(hf, tmp_path):
    # The Trainer protects its own best (by eval_loss); EvalStop's best gets rotated away.
    cb = hf.mod.EvalStopCallback("score", detector=K2)
    with pytest.warns(UserWarning, match="save_total_limit=1 spares only the Trainer's best"):
        tr = hf.trainer(tmp_path, [cb], save_total_limit=1, metric_for_best_model="loss")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        tr.train()
    assert cb.stop_step == 10
    assert "checkpoint-6" not in _checkpoints(tmp_path)
    assert cb.best_checkpoint is None
    assert any("no checkpoint of EvalStop's best step 6" in m for m in _evalstop_warnings(rec))


@pytest.mark.parametrize("via", ["json-file", "trainer-state"])
def test_resume_keeps_streak_and_best(hf, tmp_path, via):
    # First run: crash right after step 8 (one decline into the streak).
    first = hf.mod.EvalStopCallback("score", detector=K2)
    hf.trainer(tmp_path, [first, hf.Interrupt(8)]).train()
    assert (first.stopped, first.detector.streak, first.best_step) == (False, 1, 6)
    ckpt = tmp_path / "checkpoint-8"
    stored = json.loads((ckpt / "trainer_state.json").read_text())["stateful_callbacks"]
    assert stored["EvalStopCallback"]["attributes"]["evalstop_state"]["detector"]["rule"][
        "streak"
    ] == 1
    restore = via == "trainer-state"
    if restore:
        (ckpt / hf.mod.STATE_FILE).unlink()  # only the Trainer's own mechanism is left
    fresh = hf.mod.EvalStopCallback("score", detector=K2)
    tr = hf.trainer(tmp_path, [fresh], restore_callback_states_from_checkpoint=restore)
    tr.train(resume_from_checkpoint=str(ckpt))
    live = hf.mod.EvalStopCallback.find(tr)
    # A fresh detector would not stop at 10 (first eval) nor later (the curve rises again).
    assert (tr.state.global_step, live.stop_step, live.best_step) == (10, 10, 6)
    assert live.best_checkpoint == str(tmp_path / "checkpoint-6")


@pytest.mark.parametrize("restore", [False, True])
def test_resume_from_checkpoint_outside_output_dir(hf, tmp_path, restore):
    # The first run is cut after step 8 (one decline into the streak); its checkpoint-8
    # is copied elsewhere (as from a job's object-store backup) and a new Trainer with
    # another output_dir resumes from the copy.
    import shutil

    first_out = tmp_path / "first"
    first = hf.mod.EvalStopCallback("score", detector=K2)
    hf.trainer(first_out, [first, hf.Interrupt(8)]).train()
    assert (first.stopped, first.detector.streak, first.best_step) == (False, 1, 6)
    copy = tmp_path / "backup" / "ckpt-at-8"
    shutil.copytree(first_out / "checkpoint-8", copy)
    fresh = hf.mod.EvalStopCallback("score", detector=K2)
    tr = hf.trainer(tmp_path / "second", [fresh],
                    restore_callback_states_from_checkpoint=restore)
    tr.train(resume_from_checkpoint=str(copy))
    live = hf.mod.EvalStopCallback.find(tr)
    # What the uninterrupted run gives (test_stops_at_expected_step_and_keeps_best); a fresh
    # detector would not stop at 10 (its first eval) nor later (the curve rises again).
    assert (tr.state.global_step, live.stop_step, live.best_step) == (10, 10, 6)
    # The best was saved before the cut: it stays where the first run wrote it.
    assert live.best_checkpoint == str(first_out / "checkpoint-6")


def test_loss_like_metric_under_max_is_an_error(hf):
    with pytest.raises(ValueError, match=r"metric 'eval_loss' looks like a loss .*mode='min'"
                                         r".*strict=False"):
        hf.mod.EvalStopCallback("eval_loss")
    with pytest.raises(ValueError, match="looks like a loss"):
        hf.mod.EvalStopCallback("perplexity", mode="max")
    assert hf.mod.EvalStopCallback("eval_loss", mode="min").mode == "min"
    assert not hf.mod.EvalStopCallback("eval_loss", strict=False).strict


def test_misspelt_metric_is_an_error_at_the_first_eval(hf, tmp_path):
    cb = hf.mod.EvalStopCallback("scroe", detector=K2)
    tr = hf.trainer(tmp_path, [cb], save_total_limit=2)
    with pytest.raises(ValueError, match=r"metric 'scroe' is not in the first evaluation's "
                                         r"metrics \(.*'eval_score'.*\); fix the name, or pass "
                                         r"strict=False"):
        tr.train()
    assert tr.state.global_step == 2  # the first eval round, not the end of training


def test_misspelt_metric_opt_out_warns_and_runs_on(hf, tmp_path, caplog):
    cb = hf.mod.EvalStopCallback("scroe", detector=K2, strict=False)
    tr = hf.trainer(tmp_path, [cb], save_total_limit=2)
    tr.train()
    assert tr.state.global_step == 16 and not cb.stopped
    assert "metric 'scroe' is not in this evaluation's metrics" in caplog.text


def test_metric_of_a_second_eval_dataset_is_not_misspelt(hf, tmp_path):
    # Two eval datasets: each reports its own keys in its own on_evaluate of the round.
    cb = hf.mod.EvalStopCallback("eval_b_score", detector=K2)
    tr = hf.trainer(tmp_path, [cb], script=hf.Script(only="b"), save_total_limit=2,
                    eval_dataset={"a": hf.Tokens(4), "b": hf.Tokens(4)})
    tr.train()
    assert (tr.state.global_step, cb.stop_step, cb.best_step) == (10, 10, 6)


def test_save_best_without_limit_warns_the_checkpoint_count(hf, tmp_path):
    # Saves every 5 steps, evals every 2, 16 steps, a rule that never fires here: the
    # scheduled saves are 5, 10, 15, 16 and the evals off them that can be a new best are
    # 2, 4, 6, 8, 12, 14 -> up to 10. The curve's new bests off the schedule are 2, 4, 6,
    # 12, 14 (8 is a decline), so 9 are left on disk.
    cb = hf.mod.EvalStopCallback("score", detector="evalstop:k=20")
    tr = hf.trainer(tmp_path, [cb], save_steps=5)
    with pytest.warns(UserWarning, match=r"may leave up to 10 checkpoints .*\(4 scheduled "
                                         r"saves \+ up to 6 saves of a new best.*"
                                         r"save_total_limit=2"):
        tr.train()
    assert len(_checkpoints(tmp_path)) == 9
    assert tr.state.global_step == 16 and not cb.stopped


def test_expected_checkpoints_table(hf):
    def args(save="steps", ev="steps"):
        return types.SimpleNamespace(save_strategy=save, eval_strategy=ev)

    def state(max_steps=60, save_steps=2, eval_steps=2, epochs=3):
        return types.SimpleNamespace(max_steps=max_steps, save_steps=save_steps,
                                     eval_steps=eval_steps, num_train_epochs=epochs)

    ec = hf.mod.expected_checkpoints
    assert ec(args(), state()) == (30, 0)  # the 30
    assert ec(args(), state(max_steps=61)) == (31, 0)  # + the save at the last step
    assert ec(args(), state(save_steps=10)) == (6, 24)
    assert ec(args(save="no"), state()) == (0, 30)
    assert ec(args(save="epoch", ev="epoch"), state()) == (3, 0)
    assert ec(args(save="best"), state()) is None
    assert ec(args(), state(max_steps=-1)) is None


def test_config_warnings_table(hf):
    def args(**kw):
        base = {
            "eval_strategy": "steps", "save_strategy": "steps", "metric_for_best_model": None,
            "greater_is_better": None, "save_total_limit": None,
            "load_best_model_at_end": False, "eval_steps": 2, "save_steps": 2,
        }
        base.update(kw)
        return types.SimpleNamespace(**base)

    cw = hf.mod.config_warnings
    assert cw(args(), "score", "max", True) == []
    assert cw(args(save_total_limit=1), "score", "max", True) == []
    assert "never evaluates" in cw(args(eval_strategy="no"), "score", "max", True)[0]
    assert "no checkpoint" in cw(args(save_strategy="no"), "score", "max", False)[0]
    same = {"metric_for_best_model": "eval_score", "greater_is_better": True}
    assert cw(args(save_total_limit=1, load_best_model_at_end=True, **same), "score", "max",
              True) == []
    flipped = {"metric_for_best_model": "score", "greater_is_better": False}
    msgs = cw(args(save_total_limit=1, **flipped), "score", "max", True)
    assert len(msgs) == 1 and "greater_is_better=True" in msgs[0]
    assert "save_strategy='best'" in cw(args(save_strategy="best", metric_for_best_model="loss"),
                                        "score", "max", True)[0]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"metric": ""}, "metric must be"),
        ({"metric": "score", "mode": "up"}, "mode must be 'max' or 'min'"),
        ({"metric": "score", "detector": "nope"}, "unknown detector 'nope'"),
        ({"metric": "score", "save_best": "yes"}, "save_best must be"),
        ({"metric": "score", "strict": 1}, "strict must be"),
    ],
)
def test_bad_arguments(hf, kwargs, match):
    with pytest.raises(ValueError, match=match):
        hf.mod.EvalStopCallback(**kwargs)
