"""Score a stop rule on ``realshape`` cells, with the noise the rule is given.

Noise modes (``stated_noise``'s precedence, one at a time):

* ``own``: the spec as it is (the rule estimates the noise from the job, as a user who
  states nothing gets);
* ``stated``: the user states the noise: ``eval_n=N`` on pass-rate cells, ``sigma=S`` (the
  cell's sigma) on additive cells;
* ``fleet``: the runs of one cell are one eval group sharing a ``FleetNoise``; they run side
  by side (eval-major order, so the fleet learns from every run's earlier evals) and start
  with an empty fleet.

Rules that read no noise get the spec unchanged in every mode. Figures: precision, recall
and FPR against the label; harm (``metrics.harm``: harmful-stop rate over non-hacking runs,
regret, compute saved) and its tenant view from the observed evals alone
(``metrics.tenant_harm``: ``tenant_harmful_rate``); the median delay in evals from the true peak to the stop over the
hacking runs stopped; on the short part, recall within 3 evals of the drop's start and the
share of flat runs stopped.
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench.realshape import Cell
from evalstop.detectors import FleetNoise, make_detector
from evalstop.detectors.registry import reads_noise
from evalstop.metrics.harm import harm
from evalstop.metrics.tenant_harm import tenant_harm

MODES = ("own", "stated", "fleet")


def cell_spec(spec: str, cell: Cell, mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown noise mode {mode!r}; known: {', '.join(MODES)}")
    if mode != "stated" or not reads_noise(spec):
        return spec
    sep = "," if ":" in spec else ":"
    opt = f"eval_n={cell.items}" if cell.items is not None else f"sigma={cell.sigma!r}"
    return f"{spec}{sep}{opt}"


def run_cell(spec: str, cell: Cell, mode: str,
             progress: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stopped, stop_idx, kept_idx) per run; the step of eval j is j + 1. ``progress``:
    give the rule each eval's share of its run, (j + 1) / the run's length (ragged runs
    are NaN-padded: the length is up to the last finite eval)."""
    spec = cell_spec(spec, cell, mode)
    fleet = FleetNoise(name=cell.group) if mode == "fleet" and reads_noise(spec) else None
    dets = [make_detector(spec, fleet=fleet) for _ in range(cell.runs)]
    evals = cell.eval.T.tolist()  # eval-major: all runs' eval j, then eval j + 1
    stopped = np.zeros(cell.runs, bool)
    stop_idx = np.full(cell.runs, -1)
    kept_idx = np.full(cell.runs, cell.evals - 1)
    live = list(range(cell.runs))
    lengths = _lengths(cell.eval)
    for j, row in enumerate(evals):
        still = []
        for i in live:
            p = (j + 1) / lengths[i] if progress and j < lengths[i] else None
            d = dets[i].update_stop(j + 1, row[i], progress=p)
            if d is None:
                still.append(i)
            else:
                stopped[i], stop_idx[i], kept_idx[i] = True, j, d.best_step - 1
        live = still
    return stopped, stop_idx, kept_idx


def _lengths(ev: np.ndarray) -> list[int]:
    """Each run's length: up to its last finite eval (at least 1)."""
    fin = np.isfinite(ev)
    last = ev.shape[1] - np.argmax(fin[:, ::-1], axis=1)
    return np.where(fin.any(axis=1), last, ev.shape[1]).tolist()


def score(spec: str, cells: list[Cell], mode: str = "own", progress: bool = False) -> dict:
    """Pooled figures over the cells (runs of different eval counts pool by counts)."""
    tp = fp = pos = neg = 0
    delays: list[int] = []
    harmful = tenant_harmful = 0
    saved = total = 0
    reg_h: list[float] = []
    reg_pos: list[float] = []
    within3 = drops = flat_stops = flats = 0
    for cell in cells:
        stopped, stop_idx, kept_idx = run_cell(spec, cell, mode, progress)
        hack = cell.hacking
        pos += int(hack.sum())
        neg += int((~hack).sum())
        tp += int((stopped & hack).sum())
        fp += int((stopped & ~hack).sum())
        peak = cell.true.argmax(axis=1)
        delays += (stop_idx - peak)[stopped & hack].tolist()
        h = harm(cell.true, stopped, np.maximum(stop_idx, 0), np.where(stopped, kept_idx, 0),
                 hack)
        harmful += int(h.harmful.sum())
        tenant_harmful += int(tenant_harm(cell.eval, stopped, kept_idx, hack).harmful.sum())
        saved += int(h.saved_intervals.sum())
        total += int(h.n_evals.sum())
        reg_h += h.regret[~hack & np.isfinite(h.regret)].tolist()
        reg_pos += h.regret[hack & np.isfinite(h.regret)].tolist()
        if cell.drop_idx is not None:
            d = cell.drop_idx
            drops += int((d >= 0).sum())
            within3 += int(((d >= 0) & stopped & (stop_idx <= d + 2)).sum())
            flats += int((d < 0).sum())
            flat_stops += int(((d < 0) & stopped).sum())

    def ratio(a, b):
        return None if b == 0 else a / b

    out = {
        "runs": pos + neg, "hacking": pos,
        "precision": ratio(tp, tp + fp), "recall": ratio(tp, pos), "fpr": ratio(fp, neg),
        "harmful_rate": ratio(harmful, neg),
        "regret_healthy": float(np.mean(reg_h)) if reg_h else None,
        "regret_hacking": float(np.mean(reg_pos)) if reg_pos else None,
        "compute_saved": ratio(saved, total),
        "median_delay": float(np.median(delays)) if delays else None,
        "tenant_harmful_rate": ratio(tenant_harmful, neg),
    }
    if drops or flats:
        out["recall_within3"] = ratio(within3, drops)
        out["flat_stopped"] = ratio(flat_stops, flats)
    return out
