"""Exact nested two-way residuals against least squares, the hand formula and the iteration."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.bias_effects.style_mimicry import _demean_two_way
from llm_council.stats.design import nested_two_way
from llm_council.stats.design.nested_two_way import (
    nested_two_way_residuals,
    residual_maker,
    residual_makers,
)


def _ragged_panel(seed: int, n_sessions: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sessions of 3-6 rows x 2-5 columns, ~20% of cells missing, ids shuffled and sparse."""
    rng = np.random.default_rng(seed)
    sessions, rows, columns = [], [], []
    for session in range(n_sessions):
        n_rows, n_columns = int(rng.integers(3, 7)), int(rng.integers(2, 6))
        for r in range(n_rows):
            for c in range(n_columns):
                if rng.random() < 0.8:
                    sessions.append(session)
                    rows.append(r)
                    columns.append(1000 * session + 7 * c)  # sparse ids, increasing in c
    order = rng.permutation(len(sessions))
    session = np.asarray(sessions)[order]
    row = np.asarray(rows)[order]
    _, column = np.unique(np.asarray(columns)[order], return_inverse=True)
    return session, row, column


def _least_squares_residuals(
    values: np.ndarray, session: np.ndarray, row: np.ndarray, column: np.ndarray
) -> np.ndarray:
    """Dummy regression on one indicator per column and one per (session, row)."""
    _, review = np.unique(session * 100 + row, return_inverse=True)
    n = session.size
    design = np.zeros((n, column.max() + 1 + review.max() + 1))
    design[np.arange(n), column] = 1.0
    design[np.arange(n), column.max() + 1 + review] = 1.0
    return values - design @ np.linalg.lstsq(design, values, rcond=None)[0]


def test_equals_least_squares_on_ragged_incomplete_sessions() -> None:
    session, row, column = _ragged_panel(seed=1)
    values = np.random.default_rng(2).normal(size=(session.size, 3))
    found = nested_two_way_residuals(values, session, row, column)
    assert found is not None
    expected = _least_squares_residuals(values, session, row, column)
    np.testing.assert_allclose(found, expected, atol=1e-12)


def test_a_cell_no_session_observed_is_left_out_exactly() -> None:
    # row 0 never meets its session's first column (like a reviewer's own answer): the
    # tables and makers drop that cell, and the residuals are still least squares'
    session, row, column = _ragged_panel(seed=5)
    first_column = np.zeros(column.max() + 1, dtype=bool)
    first_column[[np.min(column[session == s]) for s in np.unique(session)]] = True
    kept = ~((row == 0) & first_column[column])
    session, row, column = session[kept], row[kept], np.unique(column[kept], return_inverse=True)[1]
    values = np.random.default_rng(6).normal(size=(session.size, 2))
    found = nested_two_way_residuals(values, session, row, column)
    assert found is not None
    expected = _least_squares_residuals(values, session, row, column)
    np.testing.assert_allclose(found, expected, atol=1e-12)


def test_agrees_with_the_alternating_projections_it_replaces() -> None:
    session, row, column = _ragged_panel(seed=3)
    values = np.random.default_rng(4).normal(size=(session.size, 2))
    _, review = np.unique(session * 100 + row, return_inverse=True)
    iterated = _demean_two_way(values, column, column.max() + 1, review, review.max() + 1)
    found = nested_two_way_residuals(values, session, row, column)
    assert found is not None
    # the iteration stops at a change of 1e-11 x scale; its limit is this projection
    np.testing.assert_allclose(found, iterated, atol=1e-9)


def test_complete_table_maker_is_the_double_centring() -> None:
    # hand derivation: on a complete k x n table M = (I_k - J_k / k) kron (I_n - J_n / n)
    k, n = 3, 4
    expected = np.kron(np.eye(k) - 1 / k, np.eye(n) - 1 / n)
    np.testing.assert_allclose(residual_maker(np.ones((k, n), dtype=bool)), expected, atol=1e-13)


def test_unobserved_cells_have_zero_rows_and_columns() -> None:
    pattern = ~np.eye(4, dtype=bool)
    maker = residual_maker(pattern)
    diagonal = np.flatnonzero(np.eye(4, dtype=bool).reshape(-1))
    assert np.all(maker[diagonal] == 0) and np.all(maker[:, diagonal] == 0)
    # a projector: symmetric and idempotent
    np.testing.assert_allclose(maker, maker.T, atol=1e-13)
    np.testing.assert_allclose(maker @ maker, maker, atol=1e-12)


