"""The two products the absorbed least squares needs, for dense or CSR designs, fast.

A report design has a million rows and a few dozen columns, with a few entries per row (a
dummy per factor and an interaction). scipy's sparse products build a ``(G, n)`` grouping
matrix, transpose the design and allocate sparse results before densifying them; the
same sums are one ``np.bincount`` over the design's stored entries, whose CSR arrays already
hold each entry's column and value, and whose row pointer gives each entry's row:

.. math::

    (D^\\top \\operatorname{diag}(w) X)_{g j} = \\sum_{i:\\,g(i) = g} w_i x_{ij},\\qquad
    (X^\\top X)_{j l} = \\sum_i \\sum_{a, b \\in \\text{row } i} [c_a = j][c_b = l]\\, v_a v_b

(``c``, ``v``: an entry's column and value). Sums are taken in row order instead of scipy's
order, so results agree to round-off (about 1e-16 relative), not bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from scipy import sparse

#: rows per ``bincount`` pass: bounds the per-entry temporaries (a 10M-record design would
#: otherwise need several 40M-entry index arrays at once)
_ROWS_PER_PASS = 1 << 20


def _csr(x: Any) -> sparse.csr_matrix | None:
    """``x`` as CSR if it is a scipy sparse matrix, else None (a dense array)."""
    return x.tocsr() if sparse.issparse(x) else None


def grouped_column_sums(
    x: Any, group_index: np.ndarray, n_groups: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """Dense ``(n_groups, k)`` sums of the rows of ``x`` (times ``weights``) per group."""
    n, k = x.shape
    csr = _csr(x)
    if csr is None:
        values = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
        grouping = sparse.csr_matrix((values, (group_index, np.arange(n))), shape=(n_groups, n))
        return _as_dense(grouping @ np.asarray(x, dtype=float))
    width = _entries_per_row(csr)
    n_cells = n_groups * k
    sums: np.ndarray | None = None
    for start in range(0, n, _ROWS_PER_PASS):
        stop = min(start + _ROWS_PER_PASS, n)
        first, last = csr.indptr[start], csr.indptr[stop]
        if width is not None:  # every row has ``width`` entries: no per-entry row index
            cells = group_index[start:stop, None] * k + csr.indices[first:last].reshape(-1, width)
            values = csr.data[first:last].reshape(-1, width)
            if weights is not None:
                values = values * weights[start:stop, None]
        else:
            rows = np.repeat(np.arange(start, stop), np.diff(csr.indptr[start : stop + 1]))
            cells = group_index[rows] * k + csr.indices[first:last]
            values = csr.data[first:last]
            if weights is not None:
                values = values * weights[rows]
        # After the first pass, only the groups a pass touches: on rows ordered by group
        # (the usual case) a small temporary, not a second (n_groups, k) array per pass.
        # The same additions in the same order, so the sums are the same to the last bit.
        if cells.size == 0:
            continue
        if sums is None:  # the first pass's counts are the sums so far
            sums = np.bincount(cells.ravel(), weights=values.ravel(), minlength=n_cells)
            continue
        first_cell = int(cells.min())
        cells -= first_cell  # a fresh array in both branches above
        part = np.bincount(cells.ravel(), weights=values.ravel())
        sums[first_cell : first_cell + part.size] += part
    return (np.zeros(n_cells) if sums is None else sums).reshape(n_groups, k)


#: groups per block of :func:`_group_sum_blocks` (a block of sums: ~16 MB at k = 30)
_GROUPS_PER_BLOCK = 1 << 16
#: rows per block (unless one group has more): bounds a block's gathered rows and
#: per-entry temporaries (~100 bytes a row with 4 entries: 50 MB)
_ROWS_PER_BLOCK = 1 << 19


def absorbed_cross_products(
    x: Any, group_index: np.ndarray, group_weights: np.ndarray, group_vector: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``S.T @ diag(group_weights) @ S`` and ``S.T @ group_vector`` for the group sums
    ``S = grouped_column_sums(x, group_index, n_groups)``, without holding ``S``.

    ``S`` is dense ``(n_groups, k)`` and mostly zeros for a design of dummies (0.5 GB at
    2M answers and k = 30), so it is formed a block of groups at a time
    (:func:`_group_sum_blocks`).
    """
    k = x.shape[1]
    cross = np.zeros((k, k))
    moment = np.zeros(k)
    # With weights >= 0 (the usual inverse group sizes), S.T diag(w) S as A.T A with
    # A = diag(sqrt(w)) S: a symmetric product (BLAS syrk, half the work of a general one),
    # and A overwrites S, so no scaled copy of a block is made
    root_weights = np.sqrt(group_weights) if np.all(group_weights >= 0) else None
    for first, last, sums in _group_sum_blocks(x, group_index, group_weights.size):
        moment += sums.T @ group_vector[first:last]
        if root_weights is None:
            cross += sums.T @ (sums * group_weights[first:last, None])
        else:
            sums *= root_weights[first:last, None]
            cross += sums.T @ sums
    return cross, moment


def grouped_cross_product(
    x: Any, group_index: np.ndarray, n_groups: int, weights: np.ndarray
) -> np.ndarray:
    """``S.T @ S`` for ``S = grouped_column_sums(x, group_index, n_groups, weights)`` (the
    cluster scores of a sandwich), a block of groups at a time, without holding ``S``."""
    k = x.shape[1]
    cross = np.zeros((k, k))
    for _, _, sums in _group_sum_blocks(x, group_index, n_groups, weights):
        cross += sums.T @ sums
    return cross


