"""Exact per-session projections against explicit dummy regressions (numpy lstsq).

Councils of 3, 5 and 10 members with recused reviewers (no diagonal) and missing cells,
integer scores with ties, in one block and in many blocks, with the makers kept and with
them solved block by block."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.bias_effects.favouritism import three_way_residuals
from llm_council.stats.design import session_tables
from llm_council.stats.design.nested_two_way import residual_maker
from llm_council.stats.design.session_tables import SessionTables


def _recused_council(
    seed: int, n_sessions: int, members: int, missing: float
) -> tuple[np.ndarray, np.ndarray]:
    """Integer 1-10 scores (ties, a ceiling), NaN on the diagonal and at random cells."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(6.0, 1.5, size=(n_sessions, 1, members))
    scores = np.clip(np.rint(quality + rng.normal(0, 1.2, (n_sessions, members, members))), 1, 10)
    observed = ~np.eye(members, dtype=bool)[None] & (rng.random(scores.shape) >= missing)
    return np.where(observed, scores, np.nan), observed


def _dummies(observed: np.ndarray, *, cell_effects: bool) -> np.ndarray:
    """Session x row and session x column dummies (and row x column ones) per observed cell."""
    n_sessions, n_rows, n_columns = observed.shape
    cells = np.argwhere(observed)
    width = n_sessions * (n_rows + n_columns) + (n_rows * n_columns if cell_effects else 0)
    design = np.zeros((len(cells), width))
    for i, (s, r, m) in enumerate(cells):
        design[i, s * n_rows + r] = 1.0
        design[i, n_sessions * n_rows + s * n_columns + m] = 1.0
        if cell_effects:
            design[i, n_sessions * (n_rows + n_columns) + r * n_columns + m] = 1.0
    return design


def _lstsq_residual(design: np.ndarray, values: np.ndarray) -> np.ndarray:
    return values - design @ np.linalg.lstsq(design, values, rcond=None)[0]


@pytest.mark.parametrize(
    ("members", "sessions", "missing"), [(3, 40, 0.0), (5, 40, 0.05), (10, 8, 0.15)]
)
@pytest.mark.parametrize("keep_makers", [True, False])
def test_project_equals_per_session_least_squares(
    members: int, sessions: int, missing: float, keep_makers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_tables, "_BLOCK_DOUBLES", 4000)  # blocks of 1-111 sessions
    if not keep_makers:
        monkeypatch.setattr(session_tables, "_CACHED_MAKER_DOUBLES", 0)
    scores, observed = _recused_council(1, sessions, members, missing)
    tables = SessionTables(observed)
    projected = tables.project(np.where(observed, scores, 0.0))
    expected = _lstsq_residual(_dummies(observed, cell_effects=False), scores[observed])
    np.testing.assert_allclose(projected[observed], expected, atol=1e-10)
    assert np.all(projected[~observed] == 0.0)


@pytest.mark.parametrize(("members", "sessions", "missing"), [(3, 30, 0.1), (5, 30, 0.05)])
@pytest.mark.parametrize("keep_makers", [True, False])
def test_three_way_residuals_equal_the_dummy_regression_with_cell_effects(
    members: int, sessions: int, missing: float, keep_makers: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two arrays at once (scores and a second integer column), cells missing at random."""
    monkeypatch.setattr(session_tables, "_BLOCK_DOUBLES", 300)
    if not keep_makers:
        monkeypatch.setattr(session_tables, "_CACHED_MAKER_DOUBLES", 0)
    scores, observed = _recused_council(2, sessions, members, missing)
    other, _ = _recused_council(3, sessions, members, 0.0)
    stacked = np.zeros((*observed.shape, 2))
    stacked[..., 0] = np.where(observed, scores, 0.0)
    stacked[..., 1] = np.where(observed, other, 0.0)
    three_way_residuals(stacked, SessionTables(observed))
    design = _dummies(observed, cell_effects=True)
    for k, values in enumerate((scores, other)):
        expected = _lstsq_residual(design, values[observed])
        np.testing.assert_allclose(stacked[..., k][observed], expected, atol=1e-9)


def test_leverage_and_maker_sum_come_from_each_sessions_maker() -> None:
    _, observed = _recused_council(4, 25, 4, 0.1)
    tables = SessionTables(observed)
    makers = [residual_maker(pattern) for pattern in observed]
    leverage = tables.leverage()
    for s, maker in enumerate(makers):
        np.testing.assert_allclose(leverage[s].reshape(-1), np.diag(maker), atol=1e-13)
    np.testing.assert_allclose(tables.maker_sum(), np.sum(makers, axis=0), atol=1e-12)


def test_nothing_observed_and_bad_tables() -> None:
    empty = SessionTables(np.zeros((2, 3, 3), dtype=bool))
    zeros = np.zeros((2, 3, 3))
    assert np.all(empty.project(zeros) == 0.0) and np.all(empty.leverage() == 0.0)
    tables = SessionTables(np.ones((2, 3, 3), dtype=bool))
    with pytest.raises(ValueError, match="C-contiguous float64"):
        tables.project(np.zeros((3, 3, 2)).transpose(2, 0, 1))
    with pytest.raises(ValueError, match="tables of shape"):
        tables.project(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="observed must be"):
        SessionTables(np.ones((3, 3), dtype=bool))
