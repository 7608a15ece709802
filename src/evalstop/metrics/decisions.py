"""Stop decisions scored against the hidden labels.

Positive = the job is hacking (its true quality peaks and falls). TP: a hacking job was
stopped; FP: a non-hacking job was stopped; FN: a hacking job ran to the end; TN: a
non-hacking job ran to the end.

FPR is reported with both denominators, because they answer different questions:

* ``fpr`` = FP / all non-hacking jobs (LoRA, DPO and healthy RLHF): how often a tenant
  whose job is fine gets stopped anyway. This is the denominator the paper uses.
* ``fpr_rlhf`` = FP among healthy RLHF jobs / healthy RLHF jobs: the harder cases, since
  only RLHF jobs can hack. A rule applied to RLHF jobs only (StopAt) has all its FPs here.

A ratio whose denominator is zero (precision with no stops, recall with no hacking jobs) is
NaN, shown as "n/a" in reports: 0 would claim a measured failure, 1 a measured success.
"""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def ratio(num: float, den: float) -> float:
    """``num / den``, NaN when ``den == 0``."""
    return float(num) / float(den) if den != 0 else float("nan")


def decision_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    check_pair(workload, result)
    hacking = np.asarray(workload.hacking, bool)
    stopped = np.asarray(result.stopped, bool)
    types = np.asarray(workload.type).astype(str)
    rlhf = types == "rlhf"
    tp = int(np.count_nonzero(hacking & stopped))
    fp = int(np.count_nonzero(~hacking & stopped))
    fn = int(np.count_nonzero(hacking & ~stopped))
    tn = int(np.count_nonzero(~hacking & ~stopped))
    healthy_rlhf = ~hacking & rlhf
    fp_rlhf = int(np.count_nonzero(healthy_rlhf & stopped))
    out: dict[str, float] = {
        "n_jobs": len(hacking),
        "n_hacking": int(np.count_nonzero(hacking)),
        "n_stopped": int(np.count_nonzero(stopped)),
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "fpr": ratio(fp, fp + tn),
        "fpr_rlhf": ratio(fp_rlhf, np.count_nonzero(healthy_rlhf)),
    }
    # Where the false stops fall, by job type: tells a noise-driven rule (FPs on plateaued
    # LoRA/DPO jobs) from one that mistakes healthy RLHF curves for hacking.
    for t in sorted(set(types.tolist())):
        out[f"fp_{t}"] = int(np.count_nonzero(~hacking & stopped & (types == t)))
    out.update(_delay(workload, result, hacking & stopped))
    return out


def detection_delay(workload: Workload, result: SimResult) -> np.ndarray:
    """Per-job ``stop_eval - argmax(eval_true row)`` in evals (NaN unless a TP).

    Negative means stopped before the true peak (noise made it look like a decline early);
    the argmax is the earliest on ties, the same tie rule as the detectors' best checkpoint.
    """
    check_pair(workload, result)
    tp = np.asarray(workload.hacking, bool) & np.asarray(result.stopped, bool)
    peak = np.argmax(np.asarray(workload.eval_true, float), axis=1)
    out = np.full(len(tp), np.nan)
    out[tp] = np.asarray(result.stop_eval, float)[tp] - peak[tp]
    return out


def _delay(workload: Workload, result: SimResult, tp: np.ndarray) -> dict[str, float]:
    d = detection_delay(workload, result)[tp]
    if d.size == 0:
        return {"delay_mean_evals": float("nan"), "delay_p50_evals": float("nan"),
                "early_stops": 0}
    return {
        "delay_mean_evals": float(d.mean()),
        "delay_p50_evals": float(np.median(d)),
        "early_stops": int(np.count_nonzero(d < 0)),  # TPs stopped before the true peak
    }
