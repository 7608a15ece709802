"""Experiments by name. To add one: write a module in this package that defines
``EXPERIMENT`` (an ``evalstop.experiments.spec.Experiment``) and add one line to ``_MODULES``.
The report shows any experiment with a generic table; a custom section is optional
(``evalstop.report.sections``).
"""

from __future__ import annotations

import importlib
from dataclasses import replace

from evalstop.experiments.spec import Experiment
from evalstop.suggest import unknown

# (name, module under evalstop.experiments), in report order; imported on first use.
_MODULES = (
    ("platform", "platform"),
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
# run's view of a preset (under one it would repeat the others), the claim map sets
# every knob itself, cell by cell, and ``platform`` runs curves fitted to measured runs,
# which the knobs (stretches of the paper's curves) do not apply to.
PRESET_EXEMPT = ("assumptions", "claim_map", "platform")


def with_preset(experiments: list[Experiment], preset: str | None) -> list[Experiment]:
    """The studies laid under a knob preset (``experiments.assumptions``); unchanged for
    None. An unknown preset is a ValueError naming the known ones."""
    if preset is None:
        return experiments
    from evalstop.experiments import assumptions

    knobs = assumptions.get(preset)
    return [e if e.name in PRESET_EXEMPT else assumptions.apply(e, knobs)
            for e in experiments if e.name != "assumptions"]


def trace_studies(experiments: list[Experiment]) -> list[Experiment]:
    """The studies that replay a recorded trace, each cut to its trace points."""
    cut = [replace(e, points=tuple(p for p in e.points if p.trace is not None))
           for e in experiments]
    return [e for e in cut if e.points]


def with_trace(experiments: list[Experiment], table, *, n_gpus: int | None = None
               ) -> list[Experiment]:
    """The trace studies on the jobs of ``table`` (a JobTable: ``read_jobs`` of a job CSV or
    a Slurm accounting export) in place of their shipped trace, on ``n_gpus`` GPUs (None:
    the study's own). Studies with no trace point are left out; none left is a ValueError."""
    studies = trace_studies(experiments)
    if not studies:
        known = ", ".join(e.name for e in trace_studies([get(n) for n in names()]))
        raise ValueError(f"--trace: none of the selected studies replays a trace "
                         f"(those that do: {known})")
    note = (f"Jobs from {table.source} ({len(table):,} jobs: arrivals, durations and GPU "
            f"demands as recorded; types, hacking labels and curves drawn per seed), in "
            f"place of the study's shipped trace.")
    out = []
    for e in studies:
        gpus = n_gpus if n_gpus is not None else e.n_gpus
        points = tuple(replace(p, label="trace", table=table, n_jobs=None,
                               n_gpus=gpus if p.n_gpus is not None else None)
                       for p in e.points)
        out.append(replace(e, title=f"{e.title.split(':')[0]}: a job trace of your own",
                           question=(f"Do EvalStop's JCT and waste savings, and its stop "
                                     f"decisions, hold on the {len(table):,} jobs of "
                                     f"{table.source}, on {gpus} GPUs?"),
                           points=points, n_gpus=gpus, notes=(note,)))
    return out
