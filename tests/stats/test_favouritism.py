"""Favouritism statistics against hand derivations and an independent least-squares fit."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.favouritism import (
    additive_residuals,
    cell_leverage_complement,
    favouritism_matrix,
    mutual_blocs,
    session_cell_effects,
    spillover_weights,
)
from llm_council.stats.multiplicity import holm_adjusted


def _lstsq_design(pattern: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Row + column dummies for the observed cells of ``pattern`` (the additive model)."""
    cells = [tuple(int(v) for v in c) for c in np.argwhere(pattern)]
    n_rows, n_cols = pattern.shape
    design = np.zeros((len(cells), n_rows + n_cols))
    for i, (r, m) in enumerate(cells):
        design[i, r] = 1.0
        design[i, n_rows + m] = 1.0
    return design, cells  # type: ignore[return-value]


def test_complete_table_residual_is_the_double_centred_table() -> None:
    y = np.random.default_rng(1).normal(size=(1, 4, 4))
    # hand formula: y_rm - ybar_r. - ybar_.m + ybar_..
    expected = y[0] - y[0].mean(1, keepdims=True) - y[0].mean(0, keepdims=True) + y[0].mean()
    assert np.allclose(additive_residuals(y)[0], expected, atol=1e-12)


def test_incomplete_table_residual_matches_least_squares() -> None:
    rng = np.random.default_rng(2)
    pattern = ~np.eye(5, dtype=bool)  # recused reviewers: no diagonal
    pattern[0, 3] = False
    y = np.where(pattern, rng.normal(size=(5, 5)), np.nan)
    design, cells = _lstsq_design(pattern)
    values = np.array([y[r, m] for r, m in cells])
    fitted = design @ np.linalg.lstsq(design, values, rcond=None)[0]
    ours = additive_residuals(y[None])[0]
    assert np.allclose([ours[r, m] for r, m in cells], values - fitted, atol=1e-9)
    assert np.isnan(ours[0, 0]) and np.isnan(ours[0, 3])


def test_leverage_complement_complete_table_is_one_minus_one_over_k_squared() -> None:
    for k in (3, 5, 9):
        assert np.allclose(cell_leverage_complement(np.ones((k, k), bool)), (1 - 1 / k) ** 2)


def test_single_cell_effect_equals_the_dummy_coefficient_of_ols() -> None:
    """residual / M_cc is the coefficient of a dummy for that cell (Frisch-Waugh-Lovell)."""
    rng = np.random.default_rng(3)
    pattern = ~np.eye(4, dtype=bool)
    y = np.where(pattern, rng.normal(size=(4, 4)), np.nan)
    design, cells = _lstsq_design(pattern)
    values = np.array([y[r, m] for r, m in cells])
    effects = session_cell_effects(y[None])[0]
    for target in [(0, 1), (2, 3), (3, 0)]:
        dummy = np.array([[1.0 if cell == target else 0.0] for cell in cells])
        coefficients = np.linalg.lstsq(np.hstack([design, dummy]), values, rcond=None)[0]
        assert effects[target] == pytest.approx(coefficients[-1], abs=1e-8)


def test_holm_matches_the_hand_computed_step_down() -> None:
    # sorted p: 0.01, 0.03, 0.04 (m = 3) -> 3*0.01=0.03, 2*0.03=0.06, max(0.06, 1*0.04)=0.06
    adjusted = holm_adjusted([0.01, 0.04, 0.03, np.nan])
    assert np.allclose(adjusted[:3], [0.03, 0.06, 0.06]) and np.isnan(adjusted[3])
    assert np.all(holm_adjusted([0.5, 0.9]) == [1.0, 1.0])


def test_matrix_recovers_an_injected_favour_and_flags_only_large_cells() -> None:
    rng = np.random.default_rng(4)
    n_sessions, k = 400, 5
    quality = rng.normal(6.5, 1.0, (n_sessions, 1, k))
    leniency = rng.normal(0.0, 0.5, (n_sessions, k, 1))
    scores = quality + leniency + rng.normal(0.0, 1.0, (n_sessions, k, k))
    scores[:, 1, 3] += 1.0  # reviewer 1 favours model 3 by one point
    result = favouritism_matrix(scores)
    assert result.effects[1][3].estimate == pytest.approx(1.0, abs=0.2)
    assert result.flagged[1, 3]
    # spill-over is -1/(k-1) = -0.25 on row 1 / column 3; far cells stay near 0
    assert result.effects[0][0].estimate == pytest.approx(1.0 / (k - 1) ** 2, abs=0.2)


def test_mutual_blocs_join_reviewers_that_favour_each_other() -> None:
    favoured = np.zeros((4, 4), bool)
    favoured[0, 1] = favoured[1, 0] = True  # 0 and 1 favour each other
    favoured[2, 0] = True  # one-sided: no bloc
    assert mutual_blocs(favoured, [0, 1, 2, 3]) == [[0, 1]]
    assert mutual_blocs(favoured, [0, None, 2, 3]) == []


def test_spillover_weights_complete_table_by_hand() -> None:
    # one point in cell (1, 3) of a complete 4 x 4 table moves the single-cell estimates of
    # its row and column by -1/(k-1) = -1/3, every other cell by 1/(k-1)^2 = 1/9
    weights = spillover_weights(np.ones((4, 4), bool))[1, 3]
    assert weights[1, 3] == pytest.approx(1.0)
    assert weights[1, 0] == pytest.approx(-1 / 3) and weights[2, 3] == pytest.approx(-1 / 3)
    assert weights[0, 0] == pytest.approx(1 / 9)


def test_a_mutual_pair_leaves_its_spillover_marked_not_reported_as_sources() -> None:
    rng = np.random.default_rng(6)
    n_sessions, k = 600, 4
    scores = rng.normal(6.5, 1.0, (n_sessions, 1, k)) + rng.normal(0, 1.0, (n_sessions, k, k))
    scores[:, 0, 1] += 1.0
    scores[:, 1, 0] += 1.0
    result = favouritism_matrix(scores)
    assert result.spillover is not None
    sources = result.flagged & ~result.spillover
    assert {tuple(int(v) for v in c) for c in np.argwhere(sources)} == {(0, 1), (1, 0)}
    # the self cells (0, 0) and (1, 1) get about -2/3 from the pair: flagged, but explained
    assert result.flagged[0, 0] and result.spillover[0, 0]
