"""Per-reviewer residual variances and the moderated step-down, against hand derivations."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.additive_model import fit_additive_two_way
from llm_council.stats.sessions.moderated_session_tests import (
    moderate,
    moderated_offset_tests,
    moderated_self_preference_tests,
    reviewer_residual_variances,
    step_down_moderated_offsets,
)
from llm_council.stats.sessions.session_tests import median_reference_offsets


def test_residual_variances_split_the_pooled_variance() -> None:
    rng = np.random.default_rng(3)
    table = rng.normal(5, 1, (5, 5))
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    variances, dfs = reviewer_residual_variances(fit)
    # sum d_r = n - p, sum d_r s_r^2 = RSS
    assert dfs.sum() == pytest.approx(fit.residual_df)
    assert (variances * dfs).sum() == pytest.approx(float(fit.residuals @ fit.residuals))


def test_offset_test_with_an_exact_prior_is_a_z_test_by_hand() -> None:
    # complete 3 x 3, no self-reviews: L_0 = a_0 - (a_1 + a_2)/2 is the row-mean contrast
    # ybar_0. - (ybar_1. + ybar_2.)/2 with variance sigma^2 (1/3 + 1/12 + 1/12) = sigma^2/2
    table = np.array([[1.0, 2.0, 3.0], [9.0, 10.0, 10.0], [4.0, 6.0, 8.0]])
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = moderate(fit, np.full(3, 2.0), np.full(3, np.inf))
    tests = moderated_offset_tests(fit, noise)
    assert tests.estimates[0] == pytest.approx(2.0 - (29 / 3 + 6.0) / 2)
    assert tests.standard_errors[0] == pytest.approx(1.0)  # sqrt(2 / 2)
    assert np.isinf(tests.dfs[0])


def test_step_down_names_both_extremes_of_the_reference_example() -> None:
    table = np.array([[1.0, 2.0, 3.0], [9.0, 10.0, 10.0], [4.0, 6.0, 8.0]])
    fit = fit_additive_two_way(table)
    assert fit is not None
    verdicts = step_down_moderated_offsets(
        table,
        np.full(3, 1.5**2),
        np.full(3, 10.0),
        significance_level=0.05,
        effect_floor=1.0,
        robust_offsets=median_reference_offsets(fit),
        first_fit=fit,
    )
    flagged = {v.reviewer_index: v.estimate for v in verdicts if v.flagged}
    assert set(flagged) == {0, 1} and flagged[0] < 0 < flagged[1]


def test_step_down_keeps_its_level_under_the_null() -> None:
    # 400 honest 5-member sessions, noise SD 0.5-1.5, true prior: at most 5% + 2 SE flagged
    rng = np.random.default_rng(11)
    sds = np.linspace(0.5, 1.5, 5)
    fired = 0
    for _ in range(400):
        table = rng.normal(0, 1.5, 5)[None, :] + rng.normal(0, 1, (5, 5)) * sds[:, None]
        np.fill_diagonal(table, np.nan)
        fit = fit_additive_two_way(table)
        assert fit is not None
        verdicts = step_down_moderated_offsets(
            table,
            sds**2,
            np.full(5, 30.0),
            significance_level=0.05,
            effect_floor=1.0,
            robust_offsets=median_reference_offsets(fit),
            first_fit=fit,
        )
        fired += any(v.flagged for v in verdicts)
    assert fired / 400 <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 400)


def test_pooled_self_preference_is_the_inverse_variance_mean_by_hand() -> None:
    # 4 reviewers x 4 candidates, self cells (diagonal) left out of the fit, known noise
    # with unequal variances (infinite prior df: the moderated variances are exact).
    # Independent derivation: the self errors e = y_self - X_self b_hat have covariance
    # Cov(e) = diag(sigma^2_owner) + C diag(sigma^2_g(i)) C^T, C = X_self (X^T X)^-1 X^T;
    # pooling with pi = V^-1 / sum V^-1 (V = diag Cov(e)) gives Var = pi^T Cov(e) pi.
    rng = np.random.default_rng(11)
    table = rng.normal(6.0, 1.0, (4, 4))
    self_scores = np.diag(table).copy() + np.array([1.5, 0.0, 2.0, -0.5])
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    sigma2 = np.array([0.25, 1.0, 2.25, 0.5])
    noise = moderate(fit, sigma2, np.full(4, np.inf))
    cells = [(r, r, float(self_scores[r])) for r in range(4)]
    tests = moderated_self_preference_tests(fit, cells, noise)

    x_self = np.vstack([fit.cell_vector(r, r) for r in range(4)])
    hat = x_self @ np.linalg.inv(fit.design.T @ fit.design) @ fit.design.T
    covariance = np.diag(sigma2) + hat @ np.diag(sigma2[fit.rows]) @ hat.T
    errors = self_scores - x_self @ fit.coefficients
    precision = 1.0 / np.diag(covariance)
    pooling = precision / precision.sum()
    np.testing.assert_allclose(tests.estimates[:4], errors)
    np.testing.assert_allclose(tests.standard_errors[:4], np.sqrt(np.diag(covariance)))
    assert tests.estimates[4] == pytest.approx(pooling @ errors)
    assert tests.standard_errors[4] == pytest.approx(np.sqrt(pooling @ covariance @ pooling))
    # the weights really differ from 1/m: the precise judge counts most
    assert pooling[0] > 0.3 > pooling[2]
    assert tests.estimates[4] != pytest.approx(errors.mean())


def test_pooled_self_preference_falls_back_to_the_plain_mean_without_variances() -> None:
    rng = np.random.default_rng(12)
    table = rng.normal(6.0, 1.0, (4, 4))
    self_scores = np.diag(table).copy()
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    noise = moderate(fit, np.array([1.0, np.nan, 1.0, 1.0]), np.full(4, np.inf))
    cells = [(r, r, float(self_scores[r])) for r in range(4)]
    tests = moderated_self_preference_tests(fit, cells, noise)
    assert tests.estimates[4] == pytest.approx(tests.estimates[:4].mean())
