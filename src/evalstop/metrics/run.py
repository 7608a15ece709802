"""All per-run metrics of one (Workload, SimResult) pair as one flat dict of numbers.

The dict is what an experiment task sends back across processes: small, picklable and
JSON-friendly. Keys are stable names used by the aggregation and the report. Timing
(``SimResult.wall_s``) is left out on purpose: the metrics of a seed must not depend on the
machine or the worker count.
"""

from __future__ import annotations

from evalstop.metrics.cluster import cluster_metrics
from evalstop.metrics.decisions import decision_metrics
from evalstop.metrics.jct import jct_metrics
from evalstop.metrics.quality import quality_metrics
from evalstop.metrics.stop_cost import stop_cost_metrics
from evalstop.metrics.waste import waste_metrics
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload


def run_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in (jct_metrics, waste_metrics, quality_metrics, decision_metrics, stop_cost_metrics,
                 cluster_metrics):
        out.update(part(workload, result))
    return out
