"""Favouritism statistics against hand derivations and an independent least-squares fit."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.bias_effects.favouritism import (
    additive_residuals,
    cell_leverage_complement,
    favouritism_matrix,
    length_controlled_cell_effects,
    mutual_blocs,
    reviewer_length_slopes,
    session_cell_effects,
    spillover_weights,
)
from llm_council.stats.inference.multiplicity import holm_adjusted


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


def _verbose_council(
    rng: np.random.Generator, n_sessions: int, k: int, length_taste: float
) -> tuple[np.ndarray, np.ndarray]:
    """Reviewer 0 likes long answers (``length_taste`` points per ln word); model 0 writes long.

    Reviewer 0 is also model 0's author, as in the default simulated council's ``verbose``.
    """
    log_words = np.log(200.0) + rng.normal(0.0, 0.3, (n_sessions, 1, k))
    log_words[:, :, 0] += np.log(320.0 / 200.0)
    log_words = np.broadcast_to(log_words, (n_sessions, k, k)).copy()
    quality = rng.normal(6.5, 1.0, (n_sessions, 1, k))
    scores = quality + rng.normal(0.0, 0.8, (n_sessions, k, k))
    scores[:, 0, :] += length_taste * (log_words[:, 0, :] - np.log(200.0))
    return scores, log_words


def test_length_slopes_match_an_independent_dummy_regression() -> None:
    """Slopes equal OLS on explicit session x reviewer, session x model and cell dummies."""
    rng = np.random.default_rng(8)
    n_sessions, k = 12, 3
    scores, log_words = _verbose_council(rng, n_sessions, k, 1.5)
    scores[3, 1, 2] = np.nan  # a missing cell
    fit = reviewer_length_slopes(scores, log_words)
    rows, targets = [], []
    for s, r, m in np.argwhere(np.isfinite(scores)):
        row = np.zeros(n_sessions * k * 2 + k * k + k)
        row[s * k + r] = 1.0
        row[n_sessions * k + s * k + m] = 1.0
        row[2 * n_sessions * k + r * k + m] = 1.0
        row[2 * n_sessions * k + k * k + r] = log_words[s, r, m]
        rows.append(row)
        targets.append(scores[s, r, m])
    coefficients = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)[0]
    reference = coefficients[-k:]
    # a common slope is absorbed by the session x model dummies: compare differences
    assert np.allclose(fit.slopes - fit.slopes[0], reference - reference[0], atol=1e-7)
    assert np.allclose(fit.influence.sum(axis=0), 0.0, atol=1e-6)


def test_length_taste_is_not_read_as_self_preference() -> None:
    rng = np.random.default_rng(9)
    scores, log_words = _verbose_council(rng, 300, 5, 1.5)
    plain = favouritism_matrix(scores)
    controlled = favouritism_matrix(scores, log_words=log_words)
    # without the control, row 0 double-centred leaves 1.5 (L_0 - mean L)(1 - 1/k) in the self
    # cell, and E[L_0 - mean L] = ln(320/200)(1 - 1/k); over M_cc = (1 - 1/k)^2 that is
    # 1.5 ln(1.6) = 0.705 points
    assert plain.effects[0][0].estimate == pytest.approx(0.705, abs=0.15) and plain.flagged[0, 0]
    assert controlled.length_controlled and not controlled.flagged.any()
    low, high = controlled.effects[0][0].ci_low, controlled.effects[0][0].ci_high
    assert low < 0.0 < high


def test_a_favour_toward_the_long_model_survives_the_length_control() -> None:
    # reviewer 2 (no length taste) favouring the long model 0, or reviewer 0 preferring its
    # own long answer on top of its length taste: one planted cell at a time (two in one
    # column would spill -1/(k-1) onto each other)
    for seed, cell in ((10, (2, 0)), (12, (0, 0))):
        scores, log_words = _verbose_council(np.random.default_rng(seed), 300, 5, 1.5)
        scores[:, cell[0], cell[1]] += 1.0
        controlled = favouritism_matrix(scores, log_words=log_words)
        estimate = controlled.effects[cell[0]][cell[1]]
        assert controlled.flagged[cell]
        assert estimate.ci_low < 1.0 < estimate.ci_high


def test_length_controlled_linearisation_keeps_each_cell_mean() -> None:
    rng = np.random.default_rng(11)
    scores, log_words = _verbose_council(rng, 40, 4, 1.0)
    scores[::3, 1, 2] = np.nan
    effects, linearised = length_controlled_cell_effects(scores, log_words)
    assert np.allclose(np.nanmean(effects, axis=0), np.nanmean(linearised, axis=0))
    assert np.array_equal(np.isnan(effects), np.isnan(linearised))


def test_length_control_rejects_missing_lengths_and_bad_shapes() -> None:
    scores = np.ones((2, 2, 2))
    with pytest.raises(ValueError, match="log_words shape"):
        reviewer_length_slopes(scores, np.ones((2, 2)))
    lengths = np.ones((2, 2, 2))
    lengths[0, 1, 1] = np.nan
    with pytest.raises(ValueError, match="finite wherever a score"):
        reviewer_length_slopes(scores, lengths)
