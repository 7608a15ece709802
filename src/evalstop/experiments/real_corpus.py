"""``real_corpus``: every stop rule on the lab corpus of real (toy-scale) RLHF runs.

Not a simulation: the runs' eval logs are replayed through each detector and the stops
are scored against the runs' labels (``evalstop.lab.validate``). It has no workload
points, so the runner has nothing to simulate; the report section (``report.sections.
real``) does the scoring, which takes well under a second (numpy, no torch).
"""

from evalstop.experiments.spec import Experiment

EXPERIMENT = Experiment(
    name="real_corpus",
    title="Stop rules on real reward-hacking runs (lab corpus)",
    question=(
        "On RLHF runs that really over-optimize a learned proxy (a toy setup after Gao, "
        "Schulman & Hilton 2023, trained on a CPU), which stop rules stop the hacking runs, "
        "spare the healthy ones, and keep the best checkpoint?"
    ),
    points=(),
    notes=(
        ("Runs: evalstop.lab, shipped as evalstop/data/lab_corpus.jsonl.gz with labels in "
        "lab_labels.csv (computed from each run's complete gold curve, never shown to the "
        "detectors)."),
    ),
)


def measured_known_spec(curves) -> str:
    """``cusum-known`` told the noise ``evalstop noise`` measures from the runs' own eval
    logs. It reads no label; a platform would measure it on earlier jobs of the same eval."""
    from evalstop.detectors.measured_noise import measure_noise

    return f"cusum-known:sigma={measure_noise([c.eval for c in curves.values()]).sigma:.4g}"


def validate_shipped(specs=None) -> tuple[list[dict], dict]:
    """``(rows, metadata)``: ``validate_detectors`` on the shipped corpus, and the corpus'
    metadata (label rule, grid, command). With no ``specs``: the lab's default list, then
    ``cusum-known`` with the noise measured from the corpus (``measured_known_spec``)."""
    from evalstop.lab.corpus import load_corpus, load_metadata
    from evalstop.lab.validate import default_specs, validate_detectors

    corpus = load_corpus()
    if specs is None:
        specs = [*default_specs(), measured_known_spec(corpus[0])]
    return validate_detectors(corpus, specs), load_metadata()
