r"""Exact two-way projections of per-session (rows x columns) tables, one maker per pattern.

A stack of session tables ``(sessions, rows, columns)``, each with its own pattern of
observed cells: :meth:`SessionTables.project` replaces every table by the least-squares
residual of ``v[r, c] = a[r] + b[c] + e`` fitted on its observed cells, i.e. by
:math:`M_O v` with the residual maker of its pattern
(:func:`~llm_council.stats.design.nested_two_way.residual_makers`). That is the limit of the
alternating row/column sweeps (von Neumann 1950; Deming & Stephan 1940), computed to
rounding in one product, whatever the number of missing cells: the sweeps need hundreds
of rounds when cells are missing (recused reviewers, unparsed scores).

Sessions go in blocks; each block's distinct patterns get their makers from one batched
pseudo-inverse, and each session's maker is applied to its table in one batched product.
Cells no session observed (a reviewer's own answer when reviewers are recused) are left
out of the makers. Unobserved cells hold 0 in and out.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from llm_council.stats.design.nested_two_way import residual_makers
from llm_council.stats.design.row_patterns import row_patterns

#: doubles of gathered makers per block of sessions (about 16 MB)
_BLOCK_DOUBLES = 2_000_000
#: the makers of every distinct pattern are kept (computed once for all calls) while they
#: take at most this many doubles (64 MB; a 5-member council with missing scores needs
#: well under 1 MB); past it (thousands of patterns of wide tables), each block of
#: sessions solves its own patterns on every call
_CACHED_MAKER_DOUBLES = 8_000_000


class SessionTables:
    """The observed-cell patterns of a ``(sessions, rows, columns)`` stack of tables."""

    def __init__(self, observed: np.ndarray) -> None:
        pattern = np.asarray(observed, dtype=bool)
        if pattern.ndim != 3:
            raise ValueError(f"observed must be (sessions, rows, columns), got {pattern.shape}")
        self.shape = pattern.shape
        n_sessions, n_rows, n_columns = pattern.shape
        flat = pattern.reshape(n_sessions, n_rows * n_columns)
        #: the cells some session observed (the makers' rows and columns)
        self.used_cells = np.flatnonzero(flat.any(axis=0))
        self._cell_rows = self.used_cells // n_columns
        self._cell_columns = self.used_cells % n_columns
        self._observed = flat[:, self.used_cells]
        size = max(1, self.used_cells.size)
        self._sessions_per_block = max(1, _BLOCK_DOUBLES // (size * size))
        self._patterns = row_patterns(self._observed) if self.used_cells.size else None
        self._all_makers: np.ndarray | None = None
        n_patterns = 0 if self._patterns is None else len(self._patterns.patterns)
        if self._patterns is not None and n_patterns * size * size <= _CACHED_MAKER_DOUBLES:
            self._all_makers = residual_makers(
                self._patterns.patterns, self._cell_rows, self._cell_columns
            )

    def _blocks(self) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
        """``(sessions, makers, each session's maker number)`` per block of sessions."""
        if self._patterns is None:  # nothing observed: every residual is 0 already
            return
        n_sessions = self.shape[0]
        for first in range(0, n_sessions, self._sessions_per_block):
            sessions = slice(first, min(first + self._sessions_per_block, n_sessions))
            if self._all_makers is not None:
                yield sessions, self._all_makers, self._patterns.index[sessions]
                continue
            grouped = row_patterns(self._observed[sessions])
            makers = residual_makers(grouped.patterns, self._cell_rows, self._cell_columns)
            yield sessions, makers, grouped.index

    def _used(self, tables: np.ndarray) -> np.ndarray:
        n_sessions, n_rows, n_columns = self.shape
        if tables.shape[:3] != self.shape:
            raise ValueError(f"tables of shape {tables.shape} for patterns of {self.shape}")
        if tables.dtype != np.float64 or not tables.flags.c_contiguous:
            raise ValueError("tables must be a C-contiguous float64 array (written in place)")
        return tables.reshape(n_sessions, n_rows * n_columns, -1)

    def _cells(self, n_cells: int) -> slice | np.ndarray:
        """The used cells as an index: a slice (views, no copies) when every cell is used."""
        return slice(None) if self.used_cells.size == n_cells else self.used_cells

    def project(self, tables: np.ndarray) -> np.ndarray:
        """Each session's two-way residual ``M_O v``, written into ``tables`` and returned.

        ``tables`` is float64 ``(sessions, rows, columns)`` or ``(sessions, rows, columns,
        k)`` (k tables per session projected together), C-contiguous, 0 on unobserved cells.
        """
        flat = self._used(tables)
        cells = self._cells(flat.shape[1])
        for sessions, makers, index in self._blocks():
            block = flat[sessions, cells]
            if makers.shape[0] == 1:  # one pattern (complete tables): one product
                flat[sessions, cells] = _times_one_maker(makers[0], block)
            else:
                flat[sessions, cells] = makers[index] @ block
        return tables

    def leverage(self) -> np.ndarray:
        """:math:`M_{cc}` of every session and cell (its maker's diagonal); 0 if unobserved."""
        n_sessions, n_rows, n_columns = self.shape
        diagonal = np.zeros((n_sessions, n_rows * n_columns))
        where = np.arange(self.used_cells.size)
        for sessions, makers, index in self._blocks():
            diagonal[sessions, self.used_cells] = makers[:, where, where][index]
        return diagonal.reshape(self.shape)

    def maker_sum(self) -> np.ndarray:
        r""":math:`\sum_s M_{O_s}` on all ``rows * columns`` cells (0 where never observed)."""
        n_cells = self.shape[1] * self.shape[2]
        total = np.zeros((n_cells, n_cells))
        used = np.ix_(self.used_cells, self.used_cells)
        if self._all_makers is not None and self._patterns is not None:
            counts = self._patterns.counts.astype(float)
            total[used] = np.einsum("p,pij->ij", counts, self._all_makers)
            return total
        for _, makers, index in self._blocks():
            counts = np.bincount(index, minlength=makers.shape[0]).astype(float)
            total[used] += np.einsum("p,pij->ij", counts, makers)
        return total

    def subtract_projected(self, tables: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """``tables[s] -= M_{O_s} coefficients`` for every session, in place.

        ``coefficients`` is ``(rows * columns, k)`` (one column per table of ``tables``'
        last axis): a cell effect shared by all sessions, as each session's maker sees it.
        """
        flat = self._used(tables)
        cells = self._cells(flat.shape[1])
        shared = np.asarray(coefficients, dtype=float).reshape(-1, flat.shape[2])[self.used_cells]
        cached = None if self._all_makers is None else self._all_makers @ shared
        for sessions, makers, index in self._blocks():
            seen = cached if cached is not None else makers @ shared
            # one pattern: the same correction for every session, broadcast (no gather)
            flat[sessions, cells] -= seen[0] if seen.shape[0] == 1 else seen[index]
        return tables


def _times_one_maker(maker: np.ndarray, block: np.ndarray) -> np.ndarray:
    """``maker @ block[s]`` for every session ``s`` of a (sessions, cells, k) block, as one
    matrix product: the tables as rows, times the maker's transpose."""
    n_sessions, n_cells, n_values = block.shape
    if n_values == 1:
        return (block.reshape(n_sessions, n_cells) @ maker.T).reshape(block.shape)
    rows = np.ascontiguousarray(block.transpose(0, 2, 1)).reshape(-1, n_cells)
    return (rows @ maker.T).reshape(n_sessions, n_values, n_cells).transpose(0, 2, 1)
