"""Draw the dense-eval lab corpora (``evalstop.lab.dense``): every run's gold gain over its
start by label, and four example runs per world with their smoothed label curve.

    python scripts/plot_lab_dense.py [--data DIR] [--out docs/figures/lab-dense/dense.png]

``--data``: a folder with the packed ``lab_dense_*`` and ``lab2_dense_*`` files (default: the
shipped ones). Needs matplotlib.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from matplotlib.figure import Figure

from evalstop.fileio import atomic_write
from evalstop.lab.dense import DENSE, load_dense_corpus
from evalstop.lab.labels import smooth


def _examples(curves: dict, labels: dict) -> list[str]:
    """The hacking run with the largest drop and the one with the latest peak; the healthy
    run with the largest gain and the longest healthy run with the smallest."""
    hack = [r for r in curves if labels[r].hacking]
    ok = [r for r in curves if not labels[r].hacking]
    picks = []
    if hack:
        picks.append(max(hack, key=lambda r: labels[r].drop))
        picks.append(max(hack, key=lambda r: labels[r].peak_index / len(curves[r])))
    if ok:
        picks.append(max(ok, key=lambda r: labels[r].gain))
        longest = max(len(curves[r]) for r in ok)
        picks.append(min((r for r in ok if len(curves[r]) == longest),
                         key=lambda r: labels[r].gain))
    return list(dict.fromkeys(picks))


def draw(data: Path | None, out: Path) -> None:
    fig = Figure(figsize=(12, 9.5))
    grid = fig.add_gridspec(3, 4)
    for w, world in enumerate(DENSE):
        curves, labels = load_dense_corpus(data, world=world)
        ax = fig.add_subplot(grid[0, 2 * w:2 * w + 2])
        for run_id, c in curves.items():
            ax.plot(c.step, c.eval - c.eval[0], color="C3" if labels[run_id].hacking else "C0",
                    alpha=0.35, linewidth=0.7)
        n_hack = sum(lab.hacking for lab in labels.values())
        ax.set_title(f"{world} ({DENSE[world].role}): {len(curves)} runs, {n_hack} hacking "
                     "(red)", fontsize=9)
        ax.set_xlabel("RL step (an eval at every step)", fontsize=8)
        ax.set_ylabel("gold eval - first eval", fontsize=8)
        ax.grid(alpha=0.3)
        for k, run_id in enumerate(_examples(curves, labels)):
            c, lab = curves[run_id], labels[run_id]
            ax = fig.add_subplot(grid[1 + k // 2, 2 * w + k % 2])
            ax.plot(c.step, c.eval, ".", ms=1.5, color="C3" if lab.hacking else "C0")
            ax.plot(c.step, smooth(c.eval), "-", color="k", linewidth=0.6)
            ax.set_title(f"{run_id}: {'hacking' if lab.hacking else 'healthy'}", fontsize=7)
            ax.tick_params(labelsize=6)
    fig.suptitle("Dense-eval lab runs on a fixed eval set: gold of the same 256 items at "
                 "every step", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(out, "wb") as fh:
        fig.savefig(fh, format="png", dpi=90)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=Path("docs/figures/lab-dense/dense.png"))
    args = ap.parse_args(argv)
    draw(args.data, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
