"""``sigma``: eval noise sweep. Noisier evals fake declines (false stops) and hide real ones."""

from evalstop.experiments.methods import EVALSTOP_SRTF, SRTF
from evalstop.experiments.spec import Experiment, Point

SIGMAS = (0.01, 0.02, 0.03, 0.05, 0.08, 0.12)

EXPERIMENT = Experiment(
    name="sigma",
    title="Eval noise sweep",
    question="How do precision and recall of EvalStop (k=2) degrade as eval noise grows?",
    points=tuple(
        Point(f"sigma={s:g}", {"preset": "paper", "sigma": s}, (SRTF, EVALSTOP_SRTF), x=s)
        for s in SIGMAS
    ),
    x_name="sigma",
    n_gpus=64,
)
