"""``assumptions``: the main table, composability and the three sweeps again, on the
``paper-assumptions`` knob preset, so the report can set paper | ours under the paper's
assumptions | ours on the paper preset side by side.

Every point of those five studies is laid under the preset (``assumptions.apply``) and
renamed ``<study>: <point>``; the methods, seeds and sizes are the studies' own, so each
point pairs with the same point of the paper-preset study (same arrivals and job sizes per
seed; only the RLHF curves' stretch, the eval count and the watched types differ).
"""

from __future__ import annotations

from dataclasses import replace

from evalstop.experiments import (
    assumptions,
    composability,
    main_table,
    sweep_hacking,
    sweep_k,
    sweep_sigma,
)
from evalstop.experiments.spec import Experiment

PRESET = assumptions.PAPER_ASSUMPTIONS
STUDIES = (main_table, composability, sweep_sigma, sweep_hacking, sweep_k)
SEP = ": "


def label(study: str, point: str) -> str:
    return f"{study}{SEP}{point}"


def _points():
    out = []
    for module in STUDIES:
        exp = assumptions.apply(module.EXPERIMENT, PRESET)
        out += [replace(p, label=label(exp.name, p.label)) for p in exp.points]
    return tuple(out)


EXPERIMENT = Experiment(
    name="assumptions",
    title="The paper's studies under the paper-assumptions knob preset",
    question=(
        "If the workload had the SNRs, eval count and watched job types the paper's main "
        "table needs, would the composability and sweep claims hold too?"
    ),
    points=_points(),
    n_gpus=64,
    notes=(f"Preset `{PRESET.name}`: {PRESET.describe()}. Found by {PRESET.how}.",),
)
