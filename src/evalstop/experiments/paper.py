"""The paper's reported figures, to stand beside ours in the report. Data only.

Source: Zhang, Sun, Sarkani, Fossaceca, "EvalStop: Using World Feedback to Detect and
Correct Reward Overoptimization in Multi-Tenant RLHF Platforms", arXiv 2606.04145 (2026).
Ratios are fractions (0.983 = 98.3%); ``delta_pct`` values are percent change against the
method's baseline (SRTF-Est in the main table). The paper's FPR uses all non-hacking jobs
as the denominator (our ``fpr``); its StopAt FPR of 64.5% only fits that denominator.
"""

from __future__ import annotations

from dataclasses import dataclass

SOURCE = "arXiv 2606.04145"


@dataclass(frozen=True)
class Figure:
    """One number from the paper, keyed like our summary rows."""

    experiment: str
    method: str
    metric: str
    field: str  # "mean" (the value itself) or "delta_pct" (change vs baseline, %)
    value: float
    note: str = ""


@dataclass(frozen=True)
class Claim:
    """A claim over several of our summary rows: every selected value must lie in
    ``[low, high]`` (a None bound is open)."""

    experiment: str
    text: str  # as the paper states it
    metric: str
    field: str
    method_prefix: str  # selects methods whose label starts with this
    x_min: float | None = None  # selects sweep points with x in [x_min, x_max]
    x_max: float | None = None
    low: float | None = None
    high: float | None = None


_ES = "EvalStop+SRTF-Est"

FIGURES = (
    Figure("main", _ES, "precision", "mean", 0.983),
    Figure("main", _ES, "recall", "mean", 0.993),
    Figure("main", _ES, "fpr", "mean", 0.015),
    Figure("main", _ES, "jct_mean_s", "delta_pct", -9.4),
    Figure("main", _ES, "waste_gpu_h", "delta_pct", -21.8, "p < 0.05"),
    Figure("main", "StopAt-0.65", "precision", "mean", 0.571),
    Figure("main", "StopAt-0.65", "fpr", "mean", 0.645),
    Figure("main", "Loss plateau", "precision", "mean", 0.570),
    Figure("main", "Loss plateau", "recall", "mean", 0.383),
)

CLAIMS = (
    Claim("composability", "9-25% JCT reduction across base schedulers", "jct_mean_s",
          "delta_pct", "EvalStop+", low=-25.0, high=-9.0),
    Claim("sigma", "precision >= 91% at sigma <= 0.05", "precision", "mean", _ES,
          x_max=0.05, low=0.91),
    Claim("hacking", "precision >= 89% across 20-80% hacking fractions", "precision", "mean",
          _ES, x_min=0.2, x_max=0.8, low=0.89),
)


def figures_for(experiment: str) -> list[Figure]:
    return [f for f in FIGURES if f.experiment == experiment]


def claims_for(experiment: str) -> list[Claim]:
    return [c for c in CLAIMS if c.experiment == experiment]