def _group_sum_blocks(
    x: Any, group_index: np.ndarray, n_groups: int, weights: np.ndarray | None = None
) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(first, last, S[first:last])`` for consecutive blocks of groups (at most
    :data:`_GROUPS_PER_BLOCK` groups and :data:`_ROWS_PER_BLOCK` rows, or one group) of
    ``S = grouped_column_sums(x, group_index, n_groups, weights)``.

    A block is summed from the rows of its groups, found by a scan of the group ids (or as
    one slice when the rows are already ordered by group), so within a group the rows are
    added in their original order.
    """
    csr = _csr(x)
    width = None if csr is None else _entries_per_row(csr)
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(np.bincount(group_index, minlength=n_groups), out=starts[1:])
    ordered = bool(np.all(group_index[1:] >= group_index[:-1]))
    last = 0
    while last < n_groups:
        first = last
        # the most groups, up to _GROUPS_PER_BLOCK, whose rows fit in _ROWS_PER_BLOCK
        fits = int(np.searchsorted(starts, starts[first] + _ROWS_PER_BLOCK, side="right")) - 1
        last = max(min(first + _GROUPS_PER_BLOCK, n_groups, fits), first + 1)
        lo, hi = int(starts[first]), int(starts[last])
        if lo == hi:
            continue
        # a block's rows by a scan of the ids, not a sort of all rows (whose (n,) int64
        # order and buffer are 0.1 GB at 10M records): a pass over the ids per block
        rows: Any = (
            slice(lo, hi)
            if ordered
            else np.flatnonzero((group_index >= first) & (group_index < last))
        )
        block_groups = group_index[rows] - first
        block_weights = None if weights is None else weights[rows]
        if csr is not None and width is not None and hi - lo <= _ROWS_PER_PASS:
            # the entries' (rows, width) arrays summed directly: a CSR block of slices would
            # make scipy copy its data and indices (it copies views it is given)
            sums = _fixed_width_group_sums(
                csr.indices.reshape(-1, width)[rows],
                csr.data.reshape(-1, width)[rows],
                block_groups,
                last - first,
                csr.shape[1],
                block_weights,
            )
            yield first, last, sums
            continue
        block: Any
        if csr is None:
            block = np.asarray(x, dtype=float)[rows]
        elif width is None:
            block = csr[rows]
        else:  # as scipy's csr[rows], without its per-call (n,) row-length temporary
            block = sparse.csr_matrix(
                (
                    csr.data.reshape(-1, width)[rows].reshape(-1),
                    csr.indices.reshape(-1, width)[rows].reshape(-1),
                    np.arange(0, width * (hi - lo) + 1, width, dtype=csr.indices.dtype),
                ),
                shape=(hi - lo, csr.shape[1]),
            )
        yield first, last, grouped_column_sums(block, block_groups, last - first, block_weights)


def _fixed_width_group_sums(
    columns: np.ndarray,
    values: np.ndarray,
    group_index: np.ndarray,
    n_groups: int,
    k: int,
    weights: np.ndarray | None,
) -> np.ndarray:
    """:func:`grouped_column_sums` of rows given by their entries' ``(rows, width)`` column
    indices and values (the same cells and additions as its one-pass case)."""
    cells = group_index[:, None] * k + columns
    if weights is not None:
        values = values * weights[:, None]
    sums = np.bincount(cells.ravel(), weights=values.ravel(), minlength=n_groups * k)
    return sums.reshape(n_groups, k)


def _entries_per_row(csr: sparse.csr_matrix) -> int | None:
    """The number of stored entries of every row, if it is the same (and > 0) for all;
    checked a pass of rows at a time (no (n,) row-length array)."""
    n = csr.shape[0]
    if n == 0:
        return None
    width = int(csr.indptr[1] - csr.indptr[0])
    if width == 0 or int(csr.indptr[n] - csr.indptr[0]) != width * n:
        return None
    for start in range(0, n, _ROWS_PER_PASS):
        if np.any(np.diff(csr.indptr[start : start + _ROWS_PER_PASS + 1]) != width):
            return None
    return width


def gram(x: Any) -> np.ndarray:
    """Dense ``X^T X``; for a CSR design with the same number of entries in every row, by
    one ``bincount`` per pair of entry slots (each row's a-th and b-th stored entries)."""
    csr = _csr(x)
    if csr is None:
        dense = np.asarray(x, dtype=float)
        return np.asarray(dense.T @ dense)
    n, k = csr.shape
    width = _entries_per_row(csr)
    if width is None:
        return _as_dense(csr.T @ csr)
    total = np.zeros((k, k))
    diagonal = np.diag_indices(k)
    for start in range(0, n, _ROWS_PER_PASS):
        stop = min(start + _ROWS_PER_PASS, n)
        columns = csr.indices[start * width : stop * width].reshape(-1, width)
        values = csr.data[start * width : stop * width].reshape(-1, width)
        for a in range(width):
            # an entry times itself lands on the diagonal: k bins, no pair cell to compute
            total[diagonal] += np.bincount(columns[:, a], weights=values[:, a] ** 2, minlength=k)
            for b in range(a + 1, width):
                cells = columns[:, a].astype(np.int64) * k + columns[:, b]
                part = np.bincount(cells, weights=values[:, a] * values[:, b], minlength=k * k)
                part = part.reshape(k, k)
                total += part + part.T
    return total


def _as_dense(matrix: Any) -> np.ndarray:
    """A product's result as a dense array (sparse @ sparse stays sparse)."""
    return np.asarray(matrix.toarray() if sparse.issparse(matrix) else matrix)
