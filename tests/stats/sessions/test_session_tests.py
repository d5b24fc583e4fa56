"""Per-session reviewer tests against hand formulas, scipy and exact enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.design.additive_model import fit_additive_two_way
from llm_council.stats.sessions.session_tests import (
    pooled_self_preference_test,
    reviewer_offset_tests,
    self_preference_tests,
    step_down_reviewer_offsets,
)
from llm_council.stats.slots.position_tests import (
    joint_slot_effects,
    position_randomization_test,
)


def test_reviewer_offsets_on_complete_table_match_hand_formula() -> None:
    # Complete R x C table: L_r = rowmean_r - mean of the other row means, and
    # Var(L_r) = sigma^2/C + sigma^2/(C) = sigma^2 R / (C ); t has (R-1)(C-1)
    # df; the reported p is Bonferroni-adjusted by R.
    rng = np.random.default_rng(11)
    n_reviewers, n_candidates = 4, 6
    table = rng.normal(6, 1, size=(n_reviewers, n_candidates))
    table[2] -= 1.5
    fit = fit_additive_two_way(table)
    assert fit is not None
    row_means = table.mean(axis=1)
    residuals = table - row_means[:, None] - table.mean(axis=0) + table.mean()
    df = (n_reviewers - 1) * (n_candidates - 1)
    s2 = (residuals**2).sum() / df
    for reviewer, test in enumerate(reviewer_offset_tests(fit)):
        others = np.delete(row_means, reviewer).mean()
        estimate = row_means[reviewer] - others
        se = np.sqrt(s2 * n_reviewers / (n_candidates * (n_reviewers - 1)))
        p = 2 * scipy_stats.t.sf(abs(estimate / se), df)
        assert test.estimate == pytest.approx(estimate, abs=1e-10)
        assert test.standard_error == pytest.approx(se)
        assert test.p_value == pytest.approx(p)
        assert test.p_value_adjusted == pytest.approx(min(1.0, n_reviewers * p))


def test_self_preference_equals_mean_shift_outlier_t() -> None:
    # Independent reference: refit with the self cell included plus its own indicator
    # column (the mean-shift outlier model, Cook & Weisberg 1982, 2.2.2). The indicator's
    # coefficient is y0 - y0_hat and its t statistic is the prediction-error t.
    rng = np.random.default_rng(12)
    table = rng.normal(6, 1, size=(5, 5))
    self_scores = np.diag(table).copy() + 2.0
    others = table.copy()
    np.fill_diagonal(others, np.nan)
    fit = fit_additive_two_way(others)
    assert fit is not None
    reviewer = 3
    (test,) = self_preference_tests(fit, [(reviewer, reviewer, float(self_scores[reviewer]))])
    augmented = others.copy()
    augmented[reviewer, reviewer] = self_scores[reviewer]
    rows, columns = np.nonzero(~np.isnan(augmented))
    design = np.zeros((rows.size, 10))
    design[:, 0] = 1
    for i, (r, c) in enumerate(zip(rows, columns, strict=True)):
        if r:
            design[i, r] = 1
        if c:
            design[i, 4 + c] = 1
        design[i, 9] = 1 if (r, c) == (reviewer, reviewer) else 0
    y = augmented[rows, columns]
    coefficients, rss, _, _ = np.linalg.lstsq(design, y, rcond=None)
    df = rows.size - 10
    covariance = float(rss[0]) / df * np.linalg.inv(design.T @ design)
    t_reference = coefficients[9] / np.sqrt(covariance[9, 9])
    assert df == fit.residual_df
    assert test.estimate == pytest.approx(coefficients[9])
    assert test.t_statistic == pytest.approx(t_reference)
    assert test.p_value == pytest.approx(scipy_stats.t.sf(t_reference, df))
    pooled = pooled_self_preference_test(fit, [(reviewer, reviewer, float(self_scores[reviewer]))])
    assert pooled is not None
    assert pooled.t_statistic == pytest.approx(t_reference)


def test_position_randomization_matches_exact_enumeration() -> None:
    # 2 reviewers x 3 scored cells: all 3! x 3! = 36 re-orderings can be enumerated, so
    # the exact randomization p-value is known; the Monte Carlo one must be within
    # 3 binomial standard errors of it.
    residuals = np.array([1.2, -0.3, -0.9, 0.8, 0.1, -0.9])
    slots = np.array([0, 1, 2, 0, 2, 1])
    reviewers = np.array([0, 0, 0, 1, 1, 1])

    def statistic(order: np.ndarray) -> float:
        means = [residuals[order == k].mean() for k in range(3)]
        counts = [np.sum(order == k) for k in range(3)]
        grand = residuals.mean()
        return sum(n * (m - grand) ** 2 for n, m in zip(counts, means, strict=True)) / 6

    observed = statistic(slots)
    null = [
        statistic(np.concatenate([np.array(first), np.array(second)]))
        for first in itertools.permutations(slots[:3])
        for second in itertools.permutations(slots[3:])
    ]
    exact_p = np.mean(np.array(null) >= observed - 1e-12)
    result = position_randomization_test(residuals, slots, reviewers, n_permutations=20000)
    assert result is not None
    assert result.between_position_variance == pytest.approx(observed)
    assert abs(result.p_value - exact_p) < 3 * np.sqrt(exact_p * (1 - exact_p) / 20000) + 1e-4
    assert result.slot_means[0] == pytest.approx((1.2 + 0.8) / 2)


def test_position_test_finds_a_strong_slot_effect_and_is_calibrated() -> None:
    rng = np.random.default_rng(5)
    reviewers = np.repeat(np.arange(8), 5)
    slots = np.concatenate([rng.permutation(5) for _ in range(8)])
    strong = rng.normal(size=40) + 3.0 * (slots == 0)
    result = position_randomization_test(strong, slots, reviewers, n_permutations=499)
    assert result is not None
    assert result.p_value < 0.01
    # null: residuals unrelated to slots -> P(p < 0.05) stays near 5% (300 draws, +- 4%)
    rejections = 0
    for _ in range(300):
        null_result = position_randomization_test(
            rng.normal(size=40), slots, reviewers, n_permutations=199, seed=int(rng.integers(1e9))
        )
        assert null_result is not None
        rejections += null_result.p_value < 0.05
    assert rejections / 300 <= 0.09


def test_step_down_flags_only_the_harsh_reviewer() -> None:
    rng = np.random.default_rng(21)
    quality = rng.normal(6.5, 1, size=8)
    table = quality[None, :] + rng.normal(0, 0.5, size=(5, 8))
    table[1] -= 2.5
    np.fill_diagonal(table, np.nan)
    verdicts = step_down_reviewer_offsets(table, significance_level=0.05, effect_floor=1.0)
    flagged = [v.reviewer_index for v in verdicts if v.flagged]
    assert flagged == [1]
    assert verdicts[1].estimate < -2.0
    # without the step-down, the others sit +2.5/4 above a mean that includes the harsh one
    assert all(v.estimate > -1.0 for v in verdicts if v.reviewer_index != 1)


def test_step_down_never_fires_below_the_effect_floor() -> None:
    rng = np.random.default_rng(22)
    table = rng.normal(6.5, 0.05, size=(5, 8))
    table[0] -= 0.5  # highly significant, but only half a point
    verdicts = step_down_reviewer_offsets(table, significance_level=0.05, effect_floor=1.0)
    assert not any(v.flagged for v in verdicts)
    flagged = step_down_reviewer_offsets(table, significance_level=0.05, effect_floor=0.25)
    assert [v.reviewer_index for v in flagged if v.flagged] == [0]


def test_step_down_can_fire_with_three_reviewers() -> None:
    # 3 reviewers x 6 answers: 3 x 6 - 3 (self) = 15 cells, 15 - 8 = 7 residual df
    rng = np.random.default_rng(23)
    quality = rng.normal(6.5, 1, size=6)
    table = quality[None, :] + rng.normal(0, 0.3, size=(3, 6))
    table[2] -= 3.0
    table[[0, 1, 2], [0, 1, 2]] = np.nan
    verdicts = step_down_reviewer_offsets(table, significance_level=0.05, effect_floor=1.0)
    assert [v.reviewer_index for v in verdicts if v.flagged] == [2]


def test_joint_slot_effects_match_a_full_least_squares_fit() -> None:
    # Reference: fit score = mean + reviewer + answer + slot directly with lstsq; the
    # slot coefficients (slot 0 as base), centred with count weights, must equal the
    # Frisch-Waugh-Lovell estimates.

    rng = np.random.default_rng(31)
    n = 5
    positions = np.array([rng.permutation(n) for _ in range(n)])
    table = rng.normal(6, 1, size=(n, n)) + 1.5 * (positions == 0)
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    slots = positions[fit.rows, fit.columns]
    effects = joint_slot_effects(fit.design, fit.residuals, slots)
    assert effects is not None
    slot_values = np.unique(slots)
    dummies = (slots[:, None] == slot_values[None, 1:]).astype(float)
    full = np.hstack([fit.design, dummies])
    coefficients, *_ = np.linalg.lstsq(full, fit.observed, rcond=None)
    gamma = np.concatenate([[0.0], coefficients[fit.design.shape[1] :]])
    counts = np.array([np.sum(slots == v) for v in slot_values])
    gamma -= counts @ gamma / counts.sum()
    for k, slot in enumerate(slot_values):
        assert effects.effects[int(slot)] == pytest.approx(gamma[k], abs=1e-9)
    assert effects.weighted_variance == pytest.approx(counts @ gamma**2 / counts.sum())


def test_pooled_self_preference_matches_explicit_linear_map() -> None:
    # d = y_S - X_S b_hat = A z with z = (y, y_S) and A = [-X_S (X'X)^-1 X', I];
    # Var(mean d) = s^2 1'AA'1 / m^2, built here from A itself.
    rng = np.random.default_rng(32)
    table = rng.normal(6, 1, size=(5, 5))
    own = np.diag(table).copy() + 1.0
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    cells = [(i, i, float(own[i])) for i in range(5)]
    pooled = pooled_self_preference_test(fit, cells)
    assert pooled is not None
    x_self = np.array([fit.cell_vector(i, i) for i in range(5)])
    projection = x_self @ np.linalg.pinv(fit.design)
    linear_map = np.hstack([-projection, np.eye(5)])
    d = own - projection @ fit.observed
    variance = fit.residual_variance * np.ones(5) @ linear_map @ linear_map.T @ np.ones(5) / 25
    t_reference = d.mean() / np.sqrt(variance)
    assert pooled.estimate == pytest.approx(d.mean())
    assert pooled.t_statistic == pytest.approx(t_reference)
    assert pooled.p_value == pytest.approx(scipy_stats.t.sf(t_reference, fit.residual_df))
