"""The drift test's Monte Carlo p refined past 4,000 draws (Besag & Clifford 1991; ADR 0060)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.bias_audit.report.analyses.drift import refined_cusum_test
from llm_council.stats.bias_effects.drift import (
    WeeklySeries,
    cusum_change_test,
    cusum_null_statistics,
    cusum_statistic,
)


def _series(means: list[float]) -> WeeklySeries:
    n = len(means)
    return WeeklySeries(
        weeks=np.arange(n),
        means=np.asarray(means, dtype=float),
        standard_errors=np.full(n, 0.3),
        n_sessions=np.full(n, 10),
    )


def test_an_ordinary_p_is_the_first_stage_unchanged() -> None:
    series = _series([0.0, 0.2, -0.1, 0.3, 0.1, 0.0])
    first = cusum_change_test(series, seed=4)
    assert first.p_value >= 11 / 4001
    assert refined_cusum_test(series, seed=4) == first


def test_a_blatant_change_reaches_the_cap() -> None:
    # a 3-point step on weekly se 0.3: no null draw comes near, p = 1 / (100,000 + 1)
    refined = refined_cusum_test(_series([0.0] * 3 + [3.0] * 3), seed=0)
    assert refined.n_simulations == 100_000
    assert refined.p_value == pytest.approx(1 / 100_001)


@pytest.mark.parametrize("step", [0.85, 1.0])  # stops at the 10th; reaches the cap
def test_the_stopped_p_counts_the_draws_by_brute_force(step: float) -> None:
    """Recount: the first 4,000 draws from seed 0, then the second stream drawn in one go
    (numpy's Generator fills draws in order, so chunking does not change them); the test
    stops at the 10th exceedance overall, p = 10 / (its draw number)."""
    series = _series([0.0] * 3 + [step] * 3)
    statistic, _ = cusum_statistic(series.means, series.standard_errors)
    first = cusum_null_statistics(series.standard_errors, 4000, np.random.default_rng(0))
    rest = cusum_null_statistics(series.standard_errors, 96_000, np.random.default_rng([0, 1]))
    exceed = np.concatenate([first, rest]) >= statistic
    assert exceed[:4000].sum() < 10  # the case under test: the first stage is refined
    refined = refined_cusum_test(series, seed=0)
    assert (exceed.sum() >= 10) == (step == 0.85)  # 6 + 84 exceedances; 0 + 6
    if exceed.sum() >= 10:
        tenth = int(np.flatnonzero(exceed)[9]) + 1
        assert refined.n_simulations == tenth
        assert refined.p_value == pytest.approx(10 / tenth)
    else:
        assert refined.p_value == pytest.approx((1 + exceed.sum()) / 100_001)
    assert refined.p_value < 11 / 4001


def test_a_non_finite_statistic_is_never_refined() -> None:
    series = _series([0.0, float("nan"), 0.0, 1.0])
    first = cusum_change_test(series, seed=0)
    refined = refined_cusum_test(series, seed=0)
    assert np.isnan(refined.statistic)  # (NaN != NaN, so the fields are compared one by one)
    assert (refined.p_value, refined.n_simulations) == (first.p_value, first.n_simulations)
