"""Rank checks before estimating, and the median reference, against hand derivations."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.additive_model import design_rank, fit_additive_two_way
from llm_council.stats.sessions.session_tests import (
    median_reference_offsets,
    reviewer_offset_tests,
    step_down_reviewer_offsets,
)
from llm_council.stats.slots.position_tests import (
    joint_slot_effects,
    slot_effects_identified,
)


def _slot_indicators(slots: np.ndarray) -> np.ndarray:
    values, codes = np.unique(slots, return_inverse=True)
    return (codes[:, None] == np.arange(1, values.size)[None, :]).astype(float)


@pytest.mark.parametrize("shape", [(6, 3), (12, 7), (40, 9)])
def test_design_rank_matches_numpy_matrix_rank(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(shape[0])
    full = rng.integers(0, 2, size=shape).astype(float)
    deficient = full.copy()
    deficient[:, -1] = deficient[:, 0] + deficient[:, 1]  # one exact linear dependence
    for matrix in (full, deficient):
        assert design_rank(matrix) == np.linalg.matrix_rank(matrix)
    assert design_rank(deficient) < shape[1]


def test_shared_order_confounds_slots_with_answers() -> None:
    # Every reviewer saw answer c at slot c: the slot indicator columns are the answer
    # indicator columns, so rank [X Z] = rank X and no slot contrast is estimable.
    n = 5
    table = np.random.default_rng(1).normal(6, 1, size=(n, n))
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    shared_slots = fit.columns.copy()  # slot = answer index for every reviewer
    indicators = _slot_indicators(shared_slots)
    assert design_rank(np.hstack([fit.design, indicators])) == design_rank(fit.design)
    assert not slot_effects_identified(fit.design, indicators)
    assert joint_slot_effects(fit.design, fit.residuals, shared_slots) is None


def test_identification_is_decided_by_the_orders_not_the_council_size() -> None:
    # 2 reviewers x 3 answers = 6 cells; mean + 1 reviewer + 2 answers + 2 slots = 6
    # parameters. Different orders (0,1,2) and (2,0,1): [X Z] is square with a non-zero
    # determinant, so the slots are identified (with nothing left for noise). The same
    # order for both: slot k = answer k, the slot columns repeat the answer columns.
    table = np.array([[5.0, 7.0, 6.0], [6.0, 8.0, 4.0]])
    fit = fit_additive_two_way(table)
    assert fit is not None
    own_orders = np.array([[0, 1, 2], [2, 0, 1]])[fit.rows, fit.columns]
    indicators = _slot_indicators(own_orders)
    assert abs(np.linalg.det(np.hstack([fit.design, indicators]))) > 0.5
    assert slot_effects_identified(fit.design, indicators)
    same_order = np.array([[0, 1, 2], [0, 1, 2]])[fit.rows, fit.columns]
    assert not slot_effects_identified(fit.design, _slot_indicators(same_order))
    assert joint_slot_effects(fit.design, fit.residuals, same_order) is None


def test_latin_square_orders_identify_the_slots() -> None:
    # 5 reviewers, cyclic orders (reviewer r shows answer c at slot (c + r) mod 5): slot,
    # answer and reviewer are orthogonal, so every slot contrast is estimable.
    n = 5
    rng = np.random.default_rng(2)
    positions = (np.arange(n)[None, :] + np.arange(n)[:, None]) % n
    table = rng.normal(6, 1, size=(n, n)) + 2.0 * (positions == 0)
    np.fill_diagonal(table, np.nan)
    fit = fit_additive_two_way(table)
    assert fit is not None
    slots = positions[fit.rows, fit.columns]
    assert slot_effects_identified(fit.design, _slot_indicators(slots))
    effects = joint_slot_effects(fit.design, fit.residuals, slots)
    assert effects is not None and effects.effects[0] > 1.0


def test_median_reference_is_not_moved_by_one_harsh_reviewer() -> None:
    # Noise-free complete table, reviewer 0 is 1.5 points harsh. Complete two-way layout:
    # alpha_r - alpha_0 = rowmean_r - rowmean_0 (Scheffe 1959, 4.1), so the reviewer
    # effects are (-1.5, 0, 0, 0, 0) up to a constant; their median is 0's level:
    # offsets vs the median = (-1.5, 0, 0, 0, 0). Against the others' mean a neutral
    # reviewer's contrast is 0 - (-1.5 + 0 + 0 + 0) / 4 = +0.375, and the harsh one's
    # -1.5 - 0 = -1.5.
    quality = np.array([4.0, 5.0, 6.5, 7.0, 8.0, 9.0])
    table = np.tile(quality, (5, 1))
    table[0] -= 1.5
    table += np.random.default_rng(3).normal(0, 1e-9, size=table.shape)  # s^2 > 0
    fit = fit_additive_two_way(table)
    assert fit is not None
    np.testing.assert_allclose(median_reference_offsets(fit), [-1.5, 0.0, 0.0, 0.0, 0.0], atol=1e-6)
    mean_contrasts = [test.estimate for test in reviewer_offset_tests(fit)]
    np.testing.assert_allclose(mean_contrasts, [-1.5, 0.375, 0.375, 0.375, 0.375], atol=1e-6)


def test_median_reference_tolerates_two_outliers_in_five() -> None:
    quality = np.linspace(3, 9, 7)
    table = np.tile(quality, (5, 1))
    table[0] -= 2.0
    table[4] += 3.0
    table += np.random.default_rng(4).normal(0, 1e-9, size=table.shape)
    fit = fit_additive_two_way(table)
    assert fit is not None
    np.testing.assert_allclose(median_reference_offsets(fit), [-2.0, 0.0, 0.0, 0.0, 3.0], atol=1e-6)


def test_step_down_gives_no_p_values_below_the_minimum_df() -> None:
    # 3 reviewers x 3 answers, self-reviews out: 6 cells - 5 parameters = 1 residual df
    table = np.array([[np.nan, 5.0, 7.0], [4.0, np.nan, 9.0], [8.0, 3.0, np.nan]])
    fit = fit_additive_two_way(table)
    assert fit is not None and fit.residual_df == 1
    gated = step_down_reviewer_offsets(
        table, significance_level=0.05, effect_floor=0.0, minimum_residual_df=2
    )
    assert [v.p_value_adjusted for v in gated] == [None, None, None]
    assert not any(v.flagged for v in gated)
    ungated = step_down_reviewer_offsets(table, significance_level=0.05, effect_floor=0.0)
    assert all(v.p_value_adjusted is not None for v in ungated)
    # the estimates are the same with or without the gate
    np.testing.assert_allclose([v.estimate for v in gated], [v.estimate for v in ungated])


def test_joint_slot_effects_identify_exactly_where_the_svd_rank_test_does() -> None:
    # joint_slot_effects decides identifiability from the eigenvalues of Z'MZ; the SVD
    # rank test of [X Z] is the definition. Random councils of 3-12 members, per-reviewer
    # or shared orders, some cells missing: the two must agree on every design.
    rng = np.random.default_rng(12)
    checked = identified_count = 0
    large_outcomes: set[bool] = set()  # what 10+ member councils gave
    for _ in range(300):
        members = int(rng.integers(3, 13))
        shared_order = rng.permutation(members) if rng.random() < 0.25 else None
        table = np.full((members, members), np.nan)
        slots = np.full((members, members), -1)
        for reviewer in range(members):
            order = shared_order if shared_order is not None else rng.permutation(members)
            for answer in range(members):
                if answer != reviewer and rng.random() > 0.15:
                    table[reviewer, answer] = rng.normal(6, 1)
                    slots[reviewer, answer] = order[answer]
        fit = fit_additive_two_way(table)
        if fit is None:
            continue
        cell_slots = slots[fit.rows, fit.columns]
        if np.unique(cell_slots).size < 2:
            continue
        identified = slot_effects_identified(fit.design, _slot_indicators(cell_slots))
        effects = joint_slot_effects(fit.design, fit.residuals, cell_slots)
        assert (effects is not None) == identified
        if members >= 10:
            large_outcomes.add(identified)
        checked += 1
        identified_count += identified
    # both outcomes exercised, 10+ members included
    assert min(identified_count, checked - identified_count) > 50, (identified_count, checked)
    assert large_outcomes == {True, False}
