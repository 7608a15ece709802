"""World feedback for the training callback: a downstream score computed from the model.

A GRPO/RLOO run's own ``eval_reward`` is the *training* reward functions applied to the eval
prompts: the proxy, which keeps rising while a reward-hacked run's true quality falls. A
world-eval hook measures what the proxy stands for (exact match on held-out prompts with
reference answers, a test suite, a judge) and ``EvalStopCallback(world_eval=...)`` feeds
that score to the stop rule instead.

A hook is any callable ``hook(model=..., processing_class=..., step=...) -> float`` (extra
keyword arguments may be passed later: accept ``**kwargs``). It never sees the trainer's
reward functions. :class:`ExactMatchEval` is a ready-made one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class WorldEval(Protocol):
    def __call__(self, *, model: Any, processing_class: Any, step: int, **kwargs: Any) -> float:
        ...


@dataclass(frozen=True, slots=True)
class WorldScore:
    """One call of a hook: the score the rule saw, what it cost, and the proxy beside it."""

    step: int
    score: float
    seconds: float
    proxy: float | None = None


def hook_name(hook: Any, default: str = "world_score") -> str:
    """The metric name a hook's score is logged under: its ``name`` attribute, if any."""
    name = getattr(hook, "name", None)
    return name if isinstance(name, str) and name.strip() else default


def call_hook(hook: Callable[..., Any], *, model: Any, processing_class: Any,
              step: int) -> tuple[float, float]:
    """(score, seconds) of one call; a non-number is a ValueError naming the hook."""
    t0 = time.perf_counter()
    value = hook(model=model, processing_class=processing_class, step=step)
    seconds = time.perf_counter() - t0
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:  # a 0-d tensor or numpy scalar
            value = float(value.item())
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"world_eval hook {hook_name(hook)!r} returned {value!r} at step "
                             f"{step}; it must return a number (the downstream score)") from None
    return float(value), seconds


def _strip(text: str) -> str:
    return " ".join(text.split())


class ExactMatchEval:
    """Exact match of greedy completions against reference answers on held-out prompts.

    Args:
        prompts: held-out prompts (never the training prompts).
        answers: one reference answer per prompt.
        max_new_tokens: generation length.
        normalize: applied to completion and answer before comparing (default: collapse
            whitespace); pass e.g. a function that extracts the final number.
        batch_size: prompts per ``generate`` call.
        name: the metric name the score is logged under (``eval_<name>``).

    The score is the fraction of prompts whose normalized completion equals the normalized
    answer. The model is put in eval mode under ``torch.no_grad`` and given back in the
    mode it was in.
    """

    def __init__(self, prompts: Sequence[str], answers: Sequence[str], *,
                 max_new_tokens: int = 32, normalize: Callable[[str], str] = _strip,
                 batch_size: int = 8, name: str = "exact_match") -> None:
        prompts, answers = list(prompts), list(answers)
        if not prompts:
            raise ValueError("ExactMatchEval needs at least one held-out prompt")
        if len(prompts) != len(answers):
            raise ValueError(f"ExactMatchEval: {len(prompts)} prompts but {len(answers)} "
                             "answers; give one reference answer per prompt")
        if not all(isinstance(t, str) for t in prompts + answers):
            raise ValueError("ExactMatchEval: prompts and answers must be strings")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be an integer >= 1, got {max_new_tokens!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.prompts, self.answers = prompts, answers
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self.normalize, self.name = normalize, name
        self.last_completions: list[str] = []

    def completions(self, model: Any, tokenizer: Any) -> list[str]:
        """Greedy completions of every prompt (the new tokens only, decoded)."""
        import torch

        tok = getattr(tokenizer, "tokenizer", tokenizer)  # a processor wraps its tokenizer
        was_training = model.training
        side = getattr(tok, "padding_side", "right")
        out: list[str] = []
        try:
            model.eval()
            tok.padding_side = "left"  # decoder-only generation continues the prompt's end
            device = next(model.parameters()).device
            for i in range(0, len(self.prompts), self.batch_size):
                enc = tok(self.prompts[i:i + self.batch_size], return_tensors="pt",
                          padding=True).to(device)
                with torch.no_grad():
                    ids = model.generate(**enc, max_new_tokens=self.max_new_tokens,
                                         do_sample=False, pad_token_id=tok.pad_token_id)
                new = ids[:, enc["input_ids"].shape[1]:]
                out += tok.batch_decode(new, skip_special_tokens=True)
        finally:
            tok.padding_side = side
            model.train(was_training)
        return out

    def __call__(self, *, model: Any, processing_class: Any, step: int = 0,
                 **kwargs: Any) -> float:
        if processing_class is None:
            raise ValueError("ExactMatchEval needs the tokenizer: pass processing_class= to "
                             "the trainer")
        self.last_completions = self.completions(model, processing_class)
        hits = sum(self.normalize(c) == self.normalize(a)
                   for c, a in zip(self.last_completions, self.answers, strict=True))
        score = hits / len(self.answers)
        return score if math.isfinite(score) else math.nan
