"""The paper's studies as named, runnable experiments (see ``registry`` for the list).

``run_experiments(select(only), settings)`` runs them as (point, seed) tasks in parallel
processes; ``summarize`` turns the per-seed rows into means, 95% CIs and paired tests.
"""

from evalstop.experiments.aggregate import Summary, summarize
from evalstop.experiments.registry import get, names, select
from evalstop.experiments.runner import ExperimentRun, KeptRun, run_experiments
from evalstop.experiments.settings import FULL, QUICK, Settings
from evalstop.experiments.spec import Experiment, Method, Point

__all__ = [
    "FULL",
    "QUICK",
    "Experiment",
    "ExperimentRun",
    "KeptRun",
    "Method",
    "Point",
    "Settings",
    "Summary",
    "get",
    "names",
    "run_experiments",
    "select",
    "summarize",
]
