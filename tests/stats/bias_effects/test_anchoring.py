"""Anchoring statistics against hand values, scipy and a brute-force jackknife."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.bias_effects.anchoring import (
    _running_totals,
    cluster_jackknife_correlation,
    previous_scores_mean,
    running_mean_deviation,
)


def test_running_mean_uses_only_earlier_scored_slots() -> None:
    scores = np.array([[6.0, 8.0, np.nan, 4.0], [np.nan, 5.0, 7.0, 9.0]])
    # row 0: slot1 mean(6)=6, slot3 mean(6,8)=7; row 1: slot2 mean(5)=5, slot3 mean(5,7)=6
    expected_mean = np.array([[np.nan, 6.0, np.nan, 7.0], [np.nan, np.nan, 5.0, 6.0]])
    assert np.allclose(previous_scores_mean(scores), expected_mean, equal_nan=True)
    expected_deviation = np.array([[np.nan, 2.0, np.nan, -3.0], [np.nan, np.nan, 2.0, 3.0]])
    assert np.allclose(running_mean_deviation(scores), expected_deviation, equal_nan=True)


def test_jackknife_correlation_matches_scipy_and_a_brute_force_jackknife() -> None:
    rng = np.random.default_rng(5)
    cluster = np.repeat(np.arange(30), 4)
    x = rng.normal(size=cluster.size)
    y = 0.3 * x + rng.normal(size=cluster.size)
    result = cluster_jackknife_correlation(x, y, cluster)
    assert result.estimate == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    leave_out = np.array([stats.pearsonr(x[cluster != c], y[cluster != c])[0] for c in range(30)])
    se = np.sqrt(29 / 30 * np.sum((leave_out - leave_out.mean()) ** 2))
    assert result.standard_error == pytest.approx(se, rel=1e-9)
    t_crit = stats.t.ppf(0.975, 29)
    assert result.ci_low == pytest.approx(result.estimate - t_crit * se, rel=1e-9)
    assert result.p_value == pytest.approx(2 * stats.t.sf(abs(result.estimate / se), 29))
    assert result.n_clusters == 30


def test_jackknife_correlation_needs_three_clusters_and_drops_nan() -> None:
    assert np.isnan(cluster_jackknife_correlation([1, 2, 3], [1, 2, 4], [0, 0, 1]).estimate)
    with_nan = cluster_jackknife_correlation(
        [1, 2, np.nan, 4, 5, 6], [2, 1, 3, 5, 4, 6], [0, 0, 1, 1, 2, 2]
    )
    assert with_nan.estimate == pytest.approx(stats.pearsonr([1, 2, 4, 5, 6], [2, 1, 5, 4, 6])[0])


def test_earlier_minus_rest_mean_by_hand() -> None:
    from llm_council.stats.bias_effects.anchoring import earlier_minus_rest_mean

    values = np.array([[2.0, 4.0, 9.0, 5.0], [3.0, np.nan, 7.0, 1.0], [6.0, 8.0, np.nan, np.nan]])
    # row 0: slot1 mean(2) - mean(2,9,5)=2-16/3; slot2 mean(2,4) - mean(2,4,5)=3-11/3;
    #        slot3 is the last observed slot (earlier = rest): NaN
    # row 1: slot2 mean(3) - mean(3,1) = 1; slot3 last: NaN
    # row 2: two observed slots, slot1 earlier = rest: NaN (nothing identified)
    expected = np.array(
        [
            [np.nan, 2.0 - 16.0 / 3.0, 3.0 - 11.0 / 3.0, np.nan],
            [np.nan, np.nan, 1.0, np.nan],
            [np.nan, np.nan, np.nan, np.nan],
        ]
    )
    assert np.allclose(earlier_minus_rest_mean(values), expected, equal_nan=True)
    # a shift of the whole row cancels
    assert np.allclose(
        earlier_minus_rest_mean(values + 10.0), earlier_minus_rest_mean(values), equal_nan=True
    )


@pytest.mark.parametrize("n_slots", [0, 1, 5, 12])
def test_running_totals_are_cumsum_bit_for_bit(n_slots: int) -> None:
    rng = np.random.default_rng(n_slots)
    values = rng.normal(size=(50, n_slots)) * 10.0 ** rng.integers(-8, 8, (50, n_slots))
    assert np.array_equal(_running_totals(values), np.cumsum(values, axis=-1))
    observed = values > 0
    assert np.array_equal(_running_totals(observed), np.cumsum(observed, axis=-1))
    assert _running_totals(observed).dtype == np.cumsum(observed, axis=-1).dtype
