r"""Two-way fixed effects nested in sessions, projected out exactly, one solve per design.

Observations ``i`` carry a session, a *row* (e.g. the reviewer: a row effect per session is
a reviewer x session leniency) and a *column* (e.g. the answer, which lies in one session).
Both sets of effects are nested in sessions, so the least-squares residual of

.. math::

    v_i = \rho_{s(i)\,\mathrm{row}(i)} + \kappa_{\mathrm{col}(i)} + e_i

splits into one small problem per session: on the session's row x column table of
observed cells ``O``, the residual is :math:`M_O v` with the residual maker
:math:`M_O = I - X_O X_O^{+}` of the row and column dummies :math:`X_O` (Frisch-Waugh-Lovell).
:math:`M_O` depends on the pattern ``O`` alone, so sessions are grouped by pattern and each
:math:`M_O` is computed once and applied to all of that pattern's sessions (and every
column of ``values``) in one matrix product.

This is the limit that alternating projections (demean within column, then within row,
repeated) converge to: the projection onto the orthogonal complement of the sum of the two
dummy spaces (von Neumann 1950, *Functional Operators* vol. II, theorem 13.7; Gaure 2013,
*Comput. Stat. Data Anal.* 66: 8-18, section 3). The iteration stops within a tolerance of
it; this computes it directly, to rounding.
"""

from __future__ import annotations

import numpy as np

from llm_council.stats.row_patterns import row_patterns

#: past this many table cells per observation (a few sessions far wider than the rest) the
#: padded session tables would waste memory; the caller falls back to its iteration
_MAX_CELLS_PER_OBSERVATION = 4
#: past this many distinct patterns of observed cells (ragged, messy sessions) one solve per
#: pattern costs more than it saves (and their makers take memory); the caller iterates
MAX_PATTERNS = 256
#: doubles per block of sessions projected at once (about 16 MB), so temporaries stay small
_BLOCK_DOUBLES = 2_000_000


def residual_maker(pattern: np.ndarray) -> np.ndarray:
    """``M_O`` on the flattened (rows x columns) table; rows and columns of unobserved cells are 0.

    ``pattern`` is bool (rows, columns). :math:`M_O = I - X (X^\\top X)^{+} X^\\top` on the
    observed cells (``np.linalg.pinv`` handles the rank deficiency: a common constant lies
    in both dummy spaces).
    """
    observed = np.asarray(pattern, dtype=bool)
    n_rows, n_columns = observed.shape
    cells = np.flatnonzero(observed.reshape(-1))
    design = np.zeros((cells.size, n_rows + n_columns))
    design[np.arange(cells.size), cells // n_columns] = 1.0
    design[np.arange(cells.size), n_rows + cells % n_columns] = 1.0
    local = np.eye(cells.size) - design @ np.linalg.pinv(design)
    maker = np.zeros((n_rows * n_columns, n_rows * n_columns))
    maker[np.ix_(cells, cells)] = local
    return maker


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
    observations in one (session, row, column) cell, tables much wider than the data, or
    more than ``MAX_PATTERNS`` distinct patterns of observed cells.
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
    grouped = row_patterns(observed)
    del observed, slot
    if len(grouped.patterns) > MAX_PATTERNS:
        return None
    makers = [residual_maker(p.reshape(height, width)) for p in grouped.patterns]
    # blocks sized on the full table: the per-row temporaries of a block stay as before
    sessions_per_block = max(1, _BLOCK_DOUBLES // (n_cells * values.shape[1]))
    # A cell no session observed (e.g. a reviewer's own answer) is a zero row and column of
    # every maker: left out of the padded tables, which shrinks them and the products.
    used_cells = np.flatnonzero(grouped.patterns.any(axis=0))
    if used_cells.size < n_cells:
        makers = [maker[np.ix_(used_cells, used_cells)] for maker in makers]
        place_of_cell = np.zeros(n_cells, dtype=cell.dtype)
        place_of_cell[used_cells] = np.arange(used_cells.size)
        cell = place_of_cell[cell]
        n_cells = used_cells.size
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
        residuals[rows] = _project_block(
            values[rows], session[rows] - first, cell[rows], grouped.index[first:last], makers
        )
    return residuals


def _project_block(
    values: np.ndarray,
    local_session: np.ndarray,
    cell: np.ndarray,
    pattern_of_session: np.ndarray,
    makers: list[np.ndarray],
) -> np.ndarray:
    """One block of sessions: pad into (cells, sessions, k), apply each pattern's maker."""
    n_cells = makers[0].shape[0]
    n_sessions, n_values = pattern_of_session.size, values.shape[1]
    table = np.zeros((n_cells, n_sessions, n_values))
    where = cell * n_sessions + local_session  # row of (cell, session) in the flat table
    table.reshape(-1, n_values)[where] = values
    present = np.flatnonzero(np.bincount(pattern_of_session, minlength=len(makers)))
    for number in present:
        maker = makers[int(number)]
        if present.size == 1:  # one pattern: the whole table, as a view
            table = (maker @ table.reshape(n_cells, -1)).reshape(table.shape)
            break
        members = np.flatnonzero(pattern_of_session == number)
        block = table[:, members].reshape(n_cells, -1)
        table[:, members] = (maker @ block).reshape(n_cells, members.size, n_values)
    return np.take(table.reshape(-1, n_values), where, axis=0)
