"""``hacking``: base-rate sweep. Precision depends on how many jobs can hack at all."""

from evalstop.experiments.methods import EVALSTOP_SRTF, SRTF
from evalstop.experiments.spec import Experiment, Point

FRACTIONS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)

EXPERIMENT = Experiment(
    name="hacking",
    title="Hacking base-rate sweep",
    question="Does EvalStop stay precise when fewer (or more) RLHF jobs hack?",
    points=tuple(
        Point(f"hacking={h:g}", {"preset": "paper", "hacking_frac": h}, (SRTF, EVALSTOP_SRTF),
              x=h)
        for h in FRACTIONS
    ),
    x_name="hacking fraction",
    n_gpus=64,
)
