"""The fast companion of ``cusum-drop``'s CUSUM: a test for a sustained shift of the level.

The CUSUM adds at most ``clip - k`` per eval, so it needs about ``h / (clip - k)`` evals
of a full-size drop however large the drop is; a drop that takes two evals to fall, or
follows a rise, needs one or two more. The shift test asks one question instead: is the
mean of the last ``m`` evals below the best level by more than the noise of the two
means can explain?

    z = mean_i min((L - x_i) / sigma, clip) / sqrt(1/m + 1/w)

L is the best level (a trimmed mean of ``w`` evals), x_1..x_m the last m evals (all after
the window that set L), sigma the eval noise (stated, fleet or the job's own). Without the
clip this is the standard z of a difference of two means with known sigma. Each eval's
drop is clipped at ``clip`` sigmas, as in the CUSUM, so one wild eval adds at most
``clip / m`` to the mean: with m = 2 or 3 and a threshold above ``clip / (m sqrt(1/m +
1/w))`` a single bad eval cannot stop a job alone. The largest z any drop can reach is
``clip / sqrt(1/m + 1/w)``; a threshold above it never fires.

L is the highest of many windows, so it sits above the true level and z runs high on a
plateau; the threshold has to absorb that.

Measured (issue 11, benchmarks/tune_default.py and shift_posthoc.py): OR-ed with the
default's CUSUM it is no better than lowering the CUSUM's h. On the tuning material it
trades precision for recall along the CUSUM's own frontier, and on held-out material
(seeds 0 and 1) every variant tried sits below the default at h = 2. So it is off by
default; it stays as an option for a platform that wants a fast stop on large drops.
"""

from __future__ import annotations

import math


def shift_z(level: float, recent: list[float], sigma: float, width: int, clip: float) -> float:
    """The shift statistic of the ``recent`` evals below ``level`` (see the module doc).
    ``sigma == 0`` (noise-free scores): an eval below the level is a full-size drop."""
    m = len(recent)
    if sigma > 0.0:
        total = sum(min((level - v) / sigma, clip) for v in recent)
    elif any(v > level for v in recent):
        return -math.inf
    else:
        total = clip * sum(v < level for v in recent)
    return total / m / math.sqrt(1.0 / m + 1.0 / width)
