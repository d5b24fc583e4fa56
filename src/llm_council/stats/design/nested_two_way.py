r"""Two-way fixed effects nested in sessions, projected out exactly, one solve per design.

Observations ``i`` carry a session, a *row* (e.g. the reviewer: a row effect per session is
a reviewer x session leniency) and a *column* (e.g. the answer, which lies in one session).
Both sets of effects are nested in sessions, so the least-squares residual of

.. math::

    v_i = \rho_{s(i)\,\mathrm{row}(i)} + \kappa_{\mathrm{col}(i)} + e_i

splits into one small problem per session: on the session's row x column table of
observed cells ``O``, the residual is :math:`M_O v` with the residual maker
:math:`M_O = I - X_O X_O^{+}` of the row and column dummies :math:`X_O` (Frisch-Waugh-Lovell).
:math:`M_O` depends on the pattern ``O`` alone, so within a block of sessions each distinct
pattern's :math:`M_O` is computed once (one batched pseudo-inverse for all of them) and
applied to every session with that pattern and every column of ``values``: one matrix
product when the block has one pattern (complete tables), a batched product of each
session's maker with its table otherwise (recused reviewers, missing scores: hundreds of
patterns, each rare).

This is the limit that alternating projections (demean within column, then within row,
repeated) converge to: the projection onto the orthogonal complement of the sum of the two
dummy spaces (von Neumann 1950, *Functional Operators* vol. II, theorem 13.7; Gaure 2013,
*Comput. Stat. Data Anal.* 66: 8-18, section 3). The iteration stops within a tolerance of
it; this computes it directly, to rounding.
"""

from __future__ import annotations

import numpy as np

from llm_council.stats.design.row_patterns import row_patterns

#: past this many table cells per observation (a few sessions far wider than the rest) the
#: padded session tables would waste memory; the caller falls back to its iteration
_MAX_CELLS_PER_OBSERVATION = 4
#: doubles per block of sessions projected at once (about 16 MB), so temporaries stay small
_BLOCK_DOUBLES = 2_000_000
#: up to this many distinct patterns in a block, each pattern's sessions are multiplied
#: by its maker in one product; past it, every session's maker is gathered and applied
#: in one batched product (a loop over hundreds of rare patterns costs more)
_LOOPED_PATTERNS = 8


def residual_makers(
    observed: np.ndarray, cell_rows: np.ndarray, cell_columns: np.ndarray
) -> np.ndarray:
    """``M_O`` of each pattern at once: ``(P, cells)`` bool in, ``(P, cells, cells)`` out.

    Cell ``c`` of a pattern lies in table row ``cell_rows[c]`` and column
    ``cell_columns[c]``. :math:`M_O = D_O - X_O X_O^{+}` with :math:`D_O` the diagonal of
    observed cells and :math:`X_O` the row and column dummies, zero on unobserved cells, so
    their rows and columns of ``M_O`` are 0 (``np.linalg.pinv``, batched, handles the rank
    deficiency: a common constant lies in both dummy spaces).
    """
    patterns = np.asarray(observed, dtype=bool)
    n_patterns, n_cells = patterns.shape
    n_rows = int(cell_rows.max(initial=-1)) + 1
    n_columns = int(cell_columns.max(initial=-1)) + 1
    flags = patterns.astype(float)
    design = np.zeros((n_patterns, n_cells, n_rows + n_columns))
    cells = np.arange(n_cells)
    design[:, cells, cell_rows] = flags
    design[:, cells, n_rows + cell_columns] = flags
    makers = -(design @ np.linalg.pinv(design))
    makers *= flags[:, None, :]  # exact zeros (not rounding) in unobserved cells' columns
    makers[:, cells, cells] += flags
    return makers


