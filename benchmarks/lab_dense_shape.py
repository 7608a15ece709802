"""The dense-eval lab corpora (``evalstop.lab.dense``): their shape in numbers and a plot.

    python benchmarks/lab_dense_shape.py [--data DIR] [--out benchmarks/results/lab-dense]
        [--figure docs/figures/lab-dense/dense.png]

``--data``: a folder with the packed ``lab_dense_*`` and ``lab2_dense_*`` files (default: the
shipped ones). Writes ``shape.json`` (per corpus: runs, labels, eval counts, the eval noise
and how correlated it is across checkpoints, where healthy and hacking runs peak, and how
a few stop rules do, with both harm figures) and the PNG (every run's gold gain over its
start by label, and four example runs per world). Reads no torch; needs matplotlib.

Nothing here chooses anything: the numbers describe the material. ``bigram`` is the tuning
corpus, ``trigram`` the held-out one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from evalstop.fileio import atomic_write, write_text
from evalstop.lab.dense import DENSE, load_dense_corpus, load_dense_metadata
from evalstop.lab.labels import smooth

RULES = ("default", "evalstop:k=2", "cusum-drop")  # described, not chosen among
WANDER_WINDOW = 25  # evals in the centred mean the wander is measured around


def _median(values) -> float | None:
    v = [x for x in values if x is not None and np.isfinite(x)]
    return round(float(np.median(v)), 6) if v else None


def _wander(e: np.ndarray) -> tuple[float, float]:
    """(jitter, lag-1 autocorrelation of the residual): the sd of consecutive differences,
    and how correlated the eval's departures from a slow local mean are from one eval to
    the next (0 for fresh noise, near 1 when they move together)."""
    k = WANDER_WINDOW // 2
    local = np.convolve(np.pad(e, k, mode="edge"), np.ones(2 * k + 1) / (2 * k + 1), "valid")
    r = e - local
    return float(np.diff(e).std()), float(np.corrcoef(r[:-1], r[1:])[0, 1])


def describe(world: str, data: Path | None) -> dict:
    from evalstop.experiments.real_corpus import stop_cost
    from evalstop.lab.validate import validate_detectors

    curves, labels = load_dense_corpus(data, world=world)
    meta = load_dense_metadata(data, world=world)
    se = [e["gold_se"] for m in meta["runs"].values() for e in m["evals"]]
    jit, ac = zip(*(_wander(c.eval) for c in curves.values()), strict=True)
    healthy = [r for r in curves if not labels[r].hacking]
    hacking = [r for r in curves if labels[r].hacking]

    def peak_at(r):
        return labels[r].peak_index / (len(curves[r]) - 1)

    def below_peak(r):  # how far a healthy run ends below its smoothed peak, share of gain
        lab = labels[r]
        return lab.drop / lab.gain if lab.gain > 0 else None

    rows = validate_detectors((curves, labels), list(RULES))
    rules = {}
    for row in rows:
        if row["spec"] == "none":
            continue
        row.update(stop_cost(curves, labels, row["spec"]))
        rules[row["spec"]] = {k: (None if not np.isfinite(row[k]) else round(float(row[k]), 6))
                              for k in ("fpr", "recall", "precision", "harmful_rate",
                                        "tenant_harmful_rate", "tenant_loss_stopped_median",
                                        "delay_median")}
    n_evals = [len(c) for c in curves.values()]
    return {
        "role": DENSE[world].role,
        "runs": len(curves),
        "hacking": len(hacking),
        "evals_min": min(n_evals), "evals_max": max(n_evals),
        "gold_se_median": _median(se),
        "jitter_median": _median(jit),
        "jitter_over_se": round(_median(jit) / _median(se), 3),
        "residual_lag1_autocorr_median": _median(ac),
        "healthy_peak_at_median": _median(map(peak_at, healthy)),
        "healthy_gain_median": _median(labels[r].gain for r in healthy),
        "healthy_end_below_peak_median": _median(map(below_peak, healthy)),
        "hacking_peak_at_median": _median(map(peak_at, hacking)),
        "hacking_drop_median": _median(labels[r].drop for r in hacking),
        "total_run_wall_s": meta["summary"]["total_run_wall_s"],
        "rules": rules,
    }


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
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/lab-dense"))
    ap.add_argument("--figure", type=Path, default=Path("docs/figures/lab-dense/dense.png"))
    args = ap.parse_args(argv)
    shape = {world: describe(world, args.data) for world in DENSE}
    args.out.mkdir(parents=True, exist_ok=True)
    write_text(args.out / "shape.json", json.dumps(shape, indent=1) + "\n")
    draw(args.data, args.figure)
    print(json.dumps(shape, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
