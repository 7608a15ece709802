"""Benchmark of stop rules on labelled, synthetic eval curves (``evalstop bench-detectors``).

families (curve shapes, labelled) -> runs (noise, outliers, proxy, loss) -> scoring
(precision, recall, FPR, delay, quality kept) -> bench (all cells, pooled, the default's
target check) -> report (JSON, CSV, Markdown) and plots (PNG).
"""

from evalstop.detbench.bench import run_detector_benchmark

__all__ = ["run_detector_benchmark"]
