"""Judge the chosen default ONCE on held-out material (issue 11), and draw the plots.

    python benchmarks/judge_default.py [--seed 0] [--runs 6] [--out benchmarks/results/issue11]

Run after ``benchmarks/tune_default.py`` fixed the rule (nothing here chooses anything).
Parts, reported separately:

* ``synthetic (additive)``: held-out families (both held-out sets of the benchmark plus the
  held-out shapes ``cliff``, ``double-dip``, ``flat-creep``), 5-60 evals, Gaussian and t3
  noise pooled over sigma 0.01-0.12 of the run's gain;
* ``synthetic (pass rates)``: the same shapes as pass rates over N = 30..1000 prompts;
* ``short``: held-out 6-12-eval pass-rate runs, flat or with a sustained drop of 4-8 sigmas;
* ``lab (world 1)``: the shipped lab corpus of the first world (``bigram``: 120 runs, 26
  evals). It was never used to choose this rule, but earlier choices saw it;
* ``lab (held-out world 2)``: the shipped corpus of the second world (``trigram``: another
  language, gold and proxy kind, ``evalstop.lab.worlds``), kept out of every choice.
  For both lab parts the true curve for harm is the label rule's smoothed gold and the
  stated noise is the corpus' median gold standard error.

Rules: the default (noise stated, fleet, own), the pre-issue-11 default and the paper's
``evalstop:k=2`` (own), and issue 11's first-round default (stated, own), which the third
round replaced.

Noise modes (``realshape_score``): own (nothing stated), stated (eval_n=N / sigma=S), fleet
(one FleetNoise per cell, empty at the start). Writes ``judge.json``, ``judge.md``,
``pr.png`` (precision against recall along the default's ``h``) and ``harm_saved.png``
(harmful-stop rate against compute saved).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from evalstop.detbench import realshape
from evalstop.detbench.realshape import Cell
from evalstop.detbench.realshape_score import score
from evalstop.detectors import DEFAULT_SPEC, PREVIOUS_DEFAULT_SPEC, ROUND1_DEFAULT_SPEC

H_SWEEP = (2.0, 2.5, 3.0, 4.0, 5.0)
TARGETS = {
    "synthetic (additive)": {"precision": 0.97, "recall": 0.90, "harmful_rate": 0.01,
                             "median_delay": 3.0},
    "lab (world 1)": {"harmful_rate": 0.02, "recall": 0.95},
    "lab (held-out world 2)": {"harmful_rate": 0.02, "recall": 0.95},
    "short": {"recall_within3": 0.90, "flat_stopped": 0.02},
}


def lab_cell(world: str = "bigram") -> Cell:
    """One cell of a shipped lab corpus: every run, the smoothed gold as the true curve,
    the corpus' median gold standard error as the stated noise."""
    from evalstop.lab import load_corpus
    from evalstop.lab.corpus import load_metadata
    from evalstop.lab.labels import smooth

    curves, labels = load_corpus(world=world)
    ids = sorted(curves)
    ev = np.array([curves[i].eval for i in ids], float)
    true = np.array([smooth(curves[i].eval) for i in ids])
    meta = load_metadata(world=world)["runs"]
    se = float(np.median([e["gold_se"] for i in ids for e in meta[i]["evals"]]))
    return Cell("lab", f"lab-{world}", "lab", se, None, true, ev,
                np.array([labels[i].hacking for i in ids]))


