"""Score a stop rule on ``failshape`` cells, per family, as the issue-46 targets read.

* ``rising`` and ``dip`` (not hacking): the share stopped (``stopped``) and the share
  stopped with a smoothed (tenant) loss above 5% of the gain (``tenant_harmful``,
  ``metrics.tenant_harm``), and of those the share stopped within the first ``EARLY``
  evals (``tenant_harmful_early``: where the default is the short-run rule, which a long
  run's first evals cannot be told from);
* ``collapse``: the share caught and the median delay in evals from the fall's first eval
  (the first eval below the peak) to the stop (``delay_evals_median``; 1 = stopped at the
  second eval of the fall);
* ``dead``: the share stopped, the share stopped with "no gain left" in the reason, and
  the share of those stopped whose kept checkpoint is at or before the fall's start (its
  best, not a checkpoint at the floor);
* ``saved``: over collapse and dead runs, the share of their evals left when stopped (the
  compute a stop frees), the savings a dip's harm is traded against.

Noise modes as ``realshape_score`` (``own``: nothing stated; ``stated``: ``eval_n=N``).
``progress=True`` gives the rule each eval's share of the run, (j + 1) / evals, as a
platform that knows the run's length does (the simulator's eval grid); off, none.
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench.failshape import FailCell
from evalstop.detbench.realshape_score import cell_spec
from evalstop.detectors import make_detector
from evalstop.metrics.tenant_harm import tenant_harm

DEAD_REASON = "no gain left"
EARLY = 20  # evals: harmful stops this early are the short-run rule's (``hn``), reported apart


def run_cell(spec: str, cell: FailCell, mode: str, progress: bool = False):
    """(stopped, stop_idx, kept_idx, reasons) per run; the step of eval j is j + 1."""
    spec = cell_spec(spec, cell, mode)
    stopped = np.zeros(cell.runs, bool)
    stop_idx = np.full(cell.runs, -1)
    kept_idx = np.full(cell.runs, cell.evals - 1)
    reasons = [""] * cell.runs
    for i, row in enumerate(cell.eval.tolist()):
        det = make_detector(spec)
        for j, v in enumerate(row):
            d = det.update_stop(j + 1, v, progress=(j + 1) / cell.evals if progress else None)
            if d is not None:
                stopped[i], stop_idx[i], kept_idx[i], reasons[i] = True, j, d.best_step - 1, \
                    d.reason
                break
    return stopped, stop_idx, kept_idx, reasons


def cell_outcome(spec: str, cell: FailCell, mode: str, progress: bool = False) -> dict:
    stopped, stop_idx, kept_idx, reasons = run_cell(spec, cell, mode, progress)
    th = tenant_harm(cell.eval, stopped, kept_idx, cell.hacking)
    return {"stopped": stopped, "stop_idx": stop_idx, "kept_idx": kept_idx,
            "dead_reason": np.array([DEAD_REASON in r for r in reasons]),
            "harmful": th.harmful, "loss": th.loss}


def pool(cells: list[FailCell], outcomes: list[dict]) -> dict:
    """Figures per family over the cells given."""
    out: dict = {}
    for fam in sorted({c.family for c in cells}):
        pairs = [(c, o) for c, o in zip(cells, outcomes) if c.family == fam]
        runs = sum(c.runs for c, _ in pairs)
        st = np.concatenate([o["stopped"] for _, o in pairs])
        row: dict = {"runs": runs, "stopped": float(st.mean())}
        if fam in ("rising", "dip"):
            harmful = np.concatenate([o["harmful"] for _, o in pairs])
            first = np.concatenate([o["stop_idx"] < EARLY for _, o in pairs])
            row["tenant_harmful"] = float(harmful.mean())
            row["tenant_harmful_early"] = float((harmful & first).mean())
        else:
            first = np.concatenate([o["stop_idx"] - c.fall_idx - 1 for c, o in pairs])
            left = np.concatenate([(c.evals - 1 - o["stop_idx"]) / c.evals for c, o in pairs])
            row["saved"] = float(np.where(st, left, 0.0).mean())
            row["delay_evals_median"] = float(np.median(first[st])) if st.any() else None
            if fam == "dead":
                why = np.concatenate([o["dead_reason"] for _, o in pairs])
                kept = np.concatenate([o["kept_idx"] <= c.fall_idx for c, o in pairs])
                row["no_gain_left"] = float((st & why).mean())
                row["kept_best"] = float(kept[st].mean()) if st.any() else None
                late = np.concatenate([o["stop_idx"] - c.floor_idx for c, o in pairs])
                row["evals_at_floor_median"] = float(np.median(late[st])) if st.any() else None
        out[fam] = row
    return out


def score_fail(spec: str, cells: list[FailCell], mode: str = "stated",
               progress: bool = False) -> dict:
    return pool(cells, [cell_outcome(spec, c, mode, progress) for c in cells])
