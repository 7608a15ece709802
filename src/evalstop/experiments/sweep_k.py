"""``k``: patience sweep. Small k stops on noise; large k lets hacking jobs run on.

The workload does not depend on k, so one point runs SRTF-Est once and EvalStop for every
k on the same jobs (cheaper than a point per k, and the pairing is the same)."""

from evalstop.experiments.methods import SRTF, with_evalstop
from evalstop.experiments.spec import Experiment, Point

KS = (1, 2, 3, 4, 5)

EXPERIMENT = Experiment(
    name="k",
    title="Patience sweep (k consecutive declines)",
    question="How do precision, recall and JCT trade off as k grows?",
    points=(
        Point(
            "paper",
            {"preset": "paper"},
            (SRTF, *(with_evalstop("srtf-est", f"evalstop:k={k}", label=f"EvalStop(k={k})+SRTF-Est",
                                   x=k) for k in KS)),
        ),
    ),
    x_name="k",
    n_gpus=64,
)
