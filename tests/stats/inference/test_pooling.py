"""Pooling across sessions, checked against scipy and hand derivations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.inference.pooling import (
    cluster_mean_interval,
    fisher_z_interval,
    fisher_z_pooled_correlation,
    hotelling_one_sample,
    mean_interval_from_moments,
)


def test_cluster_mean_interval_matches_scipy_t() -> None:
    values = np.array([0.3, -0.1, 0.8, 0.25, 0.4, -0.35, 0.9])
    result = cluster_mean_interval(values)
    low, high = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=values.mean(), scale=scipy_stats.sem(values)
    )
    assert result.estimate == pytest.approx(values.mean())
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high))
    assert result.p_value == pytest.approx(scipy_stats.ttest_1samp(values, 0.0).pvalue)
    assert result.n_clusters == 7


def test_moments_version_equals_array_version() -> None:
    values = np.array([1.0, 2.5, -0.5, 3.0])
    from_moments = mean_interval_from_moments(values.mean(), values.std(ddof=1), values.size)
    assert from_moments == cluster_mean_interval(values)


def test_interval_undefined_for_fewer_than_two_clusters() -> None:
    assert math.isnan(cluster_mean_interval([1.0]).ci_low)
    assert math.isnan(fisher_z_pooled_correlation([0.3], [5]).estimate)


def test_fisher_pooling_with_equal_weights_is_a_t_test_on_z() -> None:
    # With w_s = 1: z_bar = mean(z); V = C/(C-1) * sum (z - z_bar)^2 / C^2 = s_z^2 / C,
    # i.e. exactly the squared standard error of the mean of the z values, so the pooled
    # interval is tanh of scipy's t interval on atanh(r) and the p-value is its t-test's.
    r = np.array([0.1, 0.35, -0.2, 0.05, 0.6, 0.15])
    z = np.arctanh(r)
    result = fisher_z_pooled_correlation(r, np.ones_like(r))
    low, high = scipy_stats.t.interval(0.95, r.size - 1, loc=z.mean(), scale=scipy_stats.sem(z))
    assert result.estimate == pytest.approx(math.tanh(z.mean()))
    assert (result.ci_low, result.ci_high) == pytest.approx((math.tanh(low), math.tanh(high)))
    assert result.p_value == pytest.approx(scipy_stats.ttest_1samp(z, 0.0).pvalue)


def test_fisher_pooling_weights_by_hand() -> None:
    # r = (0, 0.5), w = (1, 3): z = (0, atanh 0.5 = 0.549306); z_bar = 3 * 0.549306 / 4 = 0.411980
    # V = 2/1 * (1 * 0.411980^2 + 9 * 0.137327^2) / 16 = 2 * (0.169727 + 0.169727) / 16 = 0.042432
    result = fisher_z_pooled_correlation([0.0, 0.5], [1.0, 3.0])
    assert result.estimate == pytest.approx(math.tanh(0.411980), abs=1e-6)
    assert result.standard_error == pytest.approx(math.sqrt(0.042432), abs=1e-5)
    t_crit = 12.706205  # t_{0.975, 1} from any t table
    assert result.ci_high == pytest.approx(
        math.tanh(0.411980 + t_crit * math.sqrt(0.042432)), abs=1e-4
    )


def test_fisher_z_interval_by_hand() -> None:
    # r = 0.5, n = 28: z = 0.549306, se = 1/sqrt(25) = 0.2, 1.959964 * 0.2 = 0.391993
    # -> tanh(0.157313) = 0.156032, tanh(0.941299) = 0.735818
    low, high = fisher_z_interval(0.5, 28)
    assert (low, high) == pytest.approx((0.156032, 0.735818), abs=1e-5)


def test_hotelling_with_one_dimension_is_the_squared_t_test() -> None:
    x = np.array([0.4, -0.2, 1.1, 0.3, 0.7, 0.05, 0.9, -0.4])
    result = hotelling_one_sample(x)
    t = scipy_stats.ttest_1samp(x, 0.0)
    assert result.t_squared == pytest.approx(t.statistic**2)
    assert result.p_value == pytest.approx(t.pvalue)
    assert (result.df_numerator, result.df_denominator) == (1, 7)


def test_hotelling_matches_the_regression_identity() -> None:
    # Identity (e.g. Rencher, Methods of Multivariate Analysis, 2nd ed., section 5.3):
    # regressing a column of ones on X without intercept gives the uncentred R^2 with
    # T^2 / (n - 1) = R^2 / (1 - R^2). Computed here with lstsq, independently of T^2's formula.
    rng = np.random.default_rng(5)
    x = rng.normal(0.2, 1.0, size=(40, 3))
    ones = np.ones(40)
    coefficients, *_ = np.linalg.lstsq(x, ones, rcond=None)
    fitted = x @ coefficients
    r_squared = (fitted @ fitted) / (ones @ ones)
    expected_t2 = 39 * r_squared / (1 - r_squared)
    result = hotelling_one_sample(x)
    assert result.t_squared == pytest.approx(expected_t2)
    assert result.p_value == pytest.approx(
        scipy_stats.f.sf(expected_t2 * (40 - 3) / (3 * 39), 3, 37)
    )
