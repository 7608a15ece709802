"""What a stop costs the tenant, judged from the eval scores alone (no hidden truth).

``harm`` scores a stop against each checkpoint's *true* quality, which only a simulator
knows. On a real run the tenant sees noisy evals, and the best single eval of a long noisy
run is a lucky draw, not a level. So this measure smooths first:

* **level at eval i**: the mean of the run's evals within ``w`` evals of i (clipped at
  the run's ends), ``w = max(1, ceil(window * n))`` for a run of ``n`` evals (default
  window 0.025: the mean spans about 5% of the run);
* **delivered level**: the level at the checkpoint handed back (the kept checkpoint of a
  stopped run); evals after the stop count, since the level is a property of the
  training trajectory, which the benchmark knows in full;
* **end level**: the mean of the run's last ``ceil(end * n)`` evals (default end 0.1: its
  last tenth), what running to the end delivers;
* **gain**: the highest level minus the level at the first eval;
* **loss** = (end level - delivered level) / gain for a stopped run, 0 for a run not
  stopped; NaN where the gain is not > 0 (a run that never gained: stopping it costs no
  training gain);
* **harmful** (tenant view): a non-hacking run, stopped, with loss > ``tol`` (5%).

Runs may have different eval counts: pad ``scores`` with NaN past each run's last eval
and pass ``n_evals``. NaN scores inside a run are left out of the means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evalstop.metrics.harm import run_arrays

TENANT_TOL = 0.05
LEVEL_WINDOW = 0.025
END_SHARE = 0.1


@dataclass(frozen=True)
class TenantHarm:
    """Per-run arrays (see the module doc)."""

    delivered: np.ndarray
    end: np.ndarray
    gain: np.ndarray
    loss: np.ndarray
    harmful: np.ndarray  # bool
    hacking: np.ndarray  # bool
    stopped: np.ndarray  # bool

    def summary(self) -> dict[str, float | int]:
        """Pooled figures; rates are over non-hacking runs."""
        neg = ~self.hacking
        n_neg = int(neg.sum())
        loss_neg = self.loss[neg & self.stopped & np.isfinite(self.loss)]
        return {
            "tenant_harmful": int(self.harmful.sum()),
            "tenant_harmful_rate": (float(self.harmful.sum() / n_neg) if n_neg
                                    else float("nan")),
            "tenant_loss_stopped_median": (float(np.median(loss_neg)) if loss_neg.size
                                           else float("nan")),
        }


class _Prefix:
    """Prefix sums of a (runs, evals) table's finite scores and of their count, so that any
    window's mean is two subtractions and a division."""

    def __init__(self, scores: np.ndarray) -> None:
        finite = np.isfinite(scores)
        self.csum = np.zeros((scores.shape[0], scores.shape[1] + 1))
        self.ccnt = np.zeros_like(self.csum)
        np.cumsum(np.where(finite, scores, 0.0), axis=1, out=self.csum[:, 1:])
        np.cumsum(finite, axis=1, out=self.ccnt[:, 1:])

    def means(self, rows, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Mean of the finite scores in columns ``lo:hi`` of ``rows``: ``lo`` and ``hi``
        either (len(rows), k) or (k,) column indices shared by every row (read as whole
        columns, much cheaper than a gather per cell)."""
        csum, ccnt = self.csum[rows], self.ccnt[rows]
        if lo.ndim == 1:
            total, count = csum[:, hi] - csum[:, lo], ccnt[:, hi] - ccnt[:, lo]
        else:
            r = np.arange(csum.shape[0])[:, None]
            total, count = csum[r, hi] - csum[r, lo], ccnt[r, hi] - ccnt[r, lo]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def levels(scores: np.ndarray, n_evals: np.ndarray, *,
           window: float = LEVEL_WINDOW, prefix: _Prefix | None = None) -> np.ndarray:
    """(runs, evals) smoothed level at every eval (NaN past each run's end). Runs of one
    length share their windows, so they are computed together, a length at a time (one
    length in a simulated workload, a few in a corpus)."""
    prefix = prefix or _Prefix(scores)
    runs, width = scores.shape
    out = np.full((runs, width), np.nan)
    for n in np.unique(n_evals).tolist():
        rows = slice(None) if runs and n_evals[0] == n and (n_evals == n).all() \
            else np.flatnonzero(n_evals == n)
        w = int(max(1, np.ceil(window * n)))
        j = np.arange(min(n, width))
        hi = np.minimum(j + w + 1, n)
        lo = np.minimum(np.clip(j - w, 0, None), hi)
        out[rows, :j.size] = prefix.means(rows, lo, hi)
    return out


def tenant_harm(scores: np.ndarray, stopped: np.ndarray, kept_idx: np.ndarray,
                hacking: np.ndarray, *, n_evals: np.ndarray | None = None,
                tol: float = TENANT_TOL, window: float = LEVEL_WINDOW,
                end: float = END_SHARE) -> TenantHarm:
    """Smoothed loss and tenant-view harmful stops of one set of stop decisions.

    ``scores``: (runs, evals) observed evals (NaN-padded when ragged); ``stopped``: (runs,)
    bool; ``kept_idx``: eval index of the checkpoint a stopped run keeps (ignored when not
    stopped); ``hacking``: the label; ``n_evals``: each run's eval count (default: all
    columns)."""
    scores = np.asarray(scores, float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be (runs, evals), got shape {scores.shape}")
    runs, width = scores.shape
    stopped, kept_idx, hacking, n = run_arrays(runs, width, stopped, kept_idx, hacking,
                                               n_evals)
    if np.any(stopped & ((kept_idx < 0) | (kept_idx >= n))):
        raise ValueError("a kept_idx is outside its run's evals")
    for name, v in (("tol", tol), ("window", window), ("end", end)):
        if not 0 <= v <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    rows = np.arange(runs)
    prefix = _Prefix(scores)
    lev = levels(scores, n, window=window, prefix=prefix)
    tail = np.maximum(1, np.ceil(end * n)).astype(np.int64)
    end_level = prefix.means(slice(None), (n - tail)[:, None], n[:, None])[:, 0]
    kept = np.where(stopped, kept_idx, n - 1)
    delivered = lev[rows, kept] if runs else np.zeros(0)
    with np.errstate(invalid="ignore"):
        gain = np.nanmax(np.where(np.isnan(lev), -np.inf, lev), axis=1) - lev[:, 0] \
            if width else np.zeros(runs)
        loss = np.where(gain > 0, (end_level - delivered) / np.where(gain > 0, gain, 1.0),
                        np.nan)
    loss = np.where(stopped, loss, np.where(gain > 0, 0.0, np.nan))
    harmful = stopped & ~hacking & (np.nan_to_num(loss, nan=0.0) > tol)
    return TenantHarm(delivered, end_level, gain, loss, harmful, hacking, stopped)