def with_h(spec: str, h: float) -> str:
    head, _, rest = spec.partition(":")
    parts = [p for p in rest.split(",") if not p.startswith("h=")]
    return f"{head}:h={h:g}," + ",".join(parts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--short-runs", type=int, default=50)
    ap.add_argument("--out", default="benchmarks/results/issue11")
    ap.add_argument("--replot", action="store_true",
                    help="only redraw the plots of --out's judge.json (nothing is scored)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        plots(json.loads((out / "judge.json").read_text()), out)
        return
    t0 = time.perf_counter()
    held = realshape.synthetic(args.seed, args.runs, held_out=True)
    assert all(c.part == "held-out" for c in held)
    parts = {
        "synthetic (additive)": [c for c in held if c.noise != "binomial"],
        "synthetic (pass rates)": [c for c in held if c.noise == "binomial"],
        "short": realshape.short_cells(args.seed, args.short_runs, held_out=True),
        "lab (world 1)": [lab_cell("bigram")],
        "lab (held-out world 2)": [lab_cell("trigram")],
    }
    rules = [("default", DEFAULT_SPEC, m) for m in ("stated", "fleet", "own")]
    rules += [("previous default", PREVIOUS_DEFAULT_SPEC, "own"),
              ("evalstop:k=2 (paper)", "evalstop:k=2", "own")]
    # issue 11's first-round default (h=3, clip=2.5), so the third round's change shows
    rules += [("round-1 default", ROUND1_DEFAULT_SPEC, m) for m in ("stated", "own")]
    result: dict = {"default": DEFAULT_SPEC, "seed": args.seed, "parts": {}}
    for part, cells in parts.items():
        rows = []
        for label, spec, mode in rules:
            rows.append({"rule": label, "spec": spec, "noise": mode, **score(spec, cells, mode)})
        sweep = {m: [{"h": h, **score(with_h(DEFAULT_SPEC, h), cells, m)} for h in H_SWEEP]
                 for m in ("stated", "own")}
        result["parts"][part] = {"runs": sum(c.runs for c in cells), "rows": rows,
                                 "sweep": sweep}
        print(f"{part}: {time.perf_counter() - t0:.0f}s", flush=True)
    result["targets"] = TARGETS
    (out / "judge.json").write_text(json.dumps(result, indent=1))
    (out / "judge.md").write_text(markdown(result))
    plots(result, out)
    print(markdown(result))


def _f(v, nd=3):
    return "-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{nd}f}"


def markdown(result) -> str:
    lines = [f"Default: `{result['default']}` (seed {result['seed']}).", ""]
    for part, d in result["parts"].items():
        lines += [f"### {part} ({d['runs']} runs)", "",
                  "| rule | noise | precision | recall | FPR | harmful | regret (healthy) "
                  "| compute saved | median delay | recall within 3 | flat stopped |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in d["rows"]:
            lines.append(
                f"| {r['rule']} | {r['noise']} | {_f(r['precision'])} | {_f(r['recall'])} "
                f"| {_f(r['fpr'])} | {_f(r['harmful_rate'])} | {_f(r['regret_healthy'])} "
                f"| {_f(r['compute_saved'])} | {_f(r['median_delay'], 1)} "
                f"| {_f(r.get('recall_within3'))} | {_f(r.get('flat_stopped'))} |")
        lines.append("")
    return "\n".join(lines)


def plots(result, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result["parts"])
    for fname, xkey, ykey, xl, yl in (("pr.png", "recall", "precision", "recall", "precision"),
                                       ("harm_saved.png", "compute_saved", "harmful_rate",
                                        "compute saved (share of eval intervals)",
                                        "harmful stops (share of non-hacking runs)")):
        # Two panels a row, each about 660 px wide: read at a page's width, not shrunk to
        # a fifth of it.
        rows = (len(names) + 1) // 2
        fig, axes = plt.subplots(rows, 2, figsize=(12.0, 4.4 * rows), squeeze=False)
        axes = axes.ravel()
        for ax in axes[len(names):]:
            ax.set_visible(False)
        for ax, part in zip(axes, names):
            d = result["parts"][part]
            for mode, colour in (("stated", "C0"), ("own", "C1")):
                pts = [(r[xkey], r[ykey]) for r in d["sweep"][mode]
                       if r[xkey] is not None and r[ykey] is not None]
                if pts:
                    xs, ys = zip(*pts)
                    ax.plot(xs, ys, "o-", color=colour, label=f"default, h sweep ({mode})")
            marks = {("previous default", "own"): ("s", "C2"),
                     ("evalstop:k=2 (paper)", "own"): ("^", "C3"),
                     ("round-1 default", "stated"): ("D", "C4"),
                     ("round-1 default", "own"): ("d", "C5")}
            for r in d["rows"]:
                mark = marks.get((r["rule"], r["noise"]))
                if mark and r[xkey] is not None and r[ykey] is not None:
                    ax.plot([r[xkey]], [r[ykey]], mark[0], color=mark[1],
                            label=f"{r['rule']} ({r['noise']})")
            ax.set_title(part, fontsize=11)
            ax.set_xlabel(xl, fontsize=10)
            ax.set_ylabel(yl, fontsize=10)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / fname, dpi=110)
        plt.close(fig)


if __name__ == "__main__":
    main()
