"""Packed row patterns equal ``np.unique(axis=0)``: same rows, same order, index and counts."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.row_patterns import row_patterns


@pytest.mark.parametrize("n_cells", [1, 7, 8, 9, 25, 63, 64, 65, 130])
def test_same_patterns_order_index_and_counts_as_numpy_unique(n_cells: int) -> None:
    rng = np.random.default_rng(n_cells)
    # few distinct rows, so ties in the counts and repeated rows are the rule
    pool = rng.random((6, n_cells)) < 0.5
    flags = pool[rng.integers(0, len(pool), size=500)]
    expected, expected_index, expected_counts = np.unique(
        flags, axis=0, return_inverse=True, return_counts=True
    )
    found = row_patterns(flags)
    assert found.patterns.dtype == bool
    assert np.array_equal(found.patterns, expected)
    assert np.array_equal(found.index, np.asarray(expected_index).reshape(-1))
    assert np.array_equal(found.counts, expected_counts)
    assert np.array_equal(found.patterns[found.index], flags)


def test_first_cell_is_the_most_significant() -> None:
    """Lexicographic order, False before True, first cell first (hand-sorted)."""
    flags = np.array([[1, 0, 0], [0, 1, 1], [0, 0, 1], [1, 0, 0]], dtype=bool)
    found = row_patterns(flags)
    assert found.patterns.astype(int).tolist() == [[0, 0, 1], [0, 1, 1], [1, 0, 0]]
    assert found.index.tolist() == [2, 1, 0, 2]
    assert found.counts.tolist() == [1, 1, 2]


def test_empty_and_bad_shapes() -> None:
    empty = row_patterns(np.zeros((0, 4), dtype=bool))
    assert empty.patterns.shape == (0, 4) and empty.index.size == 0
    with pytest.raises(ValueError, match="shape"):
        row_patterns(np.zeros(4, dtype=bool))
