"""``dense_codes`` is ``np.unique(values, return_inverse=True)`` without the sort."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from llm_council.bias_audit.report.load.tables import dense_codes


def _assert_same_as_unique(values: np.ndarray) -> None:
    expected_ids, expected_codes = np.unique(values, return_inverse=True)
    ids, codes = dense_codes(values)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_array_equal(codes, expected_codes.reshape(-1))
    assert codes.dtype.kind == "i" and ids.dtype == expected_ids.dtype


@given(hnp.arrays(np.int64, st.integers(0, 200), elements=st.integers(0, 1000)))
def test_small_non_negative_ids_are_numbered_like_np_unique(values: np.ndarray) -> None:
    _assert_same_as_unique(values)


@given(hnp.arrays(np.int64, st.integers(0, 50), elements=st.integers(-(2**62), 2**62)))
def test_negative_or_huge_ids_fall_back_to_np_unique(values: np.ndarray) -> None:
    _assert_same_as_unique(values)


def test_sparse_ids_and_other_dtypes() -> None:
    # a few ids far apart (the table would be larger than the input): sorted fallback
    _assert_same_as_unique(np.array([10**9, 3, 10**9, 3, 7], dtype=np.int64))
    _assert_same_as_unique(np.array([2, 0, 2, 5], dtype=np.int32))
    _assert_same_as_unique(np.array([2, 0, 2, 5], dtype=np.uint8))
    _assert_same_as_unique(np.array([1.5, -1.0, 1.5]))
    ids, codes = dense_codes(np.array([], dtype=np.int64))
    assert ids.size == 0 and codes.size == 0
    # the session numbering a report sees: dense ids with holes
    session = np.repeat(np.array([0, 1, 4, 5, 9]), 3)
    ids, codes = dense_codes(session)
    assert ids.tolist() == [0, 1, 4, 5, 9]
    assert codes.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
