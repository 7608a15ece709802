"""Metrics of simulated runs (per run, from a Workload and its SimResult) and across seeds.

Per run: JCT (``jct``), wasted GPU-hours (``waste``), quality delivered (``quality``), stop
decisions against the hidden labels (``decisions``), what the stops cost and saved
(``stop_cost``: harmful stops, regret, compute saved), makespan and utilisation
(``cluster``); ``run_metrics`` gathers them into one flat dict. Across seeds: ``stats``.
Undefined ratios are NaN, written "n/a" in reports.
"""

from evalstop.metrics.cluster import cluster_metrics
from evalstop.metrics.decisions import decision_metrics, detection_delay, ratio
from evalstop.metrics.harm import HARM_TOL, Harm, harm
from evalstop.metrics.jct import jct_metrics, jct_s
from evalstop.metrics.quality import quality_metrics, quality_ratio
from evalstop.metrics.run import run_metrics
from evalstop.metrics.stats import (
    Interval,
    change_ci,
    mean_ci,
    paired_wilcoxon,
    relative_change,
)
from evalstop.metrics.stop_cost import stop_cost_metrics
from evalstop.metrics.tenant_harm import TENANT_TOL, TenantHarm, tenant_harm
from evalstop.metrics.waste import waste_metrics, wasted_gpu_h

__all__ = [
    "HARM_TOL",
    "TENANT_TOL",
    "Harm",
    "Interval",
    "TenantHarm",
    "change_ci",
    "cluster_metrics",
    "decision_metrics",
    "detection_delay",
    "harm",
    "jct_metrics",
    "jct_s",
    "mean_ci",
    "paired_wilcoxon",
    "quality_metrics",
    "quality_ratio",
    "ratio",
    "relative_change",
    "run_metrics",
    "stop_cost_metrics",
    "tenant_harm",
    "waste_metrics",
    "wasted_gpu_h",
]
