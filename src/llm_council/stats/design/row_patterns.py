"""Distinct rows of a boolean matrix (e.g. each session's pattern of observed cells).

``np.unique(flags, axis=0)`` views each row as an opaque byte string and sorts those with a
generic comparison: about a quarter of a second for 40,000 sessions of 25 cells, paid on
every call. Packing each row into bits (eight cells a byte, first cell in the most
significant bit) keeps the same lexicographic order (False < True, first cell first) and,
up to 64 cells, turns each row into one unsigned integer that sorts in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

#: cells that fit one big-endian unsigned 64-bit integer per row
_ONE_WORD_CELLS = 64


@dataclass(frozen=True)
class RowPatterns:
    """The distinct rows, sorted as ``np.unique(flags, axis=0)`` sorts them."""

    patterns: np.ndarray  # bool (n_patterns, n_cells)
    index: np.ndarray  # int (n_rows,): which pattern each row is
    counts: np.ndarray  # int (n_patterns,): rows per pattern


def row_patterns(flags: ArrayLike) -> RowPatterns:
    """``np.unique(flags, axis=0, return_inverse=True, return_counts=True)`` for a bool matrix.

    Parameters
    ----------
    flags : array_like of bool, shape (n_rows, n_cells)
        One row per item (e.g. a session's observed cells).

    Returns
    -------
    RowPatterns
        ``patterns`` (n_patterns, n_cells), ``index`` (n_rows,) and ``counts`` (n_patterns,).
    """
    matrix = np.asarray(flags, dtype=bool)
    if matrix.ndim != 2:
        raise ValueError(f"flags must be a (rows, cells) matrix, got shape {matrix.shape}")
    n_rows, n_cells = matrix.shape
    if n_rows == 0 or n_cells == 0:
        patterns, index, counts = np.unique(matrix, axis=0, return_inverse=True, return_counts=True)
        return RowPatterns(patterns, np.asarray(index).reshape(-1), counts)
    packed = np.packbits(matrix, axis=1)  # big bit order: cell 0 is the top bit of byte 0
    if n_cells <= _ONE_WORD_CELLS:
        words = np.zeros((n_rows, 8), dtype=np.uint8)
        words[:, : packed.shape[1]] = packed
        # big-endian bytes read as one integer compare like the bool rows, byte by byte
        codes = words.view(">u8").reshape(n_rows)
        _, first, index, counts = np.unique(
            codes, return_index=True, return_inverse=True, return_counts=True
        )
    else:
        _, first, index, counts = np.unique(
            packed, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
    return RowPatterns(matrix[first], np.asarray(index).reshape(-1), counts)
