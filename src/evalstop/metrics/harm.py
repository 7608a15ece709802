"""What a stop costs the tenant and saves the platform: regret, harmful stops, compute saved.

Precision against a final-state label cannot tell a harmless stop (a healthy run stopped
in a dip whose kept checkpoint is as good as its end) from a harmful one. These can:

* **run-to-end quality**: the true quality of the run's last checkpoint, what the tenant
  gets if nobody stops the run.
* **delivered quality**: the true quality of the checkpoint handed back: the kept (best by
  eval) checkpoint of a stopped run, the last checkpoint of a run that was not stopped.
* **gain**: the run's true peak minus its first eval's true quality (what training bought).
* **regret** = (run-to-end - delivered) / gain: 0 for a run not stopped, > 0 when the stop
  cost quality, < 0 when it saved quality (a hacking run stopped near its peak). NaN for a
  run whose gain is not > 0 (its first eval was its best).
* **harmful stop**: a *non-hacking* run, stopped, whose delivered quality is more than
  ``tol`` (2%) of its gain below its run-to-end quality. With no gain, any loss at all.
* **compute saved**: the share of eval intervals not run, pooled over runs (a run of ``n``
  evals stopped at eval index ``s`` skips ``n - 1 - s`` of its ``n`` intervals).

Runs may have different eval counts: pad ``true`` with NaN past each run's last eval and
pass ``n_evals``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HARM_TOL = 0.02


@dataclass(frozen=True)
class Harm:
    """Per-run arrays (see the module doc)."""

    delivered: np.ndarray
    run_to_end: np.ndarray
    gain: np.ndarray
    regret: np.ndarray
    harmful: np.ndarray  # bool
    saved_intervals: np.ndarray  # eval intervals not run
    n_evals: np.ndarray
    hacking: np.ndarray  # bool
    stopped: np.ndarray  # bool

    def summary(self) -> dict[str, float | int]:
        """Pooled figures; ``harmful_rate`` is over non-hacking runs."""
        neg = ~self.hacking
        n_neg = int(neg.sum())
        reg = self.regret
        reg_neg = reg[neg & np.isfinite(reg)]
        reg_pos = reg[self.hacking & np.isfinite(reg)]
        total = int(self.n_evals.sum())
        return {
            "harmful": int(self.harmful.sum()),
            "harmful_rate": float(self.harmful.sum() / n_neg) if n_neg else float("nan"),
            "regret_healthy_mean": float(reg_neg.mean()) if reg_neg.size else float("nan"),
            "regret_healthy_p95": (float(np.percentile(reg_neg, 95)) if reg_neg.size
                                   else float("nan")),
            "regret_hacking_mean": float(reg_pos.mean()) if reg_pos.size else float("nan"),
            "compute_saved": (float(self.saved_intervals.sum() / total) if total
                              else float("nan")),
        }


def run_arrays(runs: int, width: int, stopped, kept_idx, hacking, n_evals, **more):
    """``(stopped, kept_idx, hacking, n_evals)`` as arrays, each (and each of ``more``)
    checked to be one value per run; ``n_evals`` defaults to every column and must be in
    1..width."""
    stopped = np.asarray(stopped, bool)
    kept_idx = np.asarray(kept_idx, np.int64)
    hacking = np.asarray(hacking, bool)
    n = np.full(runs, width, np.int64) if n_evals is None else np.asarray(n_evals, np.int64)
    for name, arr in (("stopped", stopped), ("kept_idx", kept_idx), ("hacking", hacking),
                      ("n_evals", n), *more.items()):
        if np.shape(arr) != (runs,):
            raise ValueError(f"{name} must have shape ({runs},), got {np.shape(arr)}")
    if runs and (n.min() < 1 or n.max() > width):
        raise ValueError(f"n_evals must be in 1..{width}")
    return stopped, kept_idx, hacking, n


def harm(true: np.ndarray, stopped: np.ndarray, stop_idx: np.ndarray, kept_idx: np.ndarray,
         hacking: np.ndarray, *, n_evals: np.ndarray | None = None,
         tol: float = HARM_TOL) -> Harm:
    """Regret, harmful stops and compute saved of one set of stop decisions.

    ``true``: (runs, evals) true quality at each eval (NaN-padded when ragged);
    ``stopped``: (runs,) bool; ``stop_idx``: eval index of the stop (ignored when not
    stopped); ``kept_idx``: eval index of the checkpoint a stopped run keeps (ignored
    when not stopped); ``hacking``: the hidden label; ``n_evals``: each run's eval count
    (default: all columns).
    """
    true = np.asarray(true, float)
    if true.ndim != 2:
        raise ValueError(f"true must be (runs, evals), got shape {true.shape}")
    runs, width = true.shape
    stop_idx = np.asarray(stop_idx, np.int64)
    stopped, kept_idx, hacking, n = run_arrays(runs, width, stopped, kept_idx, hacking,
                                               n_evals, stop_idx=stop_idx)
    if not 0 <= tol < 1:
        raise ValueError(f"tol must be in [0, 1), got {tol!r}")
    rows = np.arange(runs)
    last = n - 1
    if np.any(stopped & ((stop_idx < 0) | (stop_idx > last))):
        raise ValueError("a stop_idx is outside its run's evals")
    if np.any(stopped & ((kept_idx < 0) | (kept_idx > stop_idx))):
        raise ValueError("a kept_idx is outside 0..stop_idx of its run")
    run_to_end = true[rows, last]
    kept = np.where(stopped, kept_idx, last)
    delivered = true[rows, kept]
    # Each run's peak over its own evals (the NaN padding past them masked out), vectorised:
    # the simulator scores every run of every study with this.
    inside = np.arange(width)[None, :] < n[:, None]
    peak = np.where(inside, true, -np.inf).max(axis=1) if width else np.zeros(runs)
    gain = peak - true[:, 0]
    loss = run_to_end - delivered
    with np.errstate(divide="ignore", invalid="ignore"):
        regret = np.where(gain > 0, loss / np.where(gain > 0, gain, 1.0), np.nan)
    harmful = stopped & ~hacking & (loss > tol * np.maximum(gain, 0.0))
    saved = np.where(stopped, last - stop_idx, 0)
    return Harm(delivered, run_to_end, gain, regret, harmful, saved, n, hacking, stopped)
