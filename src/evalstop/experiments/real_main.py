"""``real_main``: the main table and composability with RLHF curves from real lab runs.

Two workload points on the same seeds: ``synthetic`` (the paper preset's Gao-formula RLHF
curves) and ``lab`` (each RLHF job gets a lab-corpus run with its drawn label, see
``evalstop.workload.real_curves``). Everything else about a seed's workload (arrivals,
sizes, LoRA/DPO curves, labels) is the same at both points. Both use an eval every 4% of
progress, the lab runs' own grid, so real evals are used as evaluated (no interpolation).
"""

from evalstop.experiments.default_rule import oracle
from evalstop.experiments.methods import (
    DEFAULT_SRTF,
    EVALSTOP_SRTF,
    LOSS_PLATEAU,
    LOSS_PLATEAU_LIVE,
    SRTF,
    STOPAT,
    bare,
    with_evalstop,
)
from evalstop.experiments.spec import Experiment, Point
from evalstop.schedulers import SCHEDULERS

EVAL_INTERVAL = 0.04  # the lab runs' grid: 250 RL steps, an eval every 10

# The oracle (k=2's true stops only, reads the hidden label) measures what part of k=2's
# gain on real curves a rule without false stops could keep.
MAIN_METHODS = (SRTF, EVALSTOP_SRTF, DEFAULT_SRTF, oracle("srtf-est"), STOPAT, LOSS_PLATEAU,
                LOSS_PLATEAU_LIVE)
OTHER_BASES = tuple(b for b in SCHEDULERS if b != "srtf-est")
METHODS = MAIN_METHODS + tuple(m for b in OTHER_BASES for m in (bare(b), with_evalstop(b)))


def workload(rlhf_curves: str) -> dict:
    """The workload settings of a point: the paper preset on the lab runs' eval grid."""
    return {"preset": "paper", "eval_interval": EVAL_INTERVAL, "rlhf_curves": rlhf_curves}


def _point(label: str, rlhf_curves: str) -> Point:
    return Point(label, workload(rlhf_curves), METHODS)


EXPERIMENT = Experiment(
    name="real_main",
    title="Main table and composability on real RLHF curves (lab corpus)",
    question=(
        "Do EvalStop's precision, recall, JCT and waste savings hold when the RLHF jobs' "
        "curves are real over-optimization runs instead of the Gao formula?"
    ),
    # lab first: the runner keeps the first point's first seed for the example plots.
    points=(_point("lab", "lab"), _point("synthetic", "synthetic")),
    keep=(EVALSTOP_SRTF.label,),
    n_gpus=64,
    notes=(("Both points: preset 'paper' (80% RLHF, 60% of RLHF jobs hacking), eval every 4% "
           "of progress. The lab point draws each RLHF job's curves from a corpus run with "
           "the job's label; no eval noise is added to them (they carry their own)."),),
)