def test_not_a_set_of_session_tables_returns_none() -> None:
    session = np.array([0, 0, 0, 1, 1])
    row = np.array([0, 1, 1, 0, 1])
    values = np.ones((5, 1))
    repeated_cell = np.array([0, 0, 0, 1, 1])  # rows 1 and 2: the same (session, row, column)
    assert nested_two_way_residuals(values, session, row, repeated_cell) is None
    spanning = np.array([0, 1, 0, 0, 1])  # column 0 in sessions 0 and 1
    assert nested_two_way_residuals(values, session, row, spanning) is None


def test_empty_input_gives_an_empty_result() -> None:
    empty = np.zeros(0, dtype=np.int64)
    found = nested_two_way_residuals(np.zeros((0, 2)), empty, empty, empty)
    assert found is not None and found.shape == (0, 2)


def test_overwrite_writes_into_values_and_leaves_them_alone_when_refused() -> None:
    session, row, column = _ragged_panel(seed=5)
    values = np.random.default_rng(6).normal(size=(session.size, 2))
    expected = nested_two_way_residuals(values, session, row, column)
    buffer = values.copy()
    found = nested_two_way_residuals(buffer, session, row, column, overwrite=True)
    assert found is buffer and expected is not None
    np.testing.assert_array_equal(found, expected)
    twice = np.concatenate([values, values[:1]])
    untouched = twice.copy()
    repeated = (
        np.append(session, session[0]),
        np.append(row, row[0]),
        np.append(column, column[0]),
    )
    assert nested_two_way_residuals(untouched, *repeated, overwrite=True) is None
    np.testing.assert_array_equal(untouched, twice)


def test_negative_codes_are_refused_naming_the_field() -> None:
    values = np.ones((2, 1))
    codes = np.array([0, 0])
    with pytest.raises(ValueError, match="row codes must be non-negative, got -1"):
        nested_two_way_residuals(values, codes, np.array([0, -1]), np.array([0, 1]))


def test_every_session_its_own_pattern_is_still_least_squares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Messy sessions (nearly every one its own pattern), in blocks of 22 sessions: each
    session's maker is gathered and applied in one batched product."""
    monkeypatch.setattr(nested_two_way, "_BLOCK_DOUBLES", 20_000)
    session, row, column = _ragged_panel(seed=9, n_sessions=150)
    values = np.random.default_rng(10).normal(size=(session.size, 2))
    found = nested_two_way_residuals(values, session, row, column)
    assert found is not None
    np.testing.assert_allclose(
        found, _least_squares_residuals(values, session, row, column), atol=1e-12
    )


def _recused_panel(
    seed: int, n_sessions: int, members: int, missing: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reviewers skip their own answer; each other cell missing with probability ``missing``."""
    rng = np.random.default_rng(seed)
    cells = [
        (s, r, s * members + a)
        for s in range(n_sessions)
        for r in range(members)
        for a in range(members)
        if r != a and rng.random() >= missing
    ]
    session, row, column = (np.array(part) for part in zip(*cells, strict=True))
    return session, row, np.unique(column, return_inverse=True)[1]


@pytest.mark.parametrize(
    ("members", "sessions", "missing", "block_doubles"),
    [
        (3, 120, 0.0, 2_000_000),
        (5, 120, 0.03, 2_000_000),
        (5, 120, 0.03, 2_000),
        (10, 30, 0.1, 50_000),
    ],
)
def test_recused_councils_with_missing_scores_equal_least_squares(
    members: int, sessions: int, missing: float, block_doubles: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pattern (3 members, complete), a few per block (small blocks: the looped
    products), and many per block (the batched products), at 3, 5 and 10 members."""
    monkeypatch.setattr(nested_two_way, "_BLOCK_DOUBLES", block_doubles)
    session, row, column = _recused_panel(1, sessions, members, missing)
    values = np.random.default_rng(2).normal(size=(session.size, 3))
    found = nested_two_way_residuals(values, session, row, column)
    assert found is not None
    np.testing.assert_allclose(
        found, _least_squares_residuals(values, session, row, column), atol=1e-11
    )


def test_batched_makers_equal_one_at_a_time_projectors() -> None:
    rng = np.random.default_rng(4)
    patterns = rng.random((30, 12)) < 0.7
    cells = np.arange(12)
    makers = residual_makers(patterns, cells // 4, cells % 4)
    for pattern, maker in zip(patterns, makers, strict=True):
        np.testing.assert_allclose(maker, residual_maker(pattern.reshape(3, 4)), atol=1e-13)
        np.testing.assert_allclose(maker @ maker, maker, atol=1e-12)
        assert np.all(maker[~pattern] == 0) and np.all(maker[:, ~pattern] == 0)
