"""Weekly series and the CUSUM change test against hand values and Kolmogorov's limit."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.bias_effects.drift import (
    WeeklySeries,
    cusum_change_test,
    cusum_null_statistics,
    cusum_statistic,
    weekly_series,
)


def test_weekly_series_pools_the_within_week_sd() -> None:
    values = [1.0, 3.0, 2.0, 6.0, 4.0, 5.0]
    weeks = [0, 0, 1, 1, 2, 3]
    series = weekly_series(values, weeks)
    assert series is not None
    assert series.means.tolist() == [2.0, 4.0, 4.0, 5.0]
    # within SS = (1+1) + (4+4) = 10 on N - W = 6 - 4 = 2 df -> sd = sqrt(5)
    assert series.standard_errors.tolist() == pytest.approx(
        [np.sqrt(5 / 2), np.sqrt(5 / 2), np.sqrt(5), np.sqrt(5)]
    )
    assert weekly_series([1.0, 2.0], [0, 1]) is None  # fewer than 3 weeks


def test_cusum_statistic_by_hand() -> None:
    # equal se = 1: mean 1, residuals -1, -1, 2 -> partial sums -1, -2 -> C = 2 / sqrt(3)
    statistic, where = cusum_statistic([0.0, 0.0, 3.0], [1.0, 1.0, 1.0])
    assert statistic == pytest.approx(2 / np.sqrt(3))
    assert where == 1


def test_null_distribution_approaches_kolmogorov_for_many_weeks() -> None:
    null = cusum_null_statistics(np.ones(400), 4000, np.random.default_rng(0))
    # sup |Brownian bridge| 95% point = 1.358 (scipy.stats.kstwobign); discrete max is a bit lower
    assert np.quantile(null, 0.95) == pytest.approx(stats.kstwobign.ppf(0.95), abs=0.06)


def test_change_test_detects_a_step_and_is_calibrated_without_one() -> None:
    rng = np.random.default_rng(1)
    se = np.full(12, 0.1)
    step = WeeklySeries(np.arange(12), np.r_[np.zeros(6), np.full(6, 0.4)], se, np.ones(12))
    found = cusum_change_test(step, n_simulations=999)
    assert found.p_value < 0.01 and found.change_after_index == 5
    p_values = [
        cusum_change_test(
            WeeklySeries(np.arange(12), rng.normal(0, 0.1, 12), se, np.ones(12)),
            n_simulations=199,
            seed=i,
        ).p_value
        for i in range(200)
    ]
    # 200 null series: 5% rate -> 10 expected; binomial 99.9% range is about 2..22
    assert 2 <= sum(p < 0.05 for p in p_values) <= 22
