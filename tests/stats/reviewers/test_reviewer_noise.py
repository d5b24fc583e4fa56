"""Per-reviewer noise variances and their t tests, against hand derivations and scipy."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.design.additive_model import fit_additive_two_way
from llm_council.stats.reviewers.reviewer_noise import (
    ReviewerNoise,
    estimate_reviewer_noise,
    noise_aware_t_test,
    satterthwaite_variance,
)
from llm_council.stats.sessions.session_tests import reviewer_offset_tests, self_preference_tests


def _with_variances(noise: ReviewerNoise, variances: np.ndarray) -> ReviewerNoise:
    """The same design with other per-reviewer variances (and their M Sigma M)."""
    sigma = np.maximum(variances, 0.0)[noise.reviewer_of_cell]
    return replace(
        noise,
        variances=variances,
        residual_covariance=(noise.annihilator * sigma) @ noise.annihilator,
    )


def test_expectation_matrix_matches_the_balanced_closed_form() -> None:
    # Complete R x C table: M = (I_R - J/R) kron (I_C - J/C), so
    # A_rr' = sum_{c,c'} M_(rc),(r'c')^2 = (delta_rr' - 1/R)^2 * sum_{c,c'} (delta_cc' - 1/C)^2
    #       = (delta_rr' - 1/R)^2 * (C - 1).
    rng = np.random.default_rng(1)
    n_reviewers, n_candidates = 4, 6
    fit = fit_additive_two_way(rng.normal(6, 1, size=(n_reviewers, n_candidates)))
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    delta = np.eye(n_reviewers)
    expected = (delta - 1 / n_reviewers) ** 2 * (n_candidates - 1)
    np.testing.assert_allclose(np.linalg.inv(noise.inverse_expectation), expected, atol=1e-10)
    # sum_r' A_rr' = sum_{i in r} M_ii: with equal variances E s_r = sigma^2 * (C-1)(R-1)/R
    np.testing.assert_allclose(
        expected.sum(axis=1), (n_candidates - 1) * (n_reviewers - 1) / n_reviewers
    )


def test_variances_are_unbiased_under_unequal_noise() -> None:
    # Monte Carlo over fresh noise on a fixed incomplete design (self-reviews missing):
    # the mean of A^-1 s must approach the true per-reviewer variances (Rao 1970).
    rng = np.random.default_rng(2)
    true_sd = np.array([0.5, 1.0, 1.5, 2.0, 1.0, 0.7])
    n = true_sd.size
    template = rng.normal(6, 1, size=(n, n))
    np.fill_diagonal(template, np.nan)
    fit = fit_additive_two_way(template)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    draws = 20_000
    errors = rng.standard_normal((draws, fit.observed.size)) * true_sd[fit.rows]
    residuals = errors @ noise.annihilator.T  # M y = M e: the fitted effects drop out
    groups = np.zeros((fit.observed.size, n))
    groups[np.arange(fit.observed.size), fit.rows] = 1.0
    estimates = (residuals**2 @ groups) @ noise.inverse_expectation.T
    standard_errors = estimates.std(axis=0) / np.sqrt(draws)
    assert np.all(np.abs(estimates.mean(axis=0) - true_sd**2) < 4 * standard_errors)


def test_satterthwaite_df_is_the_residual_df_for_the_pooled_form() -> None:
    # With v = A^T 1, u = A^-T v = 1 and v' sigma_hat^2 = e'e = RSS. With equal variances
    # E RSS = sigma^2 (n - p) and Var RSS = 2 sigma^4 tr(M) = 2 sigma^4 (n - p), so
    # Satterthwaite's 2 E^2 / Var = n - p exactly.
    rng = np.random.default_rng(3)
    table = rng.normal(6, 1, size=(5, 5))
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    equal = _with_variances(noise, np.full(5, fit.residual_variance))
    weights = np.linalg.inv(noise.inverse_expectation).T @ np.ones(5)
    variance, degrees_of_freedom = satterthwaite_variance(equal, weights)
    assert degrees_of_freedom == pytest.approx(fit.residual_df)
    assert variance == pytest.approx(fit.residual_variance * fit.residual_df)


def test_equal_variances_reproduce_the_pooled_standard_errors() -> None:
    # sum_i w_i^2 sigma^2 with w = X (X'X)^-1 c equals sigma^2 c'(X'X)^-1 c, and for a
    # new observation sigma^2 (1 + x0'(X'X)^-1 x0): the pooled formulas.
    rng = np.random.default_rng(4)
    table = rng.normal(6, 1, size=(5, 5))
    own = np.diag(table).copy() + 0.5
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    equal = _with_variances(noise, np.full(5, fit.residual_variance))
    pooled = reviewer_offset_tests(fit)
    aware = reviewer_offset_tests(fit, equal)
    for expected, got in zip(pooled, aware, strict=True):
        assert got.estimate == pytest.approx(expected.estimate)
        assert got.standard_error == pytest.approx(expected.standard_error)
    cells = [(r, r, float(own[r])) for r in range(5)]
    for expected, got in zip(
        self_preference_tests(fit, cells), self_preference_tests(fit, cells, equal), strict=True
    ):
        assert got.standard_error == pytest.approx(expected.standard_error)


def test_p_value_is_students_t_with_the_satterthwaite_df() -> None:
    rng = np.random.default_rng(5)
    table = rng.normal(6, 1, size=(6, 6)) * np.linspace(0.5, 2, 6)[:, None]
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    contrast = fit.reviewer_vs_others_contrast(2)
    estimate = float(contrast @ fit.coefficients)
    result = noise_aware_t_test(noise, estimate, noise.projection @ contrast, one_sided=False)
    assert result.p_value is not None and result.degrees_of_freedom is not None
    assert result.standard_error is not None
    t_statistic = estimate / result.standard_error
    expected = 2 * scipy_stats.t.sf(abs(t_statistic), result.degrees_of_freedom)
    assert result.p_value == pytest.approx(expected, rel=1e-9)
    one_sided = noise_aware_t_test(noise, estimate, noise.projection @ contrast, one_sided=True)
    assert one_sided.p_value == pytest.approx(
        scipy_stats.t.sf(t_statistic, result.degrees_of_freedom), rel=1e-9
    )


def test_no_positive_variance_means_no_test() -> None:
    rng = np.random.default_rng(6)
    table = rng.normal(6, 1, size=(4, 4))
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    negative = _with_variances(noise, np.full(4, -0.1))
    result = noise_aware_t_test(negative, 1.0, np.ones(fit.observed.size), one_sided=True)
    assert result.p_value is None and result.standard_error is None
