"""Across-seed statistics: t intervals, the paired Wilcoxon test, relative change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from evalstop.metrics.stats import change_ci, mean_ci, paired_wilcoxon, relative_change


def test_mean_ci_known_values():
    ci = mean_ci([1.0, 2.0, 3.0])
    half = sps.t.ppf(0.975, 2) * 1.0 / math.sqrt(3)
    assert ci.mean == 2.0 and ci.n == 3
    assert ci.lo == pytest.approx(2.0 - half) and ci.hi == pytest.approx(2.0 + half)


@given(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=40))
def test_mean_ci_contains_the_mean(values):
    ci = mean_ci(values)
    assert ci.lo <= ci.mean + 1e-9 * (1 + abs(ci.mean))
    assert ci.mean <= ci.hi + 1e-9 * (1 + abs(ci.mean))


def test_mean_ci_edge_cases():
    assert all(math.isnan(v) for v in mean_ci([])[:3]) and mean_ci([]).n == 0
    one = mean_ci([5.0])
    assert one.mean == 5.0 and math.isnan(one.lo) and math.isnan(one.hi)
    flat = mean_ci([2.0, 2.0, 2.0])
    assert flat.lo == flat.hi == 2.0
    # NaN (an undefined ratio on some seed) is left out, and n says so
    assert mean_ci([1.0, float("nan"), 3.0]) == mean_ci([1.0, 3.0])
    with pytest.raises(ValueError, match="1.5"):
        mean_ci([1.0, 2.0], level=1.5)


def test_wilcoxon_detects_a_known_shift():
    rng = np.random.default_rng(0)
    base = rng.normal(10, 1, 20)
    shifted = base - 0.5 + rng.normal(0, 0.05, 20)
    p = paired_wilcoxon(shifted, base)
    assert p < 0.001
    assert p == pytest.approx(sps.wilcoxon(shifted - base).pvalue)
    noise = base + rng.normal(0, 0.05, 20)
    assert paired_wilcoxon(noise, base) > 0.05


def test_wilcoxon_matches_scipy_without_its_permutation_test():
    # Every branch of scipy's "auto": exact table (no ties, n <= 50), its permutation test
    # (ties or zeros, n <= 13, which the exact count here replaces), and the normal
    # approximation (ties with n > 13; n > 50).
    rng = np.random.default_rng(5)
    cases = [rng.normal(size=9), rng.normal(0.5, 1, 40),
             rng.integers(-2, 3, 8).astype(float), rng.integers(-2, 4, 13).astype(float),
             np.round(rng.normal(0.3, 1, 11), 1), rng.integers(-3, 4, 30).astype(float),
             rng.normal(0.1, 1, 80), np.array([1.0, 1.0, 2.0, -0.5, 0.0])]
    for d in cases:
        if np.all(d == 0):
            continue
        ref = float(sps.wilcoxon(d, zero_method="wilcox").pvalue)
        assert paired_wilcoxon(d, np.zeros_like(d)) == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_wilcoxon_edge_cases():
    assert paired_wilcoxon([1, 2, 3], [1, 2, 3]) == 1.0  # all differences zero
    assert math.isnan(paired_wilcoxon([float("nan")], [1.0]))  # no pairs left
    assert math.isnan(paired_wilcoxon([], []))
    with pytest.raises(ValueError, match="length"):
        paired_wilcoxon([1, 2], [1])


def test_relative_change():
    assert relative_change(90.6, 100.0) == pytest.approx(-9.4)
    assert relative_change(-5.0, -10.0) == pytest.approx(50.0)  # against |baseline|
    assert math.isnan(relative_change(1.0, 0.0))
    assert math.isnan(relative_change(float("nan"), 1.0))


def test_change_ci_is_the_change_of_means_with_a_reproducible_interval():
    rng = np.random.default_rng(1)
    base = rng.uniform(8, 12, 20)
    ours = base * 0.9 + rng.normal(0, 0.1, 20)
    ci = change_ci(ours, base)
    assert ci.mean == pytest.approx(relative_change(ours.mean(), base.mean()))
    assert ci.lo <= ci.mean <= ci.hi < 0
    assert change_ci(ours, base) == ci  # own fixed generator: same interval every time
    assert math.isnan(change_ci([1.0], [2.0]).lo)
    with pytest.raises(ValueError, match="n_boot"):
        change_ci(ours, base, n_boot=0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 7.25, 1e-9, 4e6]), min_size=1,
                max_size=40))
def test_average_ranks_are_scipys_rankdata(values):
    from scipy.stats import rankdata

    from evalstop.metrics.stats import _average_ranks

    x = np.asarray(values, dtype=float)
    ranks, tied = _average_ranks(x)
    assert np.array_equal(ranks, rankdata(x))
    assert tied == (np.unique(x).size != x.size)


def test_t_scale_is_the_scipy_ratio_it_stands_for():
    from scipy import stats

    from evalstop.detbench.runs import T_DF, T_SCALE

    assert T_SCALE == float(stats.norm.ppf(0.75) / stats.t.ppf(0.75, T_DF))
