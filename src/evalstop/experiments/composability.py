"""``composability``: EvalStop wraps any base scheduler; each base with and without it."""

from evalstop.experiments.methods import bare, with_evalstop
from evalstop.experiments.spec import Experiment, Point
from evalstop.schedulers import SCHEDULERS

EXPERIMENT = Experiment(
    name="composability",
    title="Composability: every base scheduler with and without EvalStop",
    question="Does the JCT and waste saving hold whichever base scheduler EvalStop wraps?",
    points=(
        Point(
            "paper",
            {"preset": "paper"},
            tuple(m for base in SCHEDULERS for m in (bare(base), with_evalstop(base))),
        ),
    ),
    n_gpus=64,
)
