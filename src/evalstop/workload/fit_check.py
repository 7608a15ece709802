"""Goodness of fit: the fitted generator's statistics against the held-out real runs'.

Generated runs (``fitted_curves.fitted_runs``: each on the eval grid of the fit run it
draws) and the paper preset's RLHF curves are measured by the same code as the real runs
(``shape_stats``). The band, stated once: a generated median must lie within the middle
half (25th to 75th percentile) of the held-out real runs' values of that statistic; the
share of hacking runs within ``SHARE_SES`` standard errors of the difference between two
binomial shares, the held-out one and the generated one (the held-out part is small: on 91
runs its standard error alone is 5 points).
"""

from __future__ import annotations

import numpy as np

from evalstop.workload.shape_stats import TABLE, run_stats, table

SHARE_SES = 3.0  # the band on the share of hacking runs, in standard errors
PAPER_EVALS = 20  # the paper preset's eval grid: an eval every 5% of the run
PAPER_SIGMA = 0.02  # ... and its default eval noise


def fitted_values(rng: np.random.Generator, n: int, fit: dict | None = None
                  ) -> tuple[list[dict], list[bool]]:
    """``(per-run statistics, hacking)`` of ``n`` runs drawn from the fitted generator."""
    from evalstop.workload.fitted_curves import fitted_runs

    runs = fitted_runs(rng, n, fit)
    return [run_stats(p, e) for p, e, _ in runs], [h for _, _, h in runs]


def paper_values(rng: np.random.Generator, n: int) -> tuple[list[dict], list[bool]]:
    """The same of ``n`` RLHF runs of the paper preset (its curves, hacking share, 20 evals
    and white noise 0.02; the start, progress 0, measured as the fitted runs' is)."""
    from evalstop.workload.curves import add_eval_noise, rlhf_curves
    from evalstop.workload.presets import get_preset

    hacking = rng.random(n) < get_preset("paper").hacking_frac
    grid = np.linspace(0.0, 1.0, PAPER_EVALS + 1)
    c = rlhf_curves(grid, hacking, rng)
    obs = add_eval_noise(c.eval_true, PAPER_SIGMA, rng)
    return [run_stats(grid, row) for row in obs], [bool(h) for h in hacking]


def fitted_table(rng: np.random.Generator, n: int, fit: dict | None = None) -> dict:
    return table(*fitted_values(rng, n, fit))


def paper_table(rng: np.random.Generator, n: int) -> dict:
    return table(*paper_values(rng, n))


def _share_half_width(real: dict, generated: dict) -> float:
    p, n = real["median"], max(real["n"], 1)
    g, m = generated["median"], max(generated["n"], 1)
    return SHARE_SES * (p * (1.0 - p) / n + g * (1.0 - g) / m) ** 0.5


def rows(real: dict, generated: dict) -> list[dict]:
    """One row per statistic: the real runs' quartiles, the generated median, and whether it
    lies in the band."""
    out = []
    for cls, key, what in (*TABLE, ("all", "hacking_share", "share of hacking RLHF runs")):
        name = f"{cls}/{key}"
        r, g = real[name], generated[name]
        if key == "hacking_share":
            m = r["median"]
            half = None if m is None or g["median"] is None else _share_half_width(r, g)
            lo, hi = (None, None) if half is None else (m - half, m + half)
        else:
            lo, hi = r["q25"], r["q75"]
        med = g["median"]
        ok = None if lo is None or med is None else bool(lo <= med <= hi)
        out.append({"statistic": name, "what": what, "real_median": r["median"],
                    "band": (lo, hi), "generated_median": med, "in_band": ok})
    return out