def residual_maker(pattern: np.ndarray) -> np.ndarray:
    """``M_O`` of one (rows, columns) bool pattern, on the flattened table (row-major)."""
    table = np.asarray(pattern, dtype=bool)
    n_rows, n_columns = table.shape
    cells = np.arange(n_rows * n_columns)
    return residual_makers(table.reshape(1, -1), cells // n_columns, cells % n_columns)[0]


def nested_two_way_residuals(
    values: np.ndarray,
    session: np.ndarray,
    row: np.ndarray,
    column: np.ndarray,
    *,
    overwrite: bool = False,
) -> np.ndarray | None:
    """``values`` (observations, k) net of row-within-session and column effects (module doc).

    ``session`` holds dense codes ``0 .. S-1``, ``row`` small non-negative integers (a row
    effect is fitted per session and row) and ``column`` dense codes ``0 .. A-1`` of ids
    that each lie in one session. Returns None (the caller iterates instead) when the
    input is not a set of session tables: a column spread over two sessions, two
    observations in one (session, row, column) cell, or tables much wider than the data.
    With ``overwrite`` the residuals are written into ``values`` (a float64 C-contiguous
    array) and it is returned, so the caller holds one copy; ``values`` is unchanged when
    None is returned.
    """
    n_observations = values.shape[0]
    if n_observations == 0:
        return values.copy()
    for name, codes in (("session", session), ("row", row), ("column", column)):
        if int(codes.min()) < 0:
            raise ValueError(f"{name} codes must be non-negative, got {int(codes.min())}")
    n_sessions = int(session.max()) + 1
    n_answers = int(column.max()) + 1
    column_session = np.full(n_answers, -1, dtype=np.int64)
    column_session[column] = session
    if np.any(column_session[column] != session):
        return None
    # each column's place among its session's columns, in order of column code
    order = np.lexsort((np.arange(n_answers), column_session))
    columns_per_session = np.bincount(column_session[column_session >= 0], minlength=n_sessions)
    first_of_session = np.concatenate([[0], np.cumsum(columns_per_session)[:-1]])
    rank = np.empty(n_answers, dtype=np.int64)
    rank[order] = np.arange(n_answers)
    present = column_session >= 0
    local_column = np.zeros(n_answers, dtype=np.int64)
    local_column[present] = rank[present] - first_of_session[column_session[present]]
    width = int(columns_per_session.max())
    height = int(row.max()) + 1
    n_cells = height * width
    if n_sessions * n_cells > _MAX_CELLS_PER_OBSERVATION * n_observations + 1024:
        return None
    cell = row * width + local_column[column]
    slot = session * n_cells + cell
    if np.bincount(slot, minlength=n_sessions * n_cells).max() > 1:
        return None
    observed = np.zeros((n_sessions, n_cells), dtype=bool)
    observed[session, cell] = True
    # A cell no session observed (e.g. a reviewer's own answer) is a zero row and column of
    # every maker: left out of the padded tables, which shrinks them and the products.
    used_cells = np.flatnonzero(observed.any(axis=0))
    observed = observed[:, used_cells]
    place_of_cell = np.zeros(n_cells, dtype=cell.dtype)
    place_of_cell[used_cells] = np.arange(used_cells.size)
    cell = place_of_cell[cell]
    del slot
    cell_rows, cell_columns = used_cells // width, used_cells % width
    n_cells = used_cells.size
    # blocks bound the padded table and the gathered makers of a block of sessions
    sessions_per_block = max(1, _BLOCK_DOUBLES // (n_cells * max(values.shape[1], n_cells)))
    residuals = values if overwrite else np.empty_like(values, dtype=float)
    # sessions in blocks of consecutive codes, so one padded table of a block is held at a
    # time; rows in session order (a stable sort is linear on rows already in that order)
    grouped_rows = bool(np.all(session[1:] >= session[:-1]))
    by_session = None if grouped_rows else np.argsort(session, kind="stable")
    sorted_sessions = session if by_session is None else session[by_session]
    for first in range(0, n_sessions, sessions_per_block):
        last = min(first + sessions_per_block, n_sessions)
        low, high = np.searchsorted(sorted_sessions, [first, last])
        rows: slice | np.ndarray = slice(low, high) if by_session is None else by_session[low:high]
        grouped = row_patterns(observed[first:last])
        makers = residual_makers(grouped.patterns, cell_rows, cell_columns)
        residuals[rows] = _project_block(
            values[rows], session[rows] - first, cell[rows], grouped.index, makers
        )
    return residuals


def _project_block(
    values: np.ndarray,
    local_session: np.ndarray,
    cell: np.ndarray,
    pattern_of_session: np.ndarray,
    makers: np.ndarray,
) -> np.ndarray:
    """One block of sessions: pad into (cells, sessions, k), apply each session's maker."""
    n_patterns, n_cells = makers.shape[:2]
    n_sessions, n_values = pattern_of_session.size, values.shape[1]
    table = np.zeros((n_cells, n_sessions, n_values))
    where = cell * n_sessions + local_session  # row of (cell, session) in the flat table
    table.reshape(-1, n_values)[where] = values
    if n_patterns == 1:  # complete tables, or one pattern: the whole table, as a view
        table = (makers[0] @ table.reshape(n_cells, -1)).reshape(table.shape)
    elif n_patterns <= _LOOPED_PATTERNS:
        for number in range(n_patterns):
            members = np.flatnonzero(pattern_of_session == number)
            block = table[:, members].reshape(n_cells, -1)
            table[:, members] = (makers[number] @ block).reshape(n_cells, members.size, n_values)
    else:  # many rare patterns: each session's maker times its (cells, k) table, batched
        projected = makers[pattern_of_session] @ table.transpose(1, 0, 2)
        table = projected.transpose(1, 0, 2)
    return np.take(table.reshape(-1, n_values), where, axis=0)
