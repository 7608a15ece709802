"""benchmarks/bench_scale.py: a seed's cost at the study's size is the measured one when
a point is at that size, and the power law through the two points otherwise."""

from __future__ import annotations

import pytest
from conftest import load_benchmark

bs = load_benchmark("bench_scale")


def test_a_point_at_the_studys_size_is_measured_not_fitted():
    t, how = bs.per_seed([(100_000, 3.7), (1_000_000, 45.9)], 1_000_000)
    assert t == 45.9 and how.startswith("MEASURED")
    t, how = bs.per_seed([(82_247, 2.5), (20_000, 1.4)], 82_247)
    assert t == 2.5 and how.startswith("MEASURED")


def test_otherwise_the_power_law_through_both_points():
    # t = 2 n^1.5 through n = 100 and 400, read at 1,600
    t, how = bs.per_seed([(400, 2 * 400 ** 1.5), (100, 2 * 100 ** 1.5)], 1_600)
    assert t == pytest.approx(2 * 1_600 ** 1.5)
    assert how.startswith("EXTRAPOLATED") and "n^1.50" in how


def test_span_reads_seconds_then_minutes():
    assert bs.span(45.9) == "46 CPU-s"
    assert bs.span(918) == "15.3 CPU-min"
