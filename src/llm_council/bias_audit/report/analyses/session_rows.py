"""Helpers the incremental sections share: session ids of fetched rows, grouped sums.

Rows fetched from ``scored`` carry the dense ``session`` index, which numbers the sessions
of one load only; a summary saved across loads keys its rows by ``session_id`` instead
(``session_names`` maps one to the other, :mod:`~llm_council.bias_audit.report.load.
tables`). Group sums are taken with ``np.add.reduceat`` over rows sorted by group, so the
same rows give the same bits whichever load they came from.
"""

from __future__ import annotations

import duckdb
import numpy as np


def session_ids_of(connection: duckdb.DuckDBPyConnection, sessions: np.ndarray) -> np.ndarray:
    """The ``session_id`` of each dense session index in ``sessions`` (a string array)."""
    names = connection.execute("SELECT session, session_id FROM session_names").fetchnumpy()
    index = np.asarray(names["session"], dtype=np.int64)
    lookup = np.empty(int(index.max()) + 1 if index.size else 0, dtype=object)
    lookup[index] = np.asarray(names["session_id"], dtype=object)
    ids = lookup[np.asarray(sessions, dtype=np.int64)]
    return np.asarray(ids.tolist(), dtype=str) if ids.size else np.zeros(0, dtype=str)


def group_starts(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys begins, in rows sorted by those keys."""
    if keys[0].size == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(keys[0].size, dtype=bool)
    change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(change)


def sorted_by_session(session_ids: np.ndarray, *columns: np.ndarray) -> list[np.ndarray]:
    """``session_ids`` and each column reordered by session id (a stable sort)."""
    order = np.argsort(session_ids, kind="stable")
    return [session_ids[order], *[column[order] for column in columns]]
