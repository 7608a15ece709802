"""Harm on recovering dips by their depth and length, per value of the dip knob ``last``.

    python benchmarks/dip_depth.py [--tuning-seed 0] [--tuning-runs 20] [--held-out-seed 1]
        [--runs 30] [--out DIR] [--figures DIR] [--plot-only]

Writes ``dip_depth.json``, ``dip_depth.md`` and ``dip_depth.png`` (default
``benchmarks/results/issue46``; the plot copied to ``--figures``, default
``docs/figures/issue46``). Nothing is chosen here: the default's ``last`` was chosen by
``tune_failshapes.py``; this shows what each value does to dips of a stated depth and
length, on the tuning part (as ``tune_failshapes.py`` built it) and, for the record, on
the held-out part (as ``judge_failshapes.py`` built it).

Material: the issue-46 failure shapes' long dip runs (``failshape.fail_cells``, 100-1,000
evals, a dip of 10-25% of the gain over 5-15% of the run that recovers fully, on an AR(1)
wandering level), noise stated. Per value of ``last`` in ``LASTS``: the dip runs stopped
with a smoothed loss above 5% of their gain, split by the dip's drawn depth (``DEPTHS``)
and span (``SPANS``), and apart from them the share stopped in the first 20 evals
(before any dip: the material's dips begin after 20% of the run) and before the dip's
start; beside them the compute saved on the long collapses and dead runs, the knob's
price.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from evalstop.detbench.failshape import fail_cells
from evalstop.detbench.failshape_score import EARLY, cell_outcome, pool
from evalstop.detectors import DEFAULT_SPEC

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_long_default import with_option

LASTS = (0.0, 0.1, 0.2, 0.3, 0.5)
DEPTHS = ((0.10, 0.15), (0.15, 0.20), (0.20, 0.25))
SPANS = ((0.05, 0.10), (0.10, 0.15))


def _bin(lo: float, hi: float) -> str:
    return f"{lo:.0%}-{hi:.0%}"


def score(spec: str, dips: list, falls: list) -> dict:
    outs = [cell_outcome(spec, c, "stated") for c in dips]
    harmful = np.concatenate([o["harmful"] for o in outs])
    idx = np.concatenate([o["stop_idx"] for o in outs])
    depth = np.concatenate([c.dip_depth for c in dips])
    span = np.concatenate([c.dip_span for c in dips])
    start = np.concatenate([c.fall_idx for c in dips])
    before = harmful & (idx <= start)
    row = {"runs": int(harmful.size), "harmful": float(harmful.mean()),
           "harmful_first_20": float((harmful & (idx < EARLY)).mean()),
           "harmful_before_the_dip": float(before.mean()),
           "harmful_at_the_dip": float((harmful & ~before).mean()), "by_depth_span": {}}
    for d in DEPTHS:
        for s in SPANS:
            sel = (depth >= d[0]) & (depth < d[1]) & (span >= s[0]) & (span < s[1])
            row["by_depth_span"][f"{_bin(*d)} x {_bin(*s)}"] = {
                "runs": int(sel.sum()),
                "harmful_at_the_dip": (float((harmful & ~before)[sel].mean()) if sel.any()
                                       else None)}
    fall = pool(falls, [cell_outcome(spec, c, "stated") for c in falls])
    row["saved"] = {fam: fall[fam]["saved"] for fam in ("collapse", "dead")}
    return row


def part(seed: int, runs: int, held_out: bool) -> dict:
    cells = fail_cells(seed, runs, held_out=held_out)
    dips = [c for c in cells if c.family == "dip"]
    falls = [c for c in cells if c.family in ("collapse", "dead")]
    rows = []
    for last in LASTS:
        spec = with_option(DEFAULT_SPEC, "last", f"{last:g}")
        rows.append({"last": last, **score(spec, dips, falls)})
        print(f"  seed {seed} last={last:g}: dips harmful {rows[-1]['harmful']:.3f}", flush=True)
    return {"seed": seed, "held_out": held_out, "runs_per_cell": runs, "rows": rows}


def markdown(result: dict) -> str:
    lines = [f"Long dip runs of the issue-46 failure shapes, noise stated; default `{DEFAULT_SPEC}` "
             "with each value of `last`. Harmful: stopped with a smoothed loss above 5% of "
             "the gain. Per cell of the dip's depth (share of the gain) x span (share of the "
             "run): the share stopped harmfully at or after the dip's start.", ""]
    for key in ("tuning", "held_out"):
        r = result[key]
        cells = list(r["rows"][0]["by_depth_span"])
        lines += [f"**{'Held out' if r['held_out'] else 'Tuning'}** (seed {r['seed']}, "
                  f"{r['rows'][0]['runs']} dip runs)", "",
                  "| last | harmful | in the first 20 evals | before the dip | at the dip | "
                  + " | ".join(cells) + " | saved: collapses / dead |",
                  "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in cells)
                  + " | --- |"]
        for row in r["rows"]:
            by = row["by_depth_span"]
            lines.append(
                f"| {row['last']:g} | {row['harmful']:.3f} | {row['harmful_first_20']:.3f} | "
                f"{row['harmful_before_the_dip']:.3f} | {row['harmful_at_the_dip']:.3f} | "
                + " | ".join(f"{by[c]['harmful_at_the_dip']:.3f} ({by[c]['runs']})"
                             for c in cells)
                + f" | {row['saved']['collapse']:.3f} / {row['saved']['dead']:.3f} |")
        lines.append("")
    return "\n".join(lines)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    for ax, key in zip(axes, ("tuning", "held_out")):
        r = result[key]
        cells = list(r["rows"][0]["by_depth_span"])
        x = np.arange(len(cells))
        width = 0.8 / len(r["rows"])
        for i, row in enumerate(r["rows"]):
            vals = [100 * (row["by_depth_span"][c]["harmful_at_the_dip"] or 0.0) for c in cells]
            ax.bar(x + i * width - 0.4 + width / 2, vals, width,
                   label=f"last={row['last']:g} (saved on collapses "
                         f"{row['saved']['collapse']:.3f})")
        ax.set_xticks(x, [c.replace(" x ", "\nover ") for c in cells], fontsize=8)
        ax.set_xlabel("dip depth (share of the gain) over its span (share of the run)")
        before = [100 * row["harmful_before_the_dip"] for row in r["rows"]]
        ax.set_title(f"{'held out' if r['held_out'] else 'tuning'} (seed {r['seed']})\n"
                     f"besides, stopped harmfully before the dip: {before[0]:.1f}% "
                     f"(last=0) to {before[-1]:.1f}% (last={r['rows'][-1]['last']:g})",
                     fontsize=9)
    axes[0].set_ylabel("dip runs stopped harmfully at the dip (%)")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tuning-seed", type=int, default=0)
    ap.add_argument("--tuning-runs", type=int, default=20,
                    help="runs per failshape cell, tuning part")
    ap.add_argument("--held-out-seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30,
                    help="runs per failshape cell, held-out part")
    ap.add_argument("--out", default="benchmarks/results/issue46")
    ap.add_argument("--figures", default="docs/figures/issue46",
                    help="where the pages' copy of the plot goes ('' for none)")
    ap.add_argument("--plot-only", action="store_true",
                    help="rewrite the markdown and redraw the plot from the stored JSON")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.plot_only:
        write(json.loads((out / "dip_depth.json").read_text()), out, args.figures)
        return
    t0 = time.perf_counter()
    result = {"default": DEFAULT_SPEC, "lasts": list(LASTS),
              "tuning": part(args.tuning_seed, args.tuning_runs, held_out=False),
              "held_out": part(args.held_out_seed, args.runs, held_out=True)}
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    (out / "dip_depth.json").write_text(json.dumps(result, indent=1))
    write(result, out, args.figures)
    print(markdown(result), f"\n{result['wall_s']:.0f} s", flush=True)


def write(result: dict, out: Path, figures: str) -> None:
    (out / "dip_depth.md").write_text(markdown(result))
    plot(result, out / "dip_depth.png")
    if figures:
        Path(figures).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out / "dip_depth.png", Path(figures) / "dip_depth.png")


if __name__ == "__main__":
    main()
