"""How much evidence of a decline a hacking run offers at all, and recall by that evidence.

A rule can only be asked to find declines that the noise leaves visible. For a hacking run
the *decline SNR* is the evidence an observer who knew the true peak level would have by
the end of the run:

    snr = sqrt(sum over evals after the true peak of (g_peak - g_t)^2) / sigma

with ``g`` the noiseless gain curve and ``sigma`` the cell's noise scale (for Student-t
cells, the scale matched to the Gaussian's interquartile range). It is the length of the
decline in noise units: with the peak level and sigma known, the likelihood-ratio test of
"the run fell" against "it stayed at its peak" sees a z-score of this size. A real rule
knows neither, looks after every eval (so needs a larger margin to keep false stops
rare), and must also tell a decline from a plateau, so it has less evidence than this.

Recall per SNR bucket separates "misses declines that were there to see" from "misses
declines that no rule could see". Nothing here was used to choose a rule.
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench.runs import RunSet
from evalstop.detbench.scoring import Outcome

EDGES = (2.0, 3.0, 4.0, 6.0)  # bucket edges in decline-SNR units
LABELS = ("< 2", "2-3", "3-4", "4-6", ">= 6")
VISIBLE = 4.0  # the SNR above which the report calls a decline plainly visible


def decline_snr(rs: RunSet) -> np.ndarray:
    """(runs,) decline SNR of each hacking run; NaN for the other runs.

    A noise-free cell (sigma 0) gives inf for every hacking run: any decline is visible.
    """
    g = rs.gain
    peak = g.argmax(axis=1)
    after = np.arange(g.shape[1])[None, :] > peak[:, None]
    drop = np.where(after, g.max(axis=1, keepdims=True) - g, 0.0)
    size = np.sqrt((drop**2).sum(axis=1))
    with np.errstate(divide="ignore"):
        snr = size / rs.sigma if rs.sigma > 0 else np.full(rs.runs, np.inf)
    return np.where(rs.hacking, snr, np.nan)


def bucket_of(snr: np.ndarray) -> np.ndarray:
    """Bucket index (0 .. len(LABELS) - 1) of each finite or infinite SNR."""
    return np.searchsorted(np.asarray(EDGES), snr, side="right")


def empty() -> np.ndarray:
    return np.zeros((len(LABELS), 2), dtype=np.int64)


def counts(rs: RunSet, out: Outcome) -> np.ndarray:
    """(len(LABELS), 2) array: hacking runs per bucket and how many of them were stopped."""
    snr = decline_snr(rs)
    hack = rs.hacking & ~np.isnan(snr)  # a NaN gain curve has no SNR: left out, not "high"
    b = bucket_of(snr[hack])
    stopped = out.stopped[hack]
    table = empty()
    np.add.at(table[:, 0], b, 1)
    np.add.at(table[:, 1], b, stopped.astype(np.int64))
    return table


def rows(table: np.ndarray) -> list[dict]:
    """Per bucket: its label, the number and share of hacking runs in it, and recall."""
    total = int(table[:, 0].sum())
    out = []
    for label, (n, hit) in zip(LABELS, table.tolist()):
        out.append({"snr": label, "runs": n, "share": None if total == 0 else n / total,
                    "recall": None if n == 0 else hit / n})
    return out


def visible_recall(table: np.ndarray) -> float | None:
    """Recall over the hacking runs with decline SNR >= VISIBLE."""
    first = EDGES.index(VISIBLE) + 1
    n, hit = table[first:].sum(axis=0).tolist()
    return None if n == 0 else hit / n
