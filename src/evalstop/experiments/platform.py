"""``platform``: what a platform saves, on the workload fitted to measured runs (issue 44).

The report's first screen reads this study alone. Three methods on SRTF-Est: nothing
(SRTF-Est alone), the recommended rule (``default``) and the paper's (``evalstop:k=2``),
at three kinds of point, all on 64 GPUs:

* ``fitted``: preset ``fitted`` (RLHF curves, their eval noise and the share of hacking
  jobs fitted to the shipped real runs, ``evalstop.workload.fit``);
* ``lab runs``: the same preset with every RLHF job's curves a real lab run of its drawn
  label (``rlhf_curves="lab"``, an eval every 4% of the run, the runs' own grid);
* ``peak P, fall xF``: the fitted preset with every hacking run peaking at P and falling F
  times as far as its fitted run did: the savings map, where a platform places its fleet
  by how early and how far its hacking runs fall.
"""

from evalstop.experiments.methods import DEFAULT_SRTF, EVALSTOP_SRTF, SRTF
from evalstop.experiments.spec import Experiment, Point

FITTED_POINT = "fitted"
LAB_POINT = "lab runs"
LAB_EVAL_INTERVAL = 0.04  # the lab runs' own grid
METHODS = (SRTF, DEFAULT_SRTF, EVALSTOP_SRTF)
PEAKS = (0.1, 0.3, 0.5, 0.7)  # where every hacking run peaks, share of the run
FALLS = (0.5, 1.0, 2.0)  # hacking falls, times the fitted runs' own


def map_point(peak: float, fall: float) -> str:
    return f"peak {peak:g}, fall x{fall:g}"


EXPERIMENT = Experiment(
    name="platform",
    title="What a platform saves: the workload fitted to measured runs",
    question=(
        "On a workload whose RLHF curves are fitted to measured runs, how many GPU-hours do "
        "the recommended rule and the paper's free, at what JCT and how many harmful stops, "
        "against no rule; and how does that change with how early and how far hacking "
        "runs fall?"
    ),
    points=(
        Point(FITTED_POINT, {"preset": "fitted"}, METHODS),
        Point(LAB_POINT, {"preset": "fitted", "rlhf_curves": "lab",
                          "eval_interval": LAB_EVAL_INTERVAL}, METHODS),
        *(Point(map_point(p, f), {"preset": "fitted", "hack_peak": p, "fall_scale": f},
                METHODS, x=p) for f in FALLS for p in PEAKS),
    ),
    x_name="hacking peak",
    n_gpus=64,
    notes=(("Preset `fitted`: the paper's job mix (80% RLHF, 10% LoRA, 10% DPO; no real job "
            "mix is shipped to fit one), RLHF curves, eval noise and hacking share fitted to "
            "the fit part of the shipped real runs (`benchmarks/fit_workload.py`); LoRA and "
            "DPO jobs as in the paper preset."),
           ("Point `lab runs` gives each RLHF job a real lab run of its drawn label, on the "
            "runs' own grid (an eval every 4% of the run); the savings-map points move every "
            "hacking run's peak and scale its fall, nothing else.")),
)
