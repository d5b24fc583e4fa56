"""Pearson r with its exact t test, against scipy and a hand derivation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.inference.correlation import pearson_correlation_t_test


def test_hand_derivation_n4() -> None:
    # x = 1,2,3,4 and y = 1,3,2,4: centred x = (-1.5,-.5,.5,1.5), centred y =
    # (-1.5,.5,-.5,1.5); Sxy = 2.25-.25-.25+2.25 = 4, Sxx = Syy = 5, so r = 4/5 = 0.8.
    # t = 0.8*sqrt(2/(1-0.64)) = 0.8*sqrt(50/9); with 2 df the t tail has the closed
    # form P(T > t) = (1 - t/sqrt(2+t^2))/2, and t/sqrt(2+t^2) = 0.8 here, so the
    # two-sided p = 1 - 0.8 = 0.2 exactly.
    result = pearson_correlation_t_test([1, 2, 3, 4], [1, 3, 2, 4])
    assert result.r == pytest.approx(0.8, abs=1e-12)
    assert result.p_value == pytest.approx(0.2, abs=1e-12)
    assert result.n_pairs == 4


@pytest.mark.parametrize("n_pairs", [3, 4, 5, 7, 30])
def test_matches_scipy_pearsonr(n_pairs: int) -> None:
    rng = np.random.default_rng(n_pairs)
    for _ in range(20):
        x = rng.lognormal(5, 0.5, n_pairs)
        y = 0.4 * np.log(x) + rng.normal(size=n_pairs)
        expected = scipy_stats.pearsonr(x, y)
        result = pearson_correlation_t_test(x, y)
        assert result.r == pytest.approx(expected.statistic, abs=1e-10)
        assert result.p_value == pytest.approx(expected.pvalue, rel=1e-8, abs=1e-12)


def test_nan_pairs_are_dropped() -> None:
    x = [1.0, 2.0, math.nan, 4.0, 5.0, 6.0]
    y = [2.0, 1.0, 3.0, math.nan, 7.0, 5.0]
    expected = scipy_stats.pearsonr([1, 2, 5, 6], [2, 1, 7, 5])
    result = pearson_correlation_t_test(x, y)
    assert result.n_pairs == 4
    assert result.r == pytest.approx(expected.statistic)
    assert result.p_value == pytest.approx(expected.pvalue)


@pytest.mark.parametrize(
    ("x", "y"),
    [([1, 2], [3, 4]), ([1, 1, 1, 1], [1, 2, 3, 4]), ([1, 2, 3], [5, 5, 5])],
)
def test_undefined_correlation_is_none_not_zero(x: list[float], y: list[float]) -> None:
    result = pearson_correlation_t_test(x, y)
    assert result.r is None
    assert result.p_value is None


def test_perfect_correlation_has_p_zero() -> None:
    result = pearson_correlation_t_test([1, 2, 3], [2, 4, 6])
    assert result.r == pytest.approx(1.0)
    assert result.p_value == 0.0


def test_mismatched_lengths_raise() -> None:
    with pytest.raises(ValueError, match="same length"):
        pearson_correlation_t_test([1, 2, 3], [1, 2])


def test_false_positive_rate_is_nominal_at_n5() -> None:
    # The exact t test keeps its level at 3 df, where a normal approximation does not:
    # over 4000 independent normal samples of 5 pairs, P(p < 0.05) must be 5% (+- 1%).
    rng = np.random.default_rng(7)
    draws = rng.normal(size=(4000, 2, 5))
    p_values = [pearson_correlation_t_test(x, y).p_value for x, y in draws]
    rate = np.mean(np.array(p_values) < 0.05)
    assert 0.04 <= rate <= 0.06
