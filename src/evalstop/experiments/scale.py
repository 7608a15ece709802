"""``scale``: the composability study at a platform's size, too big for a default run.

The full Philly trace (82,247 jobs; types, labels and curves drawn per seed from the
``paper`` preset) and a synthetic trace of a million jobs, both on 512 GPUs, under every
base scheduler alone, with the paper's rule (``evalstop:k=2``) and with the default rule.
One task is one seed of one trace with its 15 simulations, so a cluster runs the seeds
side by side (``evalstop reproduce --only scale --ray ADDRESS``). Opt-in: the default
``reproduce`` leaves it out (``registry.OPT_IN``).
"""

from __future__ import annotations

from evalstop.experiments.methods import bare, with_default, with_evalstop
from evalstop.experiments.spec import Experiment, Point
from evalstop.schedulers import SCHEDULERS

SYNTHETIC_JOBS = 1_000_000
GPUS = 512  # the Philly trace's cluster size in the simulator benchmark


def methods() -> tuple:
    return tuple(m for base in SCHEDULERS
                 for m in (bare(base), with_evalstop(base), with_default(base)))


def make_experiment(*, synthetic_jobs: int = SYNTHETIC_JOBS, philly_jobs: int | None = None,
                    gpus: int = GPUS) -> Experiment:
    """The study; smaller sizes are for measuring it (benchmarks/bench_scale.py)."""
    philly = "full Philly trace" if philly_jobs is None else f"first {philly_jobs:,} Philly jobs"
    return Experiment(
        name="scale",
        title="At scale: the Philly trace and a million-job trace, every base scheduler",
        question=("Do EvalStop's JCT and waste savings, and its stop decisions, hold on a "
                  "real trace's arrivals and on a platform-sized synthetic trace?"),
        points=(
            Point("philly", {"preset": "paper"}, methods(), n_jobs=philly_jobs, n_gpus=gpus,
                  trace="philly"),
            Point(f"synthetic-{synthetic_jobs}", {"preset": "paper"}, methods(),
                  n_jobs=synthetic_jobs, n_gpus=gpus),
        ),
        n_gpus=gpus,
        notes=(f"Workload sizes are fixed by the study, not by --quick: the {philly} "
               f"(arrivals, durations and GPU demands as recorded; types, hacking labels and "
               f"curves drawn per seed from the paper preset) and {synthetic_jobs:,} synthetic "
               f"jobs (paper preset, load 0.9), both on {gpus} GPUs.",),
    )


EXPERIMENT = make_experiment()
