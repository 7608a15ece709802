"""Why ``plong`` cost catches on the dense lab corpora: two hacked runs that never gained.

    python benchmarks/plot_plong_dense.py [--out docs/figures/issue46]

Writes ``plong_dense.png``: a hacked run of the small-gain tuning corpus and one of the
trigram dense corpus (held out from every choice; its runs were looked at here to find
the cause), each with its evals, its smoothed gold curve, the start level, the gain the
gain gate asks for (``gmin`` = 5 noise sigmas of one eval, stated) and the fall below
the start that ``plong`` accepts in its place after 20 evals (``BELOW_START`` x ``gmin``),
and where each rule stopped (every rule told each eval's progress). Prints each stop.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from evalstop.detbench.realshape_score import run_cell
from evalstop.detectors import DEFAULT_SPEC
from evalstop.detectors.block_cusum import BELOW_START

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_long_default import dense_lab_cells, small_gain_cells

GMIN = 5.0
HN = 20
# (corpus label, run index in the cell): hacked runs whose best is at their start
RUNS = (("lab dense small-gain (trigram, tuning part)", 0),
        ("lab dense (trigram, seen before the re-choice)", 2))
RULES = (("default", DEFAULT_SPEC, "tab:red"),
         ("default, plong=50", f"{DEFAULT_SPEC},plong=50", "tab:green"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/figures/issue46")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = dict(dense_lab_cells() + small_gain_cells(roles=("tuning",)))
    fig, axes = plt.subplots(1, len(RUNS), figsize=(11, 4))
    for ax, (name, i) in zip(axes, RUNS):
        cell = cells[name]
        ev = cell.eval[i][np.isfinite(cell.eval[i])]
        x = np.arange(1, len(ev) + 1)
        ax.plot(x, ev, lw=0.8, color="tab:orange", alpha=0.6, label="evals")
        ax.plot(x, cell.true[i][: len(ev)], lw=1.8, color="k", label="smoothed gold")
        start = float(np.mean(ev[:5]))
        ax.axhline(start, color="tab:blue", lw=1, ls="--", label="start (first 5 evals)")
        ax.axhline(start + GMIN * cell.sigma, color="tab:blue", lw=1, ls=":",
                   label="start + 5 sigmas: the gain gate's bar (one eval's sigma)")
        below = BELOW_START * GMIN
        ax.axhline(start - below * cell.sigma, color="tab:purple", lw=1, ls=":",
                   label=f"start - {below:g} sigmas: plong's bar after {HN} evals "
                         "(lower as blocks grow)")
        for k, (label, spec, color) in enumerate(RULES):
            for mode, marker in (("stated", "v"), ("own", "o")):
                stopped, at, _ = run_cell(spec, cell, mode, progress=True)
                where = int(at[i]) + 1 if stopped[i] else None
                print(f"{name} run {i}: {label}, noise {mode}: "
                      f"{'stopped at eval ' + str(where) if where else 'not stopped'}")
                if where is not None:
                    ax.plot(where, ev[where - 1], marker, color=color,
                            ms=8, label=f"{label}, noise {mode}: stop")
        ax.set_title(f"{name}, run {i} (hacked), {len(ev)} evals", fontsize=9)
        ax.set_xlabel("eval")
        ax.set_ylabel("gold score")
        ax.legend(fontsize=6, loc="lower left")
    fig.tight_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "plong_dense.png", dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
