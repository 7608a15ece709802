"""``regime``: in which setting would the paper's figures hold?

Our ``main`` study reproduces neither the paper's precision (98.3%) nor its JCT change
(-9.4%). Two settings the paper's summary does not pin down could explain it: how often
jobs are evaluated (fewer evals per run = fewer chances for two chance declines on a
plateau, and larger true gains between evals) and how loaded the cluster is (queueing
delay, and so the JCT saving from freed GPUs, grows steeply with load). This study varies
both on the ``paper`` preset, with EvalStop on every job and on RLHF jobs only. It is a
sensitivity study: nothing here changes a default, and no detector is tuned.
"""

from evalstop.experiments.methods import EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF, SRTF
from evalstop.experiments.spec import Experiment, Point

EVAL_INTERVALS = (0.05, 0.1, 0.2)  # 20, 10 and 5 evals per run
LOADS = (0.5, 0.7, 0.9)

EXPERIMENT = Experiment(
    name="regime",
    title="Sensitivity: eval frequency and cluster load",
    question=(
        "Would the paper's precision and JCT figures hold with fewer evals per run or a "
        "less loaded cluster, settings the paper's summary leaves open?"
    ),
    points=tuple(
        Point(f"evals every {iv:g}, load {load:g}",
              {"preset": "paper", "eval_interval": iv, "load": load},
              (SRTF, EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF))
        for iv in EVAL_INTERVALS for load in LOADS
    ),
    n_gpus=64,
    notes=("Eval interval 0.05 is the default (20 evals per run); load 0.9 is the default.",),
)
