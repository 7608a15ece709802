"""RLHF curves drawn from the lab corpus (``evalstop.lab``) instead of the Gao formula.

With ``rlhf_curves="lab"`` every RLHF job of a workload gets the curves of one real run:
a toy RLHF run that over-optimized (or not) a learned proxy reward on a CPU. The job's
hidden label is drawn first, as for synthetic curves (so ``hacking_frac`` still sets the
base rate), and the run is drawn uniformly among the corpus runs with that label.

How a run becomes a job's curves:

- **Grid.** A run is evaluated at progress 0, 1/n, ..., 1 (the corpus: every 0.04). Where
  the workload's eval grid hits the run's own points (``eval_interval=0.04`` for the
  corpus) the run's values are used as they are; elsewhere they are interpolated linearly
  between the run's two neighbouring evals (which averages two noisy evals, so it lowers
  the noise a little). The run's step-0 eval (the SFT policy) is never an eval of the job
  (the workload's grid starts after 0) but anchors the interpolation.
- **eval_obs** is the run's gold score as evaluated (fresh samples, so it already carries
  real eval noise, about 0.004 on the gold scale): no noise is added, whatever ``sigma``
  (which still sets the noise of LoRA and DPO jobs).
- **eval_true** is the run's gold curve smoothed as the label rule smooths it (centred
  moving average over 3 evals, ``evalstop.lab.labels.smooth``), then put on the grid.
- **peak_progress**: for a hacking run, the progress of the smoothed peak; for a healthy
  run 1.0, as for synthetic healthy curves (a healthy job wastes nothing; its smoothed
  maximum on a plateau is noise, not a peak).
- **proxy** and **loss**: the run's, on the grid the same way. The gold scale (about
  0.9-1.1) is the lab's own, not the synthetic curves' 0..1 quality scale.
"""

from __future__ import annotations

import functools

import numpy as np

CHOICES = ("synthetic", "lab")


def check_choice(rlhf_curves: str) -> str:
    if rlhf_curves not in CHOICES:
        raise ValueError(f"rlhf_curves must be one of {', '.join(CHOICES)}, got {rlhf_curves!r}")
    return rlhf_curves


@functools.lru_cache(maxsize=1)
def _shipped():
    """The shipped corpus as arrays, loaded once per process."""
    from evalstop.lab.corpus import load_corpus

    return corpus_arrays(load_corpus())


def corpus_arrays(corpus) -> dict:
    """``(curves, labels)`` -> run ids, progress, eval, smoothed eval, proxy, loss, hacking
    and peak progress, as arrays; every run must share one progress grid."""
    from evalstop.lab.labels import smooth

    curves, labels = corpus
    if not curves:
        raise ValueError("the lab corpus has no runs")
    ids = list(curves)
    prog = curves[ids[0]].progress
    for r in ids:
        p = curves[r].progress
        if p.shape != prog.shape or not np.allclose(p, prog):
            raise ValueError(f"lab run {r!r} has another eval grid than {ids[0]!r}")
    if not (np.all(np.diff(prog) > 0) and prog[0] == 0.0 and prog[-1] == 1.0):
        raise ValueError("lab runs must be evaluated from progress 0 to 1, increasing")
    ev = np.stack([curves[r].eval for r in ids])
    true = np.stack([smooth(curves[r].eval) for r in ids])
    hacking = np.array([labels[r].hacking for r in ids], dtype=bool)
    peak = np.array([prog[labels[r].peak_index] if labels[r].hacking else 1.0 for r in ids])
    return {"ids": ids, "progress": prog, "eval": ev, "eval_true": true,
            "proxy": np.stack([curves[r].proxy for r in ids]),
            "loss": np.stack([curves[r].loss for r in ids]),
            "hacking": hacking, "peak_progress": peak}


def on_grid(progress: np.ndarray, values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Rows of ``values`` (at ``progress``) at the points of ``grid``: exact where a grid
    point is one of the run's points, linear in between."""
    out = np.empty((values.shape[0], len(grid)))
    for j, g in enumerate(grid):
        i = int(np.searchsorted(progress, g - 1e-9))
        if i < len(progress) and abs(progress[i] - g) <= 1e-9:
            out[:, j] = values[:, i]
        else:
            lo, hi = progress[i - 1], progress[i]
            w = (g - lo) / (hi - lo)
            out[:, j] = (1.0 - w) * values[:, i - 1] + w * values[:, i]
    return out


def apply_lab_curves(curves, eval_obs: np.ndarray, types: np.ndarray, grid: np.ndarray,
                     rng: np.random.Generator, corpus=None) -> list[str]:
    """Overwrite the RLHF rows of ``curves`` (an ``evalstop.workload.curves.Curves``) and of
    ``eval_obs`` with corpus runs matching each row's drawn ``curves.hacking``; returns the
    run id used per RLHF row. ``corpus`` (``(curves, labels)``) defaults to the shipped one."""
    data = _shipped() if corpus is None else corpus_arrays(corpus)
    rows = np.flatnonzero(np.asarray(types) == "rlhf")
    if rows.size == 0:
        return []
    want = np.asarray(curves.hacking, bool)[rows]
    pool = {True: np.flatnonzero(data["hacking"]), False: np.flatnonzero(~data["hacking"])}
    for label in (True, False):
        if np.any(want == label) and pool[label].size == 0:
            kind = "hacking" if label else "healthy"
            raise ValueError(f"the lab corpus has no {kind} runs to draw {kind} RLHF jobs from")
    pick = np.empty(rows.size, dtype=np.int64)
    for label in (True, False):  # fixed order: the draws do not depend on row order
        mine = np.flatnonzero(want == label)
        pick[mine] = rng.choice(pool[label], size=mine.size, replace=True)
    prog = data["progress"]
    eval_obs[rows] = on_grid(prog, data["eval"][pick], grid)
    curves.eval_true[rows] = on_grid(prog, data["eval_true"][pick], grid)
    curves.proxy[rows] = on_grid(prog, data["proxy"][pick], grid)
    curves.loss[rows] = on_grid(prog, data["loss"][pick], grid)
    curves.peak_progress[rows] = data["peak_progress"][pick]
    return [data["ids"][i] for i in pick]
