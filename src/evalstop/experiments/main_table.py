"""``main``: the paper's main table. RLHF-heavy workload (preset "paper": 80% RLHF, 60% of
RLHF jobs hacking), 64 GPUs; SRTF-Est alone, with EvalStop, and the baselines (StopAt-0.65;
loss plateau at the default and at a live setting, see ``methods``)."""

from evalstop.experiments.methods import (
    EVALSTOP_SRTF,
    EVALSTOP_SRTF_RLHF,
    LOSS_PLATEAU,
    LOSS_PLATEAU_LIVE,
    SRTF,
    STOPAT,
)
from evalstop.experiments.spec import Experiment, Point

# The paper's main setting: 200 jobs on 64 GPUs. The other studies keep 300 jobs per
# workload, for more hacking and healthy jobs per seed (more statistical power).
MAIN_N_JOBS = 200

EXPERIMENT = Experiment(
    name="main",
    title="Main table: RLHF-heavy workload, 64 GPUs",
    question=(
        "Does EvalStop on top of SRTF-Est stop the hacking jobs (and only those), and what does "
        "that save in JCT and wasted compute, against SRTF-Est alone and two simpler stop rules?"
    ),
    points=(Point("paper", {"preset": "paper"}, (SRTF, EVALSTOP_SRTF, EVALSTOP_SRTF_RLHF, STOPAT, LOSS_PLATEAU,
                                              LOSS_PLATEAU_LIVE), n_jobs=MAIN_N_JOBS),),
    keep=(SRTF.label, EVALSTOP_SRTF.label),
    n_gpus=64,
    notes=(f"{MAIN_N_JOBS} jobs per workload, as in the paper (the other studies use 300 "
           "for more statistical power).",),
)
