"""Experiments by name. To add one: write a module in this package that defines
``EXPERIMENT`` (an ``evalstop.experiments.spec.Experiment``) and add one line to ``_MODULES``.
The report shows any experiment with a generic table; a custom section is optional
(``evalstop.report.sections``).
"""

from __future__ import annotations

import importlib

from evalstop.experiments.spec import Experiment
from evalstop.suggest import unknown

# (name, module under evalstop.experiments), in report order; imported on first use.
_MODULES = (
    ("main", "main_table"),
    ("composability", "composability"),
    ("sigma", "sweep_sigma"),
    ("hacking", "sweep_hacking"),
    ("k", "sweep_k"),
    ("assumptions", "paper_assumptions"),
    ("claim_map", "claim_map"),
    ("regime", "regime"),
    ("default_rule", "default_rule"),
    ("frontier", "frontier"),
    ("real_corpus", "real_corpus"),
    ("real_main", "real_main"),
    ("scale", "scale"),
)
# Run only when named (--only): too big for a default run.
OPT_IN = frozenset({"scale"})


def names() -> list[str]:
    return [name for name, _ in _MODULES]


def get(name: str) -> Experiment:
    for key, module in _MODULES:
        if key == name:
            exp = importlib.import_module(f"evalstop.experiments.{module}").EXPERIMENT
            if exp.name != name:
                raise RuntimeError(f"module {module!r} defines experiment {exp.name!r}, not {name!r}")
            return exp
    raise ValueError(unknown("experiment", name, names()))


def select(only: str | None) -> list[Experiment]:
    """Experiments named in a comma-separated list (all but the ``OPT_IN`` ones when
    ``only`` is None), in registry order; an unknown or empty name is a ValueError."""
    if only is None:
        return [get(n) for n in names() if n not in OPT_IN]
    wanted = [w.strip() for w in only.split(",")]
    if any(w == "" for w in wanted):
        raise ValueError(f"--only {only!r} has an empty experiment name")
    for w in wanted:
        get(w)  # raises on an unknown name
    return [get(n) for n in names() if n in wanted]


# Studies a knob preset (``--preset``) leaves alone: ``assumptions`` already is the default
# run's view of a preset (under one it would repeat the others), and the claim map sets
# every knob itself, cell by cell.
PRESET_EXEMPT = ("assumptions", "claim_map")


def with_preset(experiments: list[Experiment], preset: str | None) -> list[Experiment]:
    """The studies laid under a knob preset (``experiments.assumptions``); unchanged for
    None. An unknown preset is a ValueError naming the known ones."""
    if preset is None:
        return experiments
    from evalstop.experiments import assumptions

    knobs = assumptions.get(preset)
    return [e if e.name in PRESET_EXEMPT else assumptions.apply(e, knobs)
            for e in experiments if e.name != "assumptions"]
