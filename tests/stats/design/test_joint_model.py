"""Absorbed fixed effects and CR1 cluster-robust covariance, against explicit computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.design.joint_model import (
    demean_within_groups,
    ols_absorbed_cluster_robust,
    ols_cluster_robust,
    wald_test,
)


def _panel(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """30 clusters x 3 groups x 4 rows, two regressors, group effects, clustered errors."""
    rng = np.random.default_rng(seed)
    cluster = np.repeat(np.arange(30), 12)
    group = np.repeat(np.arange(90), 4)
    x = rng.normal(size=(360, 2)) + rng.normal(size=(90, 1))[group]
    y = (
        x @ np.array([0.5, -1.0])
        + rng.normal(size=90)[group] * 2.0
        + rng.normal(size=30)[cluster]
        + rng.normal(size=360)
    )
    return x, y, group, cluster


def test_demeaning_matches_a_loop() -> None:
    values = np.array([[1.0, 2.0], [3.0, 6.0], [5.0, 1.0], [7.0, 7.0]])
    groups = np.array([0, 0, 1, 1])
    expected = np.array([[-1.0, -2.0], [1.0, 2.0], [-1.0, -3.0], [1.0, 3.0]])
    assert demean_within_groups(values, groups) == pytest.approx(expected)
    assert demean_within_groups(values[:, 0], groups) == pytest.approx(expected[:, 0])


def test_within_estimator_equals_dummy_variable_least_squares() -> None:
    # Frisch-Waugh-Lovell: the slopes of y on [X, group dummies] equal those of the
    # demeaned y on the demeaned X. Reference: numpy lstsq with all 90 dummies.
    x, y, group, cluster = _panel()
    dummies = (group[:, None] == np.arange(90)[None, :]).astype(float)
    reference, *_ = np.linalg.lstsq(np.hstack([x, dummies]), y, rcond=None)
    fit = ols_cluster_robust(
        demean_within_groups(x, group), demean_within_groups(y, group), cluster
    )
    assert fit.coefficients == pytest.approx(reference[:2])
    absorbed = ols_absorbed_cluster_robust(x, y, group, cluster)
    assert absorbed.coefficients == pytest.approx(reference[:2])
    assert absorbed.covariance == pytest.approx(fit.covariance)
    assert absorbed.residuals == pytest.approx(fit.residuals)


def test_cr1_covariance_matches_a_cluster_loop() -> None:
    # V = c/(c-1) * (n-1)/(n-k) * B^-1 (sum_c X_c' e_c e_c' X_c) B^-1, with B = X'X,
    # written as an explicit loop over clusters (Cameron & Miller 2015, eq. 12).
    x, y, _, cluster = _panel(2)
    design = np.column_stack([np.ones(len(y)), x])
    beta = np.linalg.solve(design.T @ design, design.T @ y)
    residuals = y - design @ beta
    meat = np.zeros((3, 3))
    for c in np.unique(cluster):
        score = design[cluster == c].T @ residuals[cluster == c]
        meat += np.outer(score, score)
    bread = np.linalg.inv(design.T @ design)
    n, k, c = len(y), 3, 30
    expected = c / (c - 1) * (n - 1) / (n - k) * bread @ meat @ bread
    fit = ols_cluster_robust(design, y, cluster)
    assert fit.coefficients == pytest.approx(beta)
    assert fit.covariance == pytest.approx(expected)


def test_one_row_per_cluster_gives_hc1() -> None:
    # With singleton clusters CR1's factor n/(n-1) * (n-1)/(n-k) = n/(n-k): MacKinnon &
    # White's (1985) HC1, B^-1 X' diag(e^2) X B^-1 * n/(n-k).
    rng = np.random.default_rng(3)
    design = np.column_stack([np.ones(50), rng.normal(size=50)])
    y = design @ np.array([1.0, 2.0]) + rng.normal(size=50) * (1 + np.abs(design[:, 1]))
    fit = ols_cluster_robust(design, y, np.arange(50))
    bread = np.linalg.inv(design.T @ design)
    e = fit.residuals
    hc1 = 50 / 48 * bread @ (design.T * e**2) @ design @ bread
    assert fit.covariance == pytest.approx(hc1)


def test_confidence_interval_uses_t_with_clusters_minus_one() -> None:
    x, y, group, cluster = _panel(4)
    fit = ols_absorbed_cluster_robust(x, y, group, cluster)
    t_crit = scipy_stats.t.ppf(0.975, 29)
    expected = np.column_stack(
        [
            fit.coefficients - t_crit * fit.standard_errors,
            fit.coefficients + t_crit * fit.standard_errors,
        ]
    )
    assert fit.confidence_intervals() == pytest.approx(expected)


def test_wald_with_one_restriction_is_the_squared_t() -> None:
    result = wald_test([0.6], [[0.04]], n_clusters=21)
    # t = 0.6 / 0.2 = 3; F = 9 on (1, 20); p = two-sided t(20) p-value of 3
    assert result.f_statistic == pytest.approx(9.0)
    assert result.p_value == pytest.approx(2 * scipy_stats.t.sf(3.0, 20))


def test_wald_with_several_restrictions_uses_the_hotelling_scaling() -> None:
    # W = b' V^-1 b with b = (1, 1), V = diag(0.25, 1): W = 4 + 1 = 5; C = 12, q = 2:
    # F = (12 - 2) / (2 * 11) * 5 = 2.272727 on (2, 10) degrees of freedom.
    result = wald_test([1.0, 1.0], [[0.25, 0.0], [0.0, 1.0]], n_clusters=12)
    assert result.f_statistic == pytest.approx(50 / 22)
    assert (result.df_numerator, result.df_denominator) == (2, 10)
    assert result.p_value == pytest.approx(scipy_stats.f.sf(50 / 22, 2, 10))


def test_sparse_design_gives_the_same_fit() -> None:
    from scipy import sparse

    x, y, group, cluster = _panel(5)
    x[np.abs(x) < 0.8] = 0.0  # mostly zeros, as dummies are
    dense = ols_absorbed_cluster_robust(x, y, group, cluster)
    sparse_fit = ols_absorbed_cluster_robust(sparse.csr_matrix(x), y, group, cluster)
    assert sparse_fit.coefficients == pytest.approx(dense.coefficients)
    assert sparse_fit.covariance == pytest.approx(dense.covariance)


def test_the_residuals_updated_a_step_at_a_time_are_the_same_bits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from llm_council.stats.design import joint_model

    x, y, group, cluster = _panel(4)
    whole = ols_absorbed_cluster_robust(x, y, group, cluster)
    monkeypatch.setattr(joint_model, "_ROWS_PER_STEP", 7)  # many steps, a ragged last one
    stepped = ols_absorbed_cluster_robust(x, y, group, cluster)
    np.testing.assert_array_equal(stepped.residuals, whole.residuals)
    np.testing.assert_array_equal(stepped.covariance, whole.covariance)
