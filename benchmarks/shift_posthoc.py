"""What the shift test would have given on held-out material: reported, NOT chosen.

    python benchmarks/shift_posthoc.py [--seed 0] [--runs 6] [--short-runs 50] [--out DIR]

``benchmarks/tune_default.py`` (second round) kept the CUSUM alone: by the fixed criterion
no candidate with the shift test beat it on the tuning material. The test was written for
held-out drops that the tuning short part does not contain (drops over two evals, drops
after a rise), so this script measures, after the choice, what it would have changed there.
The variants were fixed before this script first ran: the default plus ``shift=J,shift_m=M``
for J in {2.75, 3} and M in {2, 3}, the candidates of the tuning grid that keep the short
tuning bars (flat runs stopped <= 2%, recall within 3 evals >= 0.90) with the lowest J;
and the default with ``h=2`` (the CUSUM made faster instead) for comparison. Noise
stated only (the criterion's mode). Nothing here changes the default. "default" here is
the second round's default, ``ROUND1_DEFAULT_SPEC`` (the third round replaced it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from evalstop.detbench import realshape
from evalstop.detbench.realshape_score import score
from evalstop.detectors import ROUND1_DEFAULT_SPEC as DEFAULT_SPEC

VARIANTS = [("default", DEFAULT_SPEC)]
VARIANTS += [(f"default + shift={j:g},shift_m={m}", f"{DEFAULT_SPEC},shift={j:g},shift_m={m}")
             for m in (2, 3) for j in (2.75, 3.0)]
VARIANTS += [("default at h=2", DEFAULT_SPEC.replace("h=3.0", "h=2.0"))]
COLUMNS = ("precision", "recall", "fpr", "harmful_rate", "compute_saved", "median_delay",
           "recall_within3", "flat_stopped")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--out", default=None, help="write shift_posthoc.json / .md here")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.short_runs < 1:
        ap.error("--runs and --short-runs must be >= 1")
    t0 = time.perf_counter()
    held = realshape.synthetic(args.seed, args.runs, held_out=True)
    parts = {
        "synthetic (additive)": [c for c in held if c.noise != "binomial"],
        "short": realshape.short_cells(args.seed, args.short_runs, held_out=True),
    }
    result = {"seed": args.seed, "parts": {}}
    lines = [f"Shift test, held-out material, seed {args.seed}, noise stated (post hoc: "
             f"not used to choose).", ""]
    for part, cells in parts.items():
        rows = [{"rule": label, "spec": spec, **score(spec, cells, "stated")}
                for label, spec in VARIANTS]
        result["parts"][part] = rows
        lines += [f"### {part} ({rows[0]['runs']} runs)", "",
                  "| rule | " + " | ".join(COLUMNS) + " |",
                  "| --- " * (len(COLUMNS) + 1) + "|"]
        for r in rows:
            cells_txt = ["-" if r.get(c) is None else f"{r[c]:.3f}" for c in COLUMNS]
            lines.append(f"| {r['rule']} | " + " | ".join(cells_txt) + " |")
        lines.append("")
        print(f"{part}: {time.perf_counter() - t0:.0f}s", flush=True)
    md = "\n".join(lines)
    print(md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "shift_posthoc.json").write_text(json.dumps(result, indent=1))
        (out / "shift_posthoc.md").write_text(md)


if __name__ == "__main__":
    main()
