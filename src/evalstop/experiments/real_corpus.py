"""``real_corpus``: every stop rule on the lab corpus of real (toy-scale) RLHF runs.

Not a simulation: the runs' eval logs are replayed through each detector and the stops
are scored against the runs' labels (``evalstop.lab.validate``). It has no workload
points, so the runner has nothing to simulate; the report section (``report.sections.
real``) does the scoring, which takes well under a second (numpy, no torch).

Beside precision and recall against the labels, every rule gets what its stops cost and
saved (``evalstop.metrics.harm``, the definition every study shares), with the run's true
curve taken as the lab's label rule takes it: the gold eval smoothed by
``lab.labels.smooth`` (the curve ``validate`` reads its kept gold from). Running to the end
delivers the smoothed gold of the last eval; a stopped run delivers it at the checkpoint the
rule kept.

Beside it, the tenant's view (``evalstop.metrics.tenant_harm``): the same stops judged from
the observed gold evals alone, as on a real run whose true quality nobody knows (the
delivered checkpoint's smoothed level against the mean of the run's last tenth; harmful
above 5% of the run's gain).
"""

import numpy as np

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


def validate_shipped(specs=None, *, world: str = "bigram") -> tuple[list[dict], dict]:
    """``(rows, metadata)``: ``validate_detectors`` on the shipped corpus of ``world`` (the
    first by default; ``"trigram"``: the held-out second world), and the corpus' metadata
    (label rule, grid, command). With no ``specs``: the lab's default list, then
    ``cusum-known`` with the noise measured from the corpus (``measured_known_spec``)."""
    from evalstop.lab.corpus import load_corpus, load_metadata
    from evalstop.lab.validate import default_specs, validate_detectors

    corpus = load_corpus(world=world)
    if specs is None:
        specs = [*default_specs(), measured_known_spec(corpus[0])]
    rows = validate_detectors(corpus, specs)
    for row in rows:
        row.update(stop_cost(*corpus, None if row["spec"] == "none" else row["spec"]))
    return rows, load_metadata(world=world)


# Rules the report shows on the dense-eval corpora (``evalstop.lab.dense``): the default,
# the one it replaced and the paper's rule; described there, never chosen among.
DENSE_SPECS = ("default", "cusum-drop", "evalstop:k=2")


def validate_dense(specs=DENSE_SPECS, *, world: str = "bigram") -> list[dict]:
    """``validate_detectors`` and both harm figures on ``world``'s shipped dense-eval corpus
    (``bigram``: the tuning part; ``trigram``: the held-out one)."""
    from evalstop.lab.dense import load_dense_corpus
    from evalstop.lab.validate import validate_detectors

    corpus = load_dense_corpus(world=world)
    rows = validate_detectors(corpus, list(specs))
    for row in rows:
        row.update(stop_cost(*corpus, None if row["spec"] == "none" else row["spec"]))
    return rows


HARM_KEYS = ("harmful", "harmful_rate", "regret_healthy_mean", "regret_healthy_p95",
             "regret_hacking_mean", "compute_saved")
TENANT_KEYS = ("tenant_harmful", "tenant_harmful_rate", "tenant_loss_stopped_median")


def stop_cost(curves: dict, labels: dict, spec: str | None) -> dict:
    """Harmful stops, regret and compute saved of ``spec`` (None: never stop) on the runs,
    and the tenant-view harm from the observed evals (``TENANT_KEYS``)."""
    from evalstop.lab.labels import smooth
    from evalstop.lab.validate import replay_run
    from evalstop.metrics.harm import harm
    from evalstop.metrics.tenant_harm import tenant_harm

    ids = list(curves)
    n = np.array([len(curves[r]) for r in ids])
    true = np.full((len(ids), int(n.max())), np.nan)
    observed = np.full_like(true, np.nan)
    stopped = np.zeros(len(ids), bool)
    stop_idx = np.full(len(ids), -1)
    kept_idx = n - 1
    for i, r in enumerate(ids):
        true[i, : n[i]] = smooth(curves[r].eval)
        observed[i, : n[i]] = curves[r].eval
        if spec is not None:
            stop, kept = replay_run(curves[r], spec)
            if stop is not None:
                stopped[i], stop_idx[i], kept_idx[i] = True, stop, kept
    hacking = np.array([labels[r].hacking for r in ids])
    s = harm(true, stopped, stop_idx, kept_idx, hacking, n_evals=n).summary()
    t = tenant_harm(observed, stopped, kept_idx, hacking, n_evals=n).summary()
    return {**{k: s[k] for k in HARM_KEYS}, **{k: t[k] for k in TENANT_KEYS}}
