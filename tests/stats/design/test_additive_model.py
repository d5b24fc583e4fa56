"""The two-way additive fit against hand formulas for complete tables and lstsq."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.additive_model import fit_additive_two_way


def test_complete_table_matches_row_and_column_means() -> None:
    # For a complete R x C table the least-squares additive fit is the classic two-way
    # ANOVA decomposition (Scheffe 1959, 4.1): alpha_r - alpha_0 = rowmean_r - rowmean_0,
    # beta_c - beta_0 = colmean_c - colmean_0, residual = y - rowmean - colmean + grand,
    # with (R-1)(C-1) residual degrees of freedom.
    rng = np.random.default_rng(3)
    table = rng.normal(6, 1.5, size=(4, 6))
    fit = fit_additive_two_way(table)
    assert fit is not None
    row_means, column_means, grand = table.mean(axis=1), table.mean(axis=0), table.mean()
    assert fit.residual_df == 3 * 5
    reviewer_effects = fit.coefficients[1:4]
    np.testing.assert_allclose(reviewer_effects, row_means[1:] - row_means[0], atol=1e-10)
    candidate_effects = fit.coefficients[4:]
    np.testing.assert_allclose(candidate_effects, column_means[1:] - column_means[0], atol=1e-10)
    expected_residuals = table - row_means[:, None] - column_means[None, :] + grand
    np.testing.assert_allclose(fit.residuals, expected_residuals[fit.rows, fit.columns], atol=1e-10)
    assert fit.residual_variance == pytest.approx((expected_residuals**2).sum() / 15)


def test_incomplete_table_matches_lstsq() -> None:
    # A council table: the diagonal (self-reviews) is missing.
    rng = np.random.default_rng(4)
    table = rng.normal(6, 1, size=(5, 5))
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    assert fit.residual_df == 20 - 9
    rows, columns = np.nonzero(~np.isnan(table))
    design = np.zeros((rows.size, 9))
    design[:, 0] = 1
    for i, (r, c) in enumerate(zip(rows, columns, strict=True)):
        if r:
            design[i, r] = 1
        if c:
            design[i, 4 + c] = 1
    coefficients, rss, rank, _ = np.linalg.lstsq(design, table[rows, columns], rcond=None)
    assert rank == 9
    np.testing.assert_allclose(fit.coefficients, coefficients, atol=1e-10)
    assert fit.residual_variance == pytest.approx(float(rss[0]) / 11)


def test_disconnected_table_is_not_estimable() -> None:
    # two members reviewing only each other: reviewer and answer effects are confounded
    table = np.array([[np.nan, 5.0], [6.0, np.nan]])
    assert fit_additive_two_way(table) is None


def test_no_residual_degrees_of_freedom_is_not_estimable() -> None:
    assert fit_additive_two_way(np.array([[1.0, 2.0], [3.0, np.nan]])) is None
