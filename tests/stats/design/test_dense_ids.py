"""dense_codes (stats/design/dense_ids.py) equals np.unique(return_inverse=True), on every path."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.dense_ids import dense_codes


@pytest.mark.parametrize(
    "ids",
    [
        np.array([5, 3, 5, 0, 9, 3], dtype=np.int64),  # small non-negative: presence table
        np.array([7, 7, 7], dtype=np.int32),
        np.array([-2, 4, -2, 1]),  # negative: sort
        np.array([10**12, 3, 10**12]),  # sparse: sort
        np.array([2.5, 1.0, 2.5]),  # floats: sort
        np.array([], dtype=np.int64),
    ],
)
def test_same_as_numpy_unique(ids: np.ndarray) -> None:
    expected_uniques, expected_codes = np.unique(ids, return_inverse=True)
    uniques, codes = dense_codes(ids)
    assert np.array_equal(uniques, expected_uniques)
    assert uniques.dtype == expected_uniques.dtype
    assert np.array_equal(codes, np.asarray(expected_codes).reshape(-1))


def test_random_session_model_products() -> None:
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 5_000, size=20_000) * 7 + rng.integers(0, 7, size=20_000)
    expected_uniques, expected_codes = np.unique(ids, return_inverse=True)
    uniques, codes = dense_codes(ids)
    assert np.array_equal(uniques, expected_uniques) and np.array_equal(codes, expected_codes)
