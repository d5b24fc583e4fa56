"""Favouritism from one projection of each session (ADR 0078) against an independent
least-squares fit and the full-table implementation."""

from __future__ import annotations

import numpy as np
import pytest

from generators.independent_arrays import draw_score_arrays
from generators.independent_council import CouncilSpec
from llm_council.stats.bias_effects.favouritism import (
    favouritism_matrix,
    length_controlled_cell_effects,
    session_cell_effects,
)
from llm_council.stats.bias_effects.favouritism_residuals import (
    effects_from_residuals,
    matrix_from_session_effects,
    two_way_residuals,
)


def _council(
    n_members: int, n_sessions: int, seed: int, missing: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """Integer scores of the independent generator's array form (ties everywhere), holes
    at rate ``missing``, and lengths that vary between sessions; reviewer 0 likes long
    answers (0.8 points per unit ln words)."""
    rng = np.random.default_rng(seed)
    scores, _ = draw_score_arrays(CouncilSpec(n_members=n_members), (n_sessions,), rng)
    log_words = np.log(200.0) + rng.normal(0.0, 0.4, (n_sessions, 1, n_members))
    log_words = np.broadcast_to(log_words, scores.shape).copy()
    scores = scores.astype(float)
    scores[:, 0, :] += np.round(0.8 * (log_words[:, 0, :] - np.log(200.0)))
    scores[rng.random(scores.shape) < missing] = np.nan
    return scores, log_words


def test_slopes_match_an_independent_dummy_regression() -> None:
    """The slopes equal OLS on explicit session x reviewer, session x model and cell dummies
    (numpy's lstsq on the full design: nothing of ours)."""
    scores, log_words = _council(3, 14, seed=1, missing=0.1)
    n_sessions, k, _ = scores.shape
    *_, slopes = effects_from_residuals(two_way_residuals(scores, log_words), np.isfinite(scores))
    assert slopes is not None
    rows, targets = [], []
    for s, r, m in np.argwhere(np.isfinite(scores)):
        row = np.zeros(n_sessions * k * 2 + k * k + k)
        row[s * k + r] = 1.0
        row[n_sessions * k + s * k + m] = 1.0
        row[2 * n_sessions * k + r * k + m] = 1.0
        row[2 * n_sessions * k + k * k + r] = log_words[s, r, m]
        rows.append(row)
        targets.append(scores[s, r, m])
    reference = np.linalg.lstsq(np.array(rows), np.array(targets), rcond=None)[0][-k:]
    # a common slope is absorbed by the session x model dummies: compare differences
    assert np.allclose(slopes - slopes[0], reference - reference[0], atol=1e-8)


def test_complete_table_effect_is_the_double_centred_residual_over_its_leverage() -> None:
    # hand derivation: complete k x k table, residual y_rm - ybar_r. - ybar_.m + ybar_..,
    # leverage complement (1 - 1/k)^2
    y = np.random.default_rng(2).normal(size=(1, 4, 4))
    expected = y[0] - y[0].mean(1, keepdims=True) - y[0].mean(0, keepdims=True) + y[0].mean()
    effects, linearised, slopes = effects_from_residuals(two_way_residuals(y), np.isfinite(y))
    assert slopes is None and np.array_equal(effects, linearised)
    assert np.allclose(effects[0], expected / (1 - 1 / 4) ** 2, atol=1e-12)


@pytest.mark.parametrize(
    ("n_members", "missing"), [(3, 0.0), (3, 0.15), (5, 0.05), (9, 0.0), (9, 0.1)]
)
def test_equal_to_the_full_table_implementation(n_members: int, missing: float) -> None:
    scores, log_words = _council(n_members, 40, seed=n_members, missing=missing)
    observed = np.isfinite(scores)
    effects, linearised, _ = effects_from_residuals(two_way_residuals(scores, log_words), observed)
    reference_effects, reference_linearised = length_controlled_cell_effects(scores, log_words)
    assert np.array_equal(np.isnan(effects), np.isnan(reference_effects))
    assert np.allclose(effects, reference_effects, atol=1e-10, equal_nan=True)
    assert np.allclose(linearised, reference_linearised, atol=1e-10, equal_nan=True)
    plain, _, _ = effects_from_residuals(two_way_residuals(scores), observed)
    assert np.allclose(plain, session_cell_effects(scores), atol=1e-10, equal_nan=True)
    matrix = matrix_from_session_effects(linearised, observed, length_controlled=True)
    full = favouritism_matrix(scores, log_words=log_words)
    assert np.allclose(matrix.holm_p, full.holm_p, atol=1e-9, equal_nan=True)
    assert np.array_equal(matrix.flagged, full.flagged)
    assert np.array_equal(matrix.spillover, full.spillover)
    assert matrix.length_controlled


def test_degenerate_judges_give_the_full_implementations_numbers() -> None:
    """Reviewer 0 always gives 5, reviewer 1 the same score to every answer of a session:
    both rows are pure leniency, which the two-way fit removes exactly."""
    scores, log_words = _council(4, 30, seed=3, missing=0.1)
    scores[:, 0, :] = np.where(np.isfinite(scores[:, 0, :]), 5.0, np.nan)
    scores[:, 1, :] = np.where(np.isfinite(scores[:, 1, :]), np.arange(30)[:, None] % 10, np.nan)
    observed = np.isfinite(scores)
    _, linearised, _ = effects_from_residuals(two_way_residuals(scores, log_words), observed)
    reference = length_controlled_cell_effects(scores, log_words)[1]
    assert np.allclose(linearised, reference, atol=1e-10, equal_nan=True)
    matrix = matrix_from_session_effects(linearised, observed, length_controlled=True)
    assert np.array_equal(matrix.flagged, favouritism_matrix(scores, log_words=log_words).flagged)


def test_unobserved_cells_hold_exact_zeros() -> None:
    scores, log_words = _council(5, 30, seed=4, missing=0.08)
    residuals = two_way_residuals(scores, log_words)
    assert np.all(residuals[~np.isfinite(scores)] == 0.0)


def test_a_session_without_any_score_adds_a_session_and_nothing_else() -> None:
    scores, log_words = _council(3, 20, seed=5)
    empty = np.full((1, 3, 3), np.nan)
    with_empty = np.concatenate([scores, empty])
    lengths = np.concatenate([log_words, np.zeros((1, 3, 3))])
    effects, linearised, _ = effects_from_residuals(
        two_way_residuals(with_empty, lengths), np.isfinite(with_empty)
    )
    assert np.isnan(effects[-1]).all() and np.isnan(linearised[-1]).all()
    reference = length_controlled_cell_effects(with_empty, lengths)[1]
    assert np.allclose(linearised, reference, atol=1e-10, equal_nan=True)


def test_bad_input_is_refused_with_the_shape() -> None:
    with pytest.raises(ValueError, match="sessions, reviewers, models"):
        two_way_residuals(np.ones((2, 2)))
    with pytest.raises(ValueError, match="log_words shape"):
        two_way_residuals(np.ones((2, 2, 2)), np.ones((2, 2)))
    lengths = np.ones((2, 2, 2))
    lengths[0, 1, 1] = np.inf
    with pytest.raises(ValueError, match="finite wherever a score"):
        two_way_residuals(np.ones((2, 2, 2)), lengths)
    with pytest.raises(ValueError, match="columns"):
        effects_from_residuals(np.zeros((2, 2, 2, 2)), np.ones((2, 2, 2), bool))
    with pytest.raises(ValueError, match="observed shape"):
        effects_from_residuals(np.zeros((2, 2, 2, 3)), np.ones((2, 2), bool))
