"""World feedback as the callback's input: a hook called with the model and tokenizer
gives the score the rule sees (real TRL GRPOTrainer runs on a 1-layer GPT-2 and a
word-level tokenizer built in code, CPU, nothing downloaded).

The training reward is scripted to rise at every step, so GRPO's ``eval_reward`` (the
proxy) only goes up; the world hook is scripted to peak at step 6 and decline. A rule
reading the proxy never stops; the callback with the hook stops at step 10, best step 6.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
trl = pytest.importorskip("trl")
pytest.importorskip("datasets")

from evalstop.detectors import make_detector
from evalstop.integrations.hf import EvalStopCallback, config_warnings
from evalstop.integrations.world_eval import ExactMatchEval

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning")

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "grpo_world_eval.py"
WORLD = {2: 0.2, 4: 0.4, 6: 0.6, 8: 0.5, 10: 0.3, 12: 0.7, 14: 0.8, 16: 0.9}


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("grpo_world_eval", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Calls:
    """Counts reward-function calls, and those made while a world hook runs."""

    def __init__(self):
        self.reward = 0
        self.during_hook = 0
        self.in_hook = False

    def rising_reward(self, prompts, completions, trainer_state=None, **kwargs):
        self.reward += 1
        self.during_hook += self.in_hook
        base = 0.05 * trainer_state.global_step  # the proxy only goes up
        return [base + (0.01 if i % 2 else -0.01) for i in range(len(completions))]

    def hook(self, table):
        seen = []

        def world(*, model, processing_class, step, **kwargs):
            self.in_hook = True
            try:
                assert isinstance(model, transformers.PreTrainedModel)
                assert processing_class is not None
                seen.append(step)
                return table.get(step, 0.95)
            finally:
                self.in_hook = False

        world.name = "heldout_acc"
        world.seen = seen
        return world


def test_rule_sees_the_world_score_not_eval_reward(example, tmp_path):
    calls = Calls()
    hook = calls.hook(WORLD)
    trainer, cb = example.build(str(tmp_path), 16, world_eval=hook,
                                reward=calls.rising_reward, save_total_limit=1)
    trainer.train()

    assert hook.seen == [2, 4, 6, 8, 10]
    assert (trainer.state.global_step, cb.stop_step, cb.best_step) == (10, 10, 6)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")
    fed = [(w.step, w.score) for w in cb.world_history]
    assert fed == [(s, WORLD[s]) for s in (2, 4, 6, 8, 10)]
    # The proxy beside each world score: GRPO's eval_reward, rising throughout.
    proxies = [w.proxy for w in cb.world_history]
    assert all(b > a for a, b in itertools.pairwise(proxies))
    rule = make_detector("evalstop:k=2", mode="max")
    assert not any(rule.update(w.step, w.proxy).stop for w in cb.world_history)
    logged = [h for h in trainer.state.log_history if "eval_heldout_acc" in h]
    assert [(h["step"], h["eval_heldout_acc"]) for h in logged] == fed
    assert all(h["eval_heldout_acc_seconds"] >= 0 and "eval_reward" in h for h in logged)
    assert calls.reward > 0 and calls.during_hook == 0  # the hook never ran the rewards


@pytest.mark.filterwarnings("error::UserWarning")  # eval_strategy="no" is right here
def test_world_eval_on_its_own_schedule(example, tmp_path):
    calls = Calls()
    hook = calls.hook({3: 0.5, 6: 0.6, 9: 0.4, 12: 0.3})
    trainer, cb = example.build(str(tmp_path), 16, world_eval=hook,
                                every=3, reward=calls.rising_reward, eval_strategy="no")
    trainer.train()
    assert hook.seen == [3, 6, 9, 12]
    assert (trainer.state.global_step, cb.stop_step, cb.best_step) == (12, 12, 6)
    assert cb.best_checkpoint == str(tmp_path / "checkpoint-6")  # saved off the schedule
    assert all(w.proxy is not None for w in cb.world_history)  # the training reward


def test_example_feeds_exact_match(example, tmp_path):
    trainer, cb = example.build(str(tmp_path), 4)
    trainer.train()
    assert [w.step for w in cb.world_history] == [2, 4]
    hook = cb.world_eval
    assert len(hook.last_completions) == len(hook.answers) == 8
    assert cb.detector.state_dict()["n_evals"] == 2
    last = trainer.state.log_history[-2]  # the world-eval entry of step 4, then the summary
    assert set(last) >= {"eval_exact_match", "eval_exact_match_seconds", "eval_reward"}
    assert last["eval_exact_match"] == cb.world_history[-1].score
    assert 0.0 <= last["eval_exact_match"] <= 1.0


def test_exact_match_scores_the_model(example):
    model, tok = example.tiny_model(), example.tiny_tokenizer()
    prompts, _ = example.task(6, offset=3)
    probe = ExactMatchEval(prompts, ["x"] * 6, max_new_tokens=2, batch_size=4)
    own = probe.completions(model, tok)
    assert len(own) == 6 and all(isinstance(c, str) for c in own)
    # Half the references are the model's own greedy answers, half can never match.
    answers = own[:3] + ["never said"] * 3
    model.train()
    score = ExactMatchEval(prompts, answers, max_new_tokens=2, batch_size=4)(
        model=model, processing_class=tok, step=0)
    assert score == 0.5
    assert model.training and tok.padding_side == "right"  # given back as it was


@pytest.mark.parametrize("kwargs, match", [
    ({"world_eval": 3}, "world_eval must be a callable"),
    ({"world_eval": lambda **k: 0.0, "world_eval_every": 0}, "world_eval_every must be"),
    ({"metric": "m", "world_eval_every": 5}, "world_eval_every must be"),
    ({"world_eval": lambda **k: 0.0, "metric": "reward"}, "is the proxy"),
])
def test_bad_world_eval_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        EvalStopCallback(**kwargs)


@pytest.mark.parametrize("prompts, answers, match", [
    ([], [], "at least one held-out prompt"),
    (["a"], ["b", "c"], "1 prompts but 2 answers"),
    (["a"], [3], "must be strings"),
])
def test_bad_exact_match_arguments(prompts, answers, match):
    with pytest.raises(ValueError, match=match):
        ExactMatchEval(prompts, answers)


def test_hook_returning_a_non_number_is_named():
    from evalstop.integrations.world_eval import call_hook

    def judge(**kwargs):
        return "great"

    with pytest.raises(ValueError, match="returned 'great' at step 4; it must return a number"):
        call_hook(judge, model=None, processing_class=None, step=4)
    score, seconds = call_hook(lambda **k: torch.tensor(0.25), model=None,
                               processing_class=None, step=1)
    assert score == 0.25 and seconds >= 0 and math.isfinite(seconds)


def test_no_eval_warning_is_dropped_for_a_scheduled_world_eval(tmp_path):
    args = transformers.TrainingArguments(output_dir=str(tmp_path), eval_strategy="no",
                                          report_to="none", use_cpu=True)
    assert any("never evaluates" in m for m in config_warnings(args, "m", "max", True))
    assert not any("never evaluates" in m
                   for m in config_warnings(args, "m", "max", True, scheduled=True))
