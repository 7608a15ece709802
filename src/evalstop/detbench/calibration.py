"""``cusum-known`` with its sigma measured from a few finished runs, as a platform would.

``cusum-known`` needs the eval's noise sigma. A platform that does not know it can measure
it from jobs that already ran with the same eval (``evalstop noise``,
``detectors.measured_noise``). Here, for every cell of every part, K calibration runs are
drawn at the cell's noise (sigma and kind) from the TUNING part's families, chosen at
random: finished jobs of other shapes that shared the eval. Their pooled noise estimate S
is then given to the candidate's main spec, ``cusum-known:sigma=S,...``, which runs on the
cell as usual. Each cell draws its own calibration runs from its own random stream, so the
pooled result averages over many calibrations, good and bad.

Nothing here was tuned: K values are round numbers fixed before any run, the estimator is
the per-job one without its small-sample widening, and ``cusum-known``'s parameters are the
tuning part's pick.
"""

from __future__ import annotations

import numpy as np

from evalstop.detbench import lineup as lineup_mod
from evalstop.detbench import runs as runs_mod
from evalstop.detbench.families import FAMILIES
from evalstop.detectors.measured_noise import measure_noise

RUNS = (3, 10)  # finished runs the noise is measured from
_STREAM = 7  # keeps calibration draws apart from every part's cell streams


def known_candidate(lineup) -> lineup_mod.Candidate | None:
    """The lineup's rule that is told the noise."""
    return next((c for c in lineup if c.knows_noise), None)


def measured_sigma(seed: int, cell: tuple, sigma: float, kind: str, k: int,
                   evals: int = runs_mod.EVALS) -> float:
    """The noise sigma measured from ``k`` calibration runs for one cell.

    ``cell`` is any tuple of ints naming the cell (part, family, sigma and noise indices);
    it keys the random stream, so every cell gets its own calibration."""
    rng = np.random.default_rng([int(seed), _STREAM, *cell, int(k)])
    tuning = [f for f in FAMILIES if not f.held_out]
    series = []
    for _ in range(k):
        fam = tuning[int(rng.integers(len(tuning)))]
        series.append(runs_mod.make_runs(fam, sigma, kind, 1, rng, evals).eval[0])
    return measure_noise(series).sigma


def spec(known: lineup_mod.Candidate, sigma: float) -> str:
    """The known-noise candidate's main spec, told a measured sigma."""
    return lineup_mod.for_cell(known.main_spec, sigma)
