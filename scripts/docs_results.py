"""Copy the small part of an `evalstop reproduce` run that the documentation quotes.

    python scripts/docs_results.py RUN_DIR [--out docs/results/reproduce]
    python scripts/docs_results.py --bench-detectors BENCH_DIR [--out docs/results/bench-detectors]

Writes, from RUN_DIR (the --out of one full `evalstop reproduce`):

* ``<study>_summary.csv``: the study's summary rows (every column: mean, 95% interval,
  change against the baseline, p-value) for the metrics the pages quote only; the full
  files of one run are several MB, mostly metrics no page cites;
* ``real_corpus_detectors.csv``, as written (every rule on the lab corpus);
* ``run.json``: the run's settings and command, so a page can say what produced a figure.

With ``--bench-detectors``, BENCH_DIR is the --out of one ``evalstop bench-detectors`` run;
``detectors.csv`` is copied with the rows of each rule's main spec only (the knob sweeps
are most of the file), as ``detectors_seed<SEED>.csv``.

The figures in docs/ cite these files by key (see tests/docs_figures.py); rerun this after a
new reproduce run and the figure check lists every quoted number that moved.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
from pathlib import Path

STUDIES = ("platform", "main", "composability", "sigma", "hacking", "k", "assumptions", "regime",
           "default_rule", "frontier", "real_main")
METRICS = {"precision", "recall", "fpr", "fpr_rlhf", "jct_mean_s", "waste_gpu_h",
           "quality_mean", "harmful_rate", "compute_saved", "delay_mean_evals", "n_stopped",
           "tenant_harmful_rate"}
# frontier has 51 rules x 7 workloads: only what its tables read.
FRONTIER_METRICS = {"precision", "jct_mean_s", "harmful_rate"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--bench-detectors", action="store_true",
                    help="RUN_DIR is the output of evalstop bench-detectors")
    args = ap.parse_args(argv)
    if args.bench_detectors:
        return bench_detectors(args.run_dir, args.out or Path("docs/results/bench-detectors"))
    args.out = args.out or Path("docs/results/reproduce")
    results = args.run_dir / "results.json"
    if not results.is_file():
        print(f"{args.run_dir}: no results.json; give the --out of a reproduce run",
              file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    data = json.loads(results.read_text())
    (args.out / "run.json").write_text(json.dumps(
        {"settings": data["settings"], "command": data["run"]["command"],
         "quick": data["run"]["quick"], "evalstop_version": data.get("evalstop_version")},
        indent=1) + "\n")
    for study in STUDIES:
        keep = FRONTIER_METRICS if study == "frontier" else METRICS
        with open(args.run_dir / f"{study}_summary.csv", newline="") as f:
            reader = csv.DictReader(f)
            rows = [r for r in reader if r["metric"] in keep]
            fields = reader.fieldnames
        with open(args.out / f"{study}_summary.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    shutil.copyfile(args.run_dir / "real_corpus_detectors.csv",
                    args.out / "real_corpus_detectors.csv")
    return 0


def bench_detectors(run_dir: Path, out: Path) -> int:
    meta = run_dir / "detectors.json"
    if not meta.is_file():
        print(f"{run_dir}: no detectors.json; give the --out of bench-detectors",
              file=sys.stderr)
        return 2
    data = json.loads(meta.read_text())
    main_specs = {d["main_spec"] for d in data["detectors"]}
    out.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "detectors.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = [r for r in reader if r["spec"] in main_specs]
        fields = reader.fieldnames
    with open(out / f"detectors_seed{data['config']['seed']}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
