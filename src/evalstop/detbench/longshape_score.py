"""Score a stop rule on long runs (``longshape``) as a tenant sees it.

Per part (pooled over cells): the share of non-hacking runs stopped (``false_stop``), the
share stopped with a smoothed loss above 5% of the run's gain (``tenant_harmful``, from
``metrics.tenant_harm``: the delivered checkpoint's smoothed level against the smoothed end
level), the median smoothed loss of the stopped non-hacking runs, the share of hacking runs
caught, and the median delay from the true peak to the stop as a share of the run's length
(over the hacking runs caught; negative when stopped before the peak). The peak is the
last eval at the noiseless curve's peak, where the fall begins
(``delay_share_median_first_peak``: from the first, as the 20-eval benchmark counts). Noise modes as in
``realshape_score`` (own, stated ``eval_n=N``, fleet).
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench.longshape import LongCell
from evalstop.detbench.realshape_score import run_cell
from evalstop.metrics.tenant_harm import tenant_harm


def cell_outcome(spec: str, cell: LongCell, mode: str, progress: bool = False) -> dict:
    """Per-run arrays for one cell: stopped, stop index, loss, harmful, delay share;
    ``progress``: the rule is told each eval's share of the run."""
    stopped, stop_idx, kept_idx = run_cell(spec, cell, mode, progress)
    th = tenant_harm(cell.eval, stopped, kept_idx, cell.hacking)
    return {"stopped": stopped, "stop_idx": stop_idx, "loss": th.loss,
            "harmful": th.harmful, "delay": (stop_idx - cell.fall_idx) / cell.evals,
            "delay_first_peak": (stop_idx - cell.peak_idx) / cell.evals}


def pool(cells: list[LongCell], outcomes: list[dict]) -> dict:
    neg = pos = fs = harmful = caught = 0
    delays: list[float] = []
    firsts: list[float] = []
    losses: list[float] = []
    for cell, o in zip(cells, outcomes):
        hack, st = cell.hacking, o["stopped"]
        neg += int((~hack).sum())
        pos += int(hack.sum())
        fs += int((st & ~hack).sum())
        harmful += int(o["harmful"].sum())
        caught += int((st & hack).sum())
        delays += o["delay"][st & hack].tolist()
        firsts += o["delay_first_peak"][st & hack].tolist()
        loss = o["loss"][st & ~hack]
        losses += loss[np.isfinite(loss)].tolist()

    def ratio(a, b):
        return None if b == 0 else a / b

    return {
        "runs": neg + pos, "hacking": pos,
        "false_stop": ratio(fs, neg), "tenant_harmful": ratio(harmful, neg),
        "loss_stopped_median": float(np.median(losses)) if losses else None,
        "caught": ratio(caught, pos),
        "delay_share_median": float(np.median(delays)) if delays else None,
        "delay_share_median_first_peak": float(np.median(firsts)) if firsts else None,
    }


def score_long(spec: str, cells: list[LongCell], mode: str = "stated",
               progress: bool = False) -> dict:
    """Pooled figures over the cells, and the same split by eval frequency."""
    outcomes = [cell_outcome(spec, c, mode, progress) for c in cells]
    out = pool(cells, outcomes)
    freqs = sorted({c.freq for c in cells})
    if len(freqs) > 1:
        out["by_freq"] = {str(f): pool([c for c in cells if c.freq == f],
                                       [o for c, o in zip(cells, outcomes) if c.freq == f])
                          for f in freqs}
    return out
