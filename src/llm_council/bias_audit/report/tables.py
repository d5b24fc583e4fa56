"""Derived DuckDB tables every analysis shares, built once per report.

``reviewers`` and ``models`` give each id a dense integer index (stable: sorted by id), and
``scored`` holds each scored record with its *paired deviation*: the score minus the mean
score the other reviewers gave the same answer (session, model). Comparing reviewers on
the same answers, never raw means over different subsets, is what makes leniency,
position and self-preference estimates immune to which answers a reviewer happened to see.
Self-reviews never enter the "others" mean, so self-preference cannot leak into it.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np


def create_analysis_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """Create ``reviewers``, ``models`` and ``scored`` from ``records``."""
    connection.execute(
        """CREATE TABLE reviewers AS
           SELECT reviewer, (row_number() OVER (ORDER BY reviewer) - 1)::INTEGER AS reviewer_index
           FROM (SELECT DISTINCT reviewer FROM records)"""
    )
    connection.execute(
        """CREATE TABLE models AS
           SELECT model, (row_number() OVER (ORDER BY model) - 1)::INTEGER AS model_index
           FROM (SELECT DISTINCT model FROM records)"""
    )
    connection.execute(
        """CREATE TABLE scored AS
           WITH answer AS (
               SELECT session, model,
                      sum(score) FILTER (WHERE NOT is_self) AS other_sum,
                      count(score) FILTER (WHERE NOT is_self) AS other_n
               FROM records WHERE score IS NOT NULL
               GROUP BY session, model)
           SELECT r.session, r.reviewer, rv.reviewer_index, r.model, m.model_index,
                  r.position, r.n_candidates, r.words, r.score, r.rank, r.is_self,
                  CASE
                      WHEN r.is_self AND a.other_n >= 1
                          THEN r.score - a.other_sum / a.other_n
                      WHEN NOT r.is_self AND a.other_n >= 2
                          THEN r.score - (a.other_sum - r.score) / (a.other_n - 1)
                  END AS deviation
           FROM records r
           JOIN answer a USING (session, model)
           JOIN reviewers rv USING (reviewer)
           JOIN models m USING (model)
           WHERE r.score IS NOT NULL"""
    )


# dense_codes counts with a table of max + 1 entries; beyond this many per value, sort instead
_DENSE_TABLE_PER_VALUE = 4


def dense_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for integer ids, in O(n) without a sort.

    The ids the analyses group by (session, reviewer and model indices, and products of
    them) are small non-negative integers, so a presence table numbers them in order: the
    same (sorted ids, dense codes) as ``np.unique``, which sorts (O(n log n), a second per
    million records over a report's dozen calls). Other input falls back to ``np.unique``.
    """
    ids = np.asarray(values)
    if ids.size == 0 or ids.dtype.kind not in "iu":
        uniques, inverse = np.unique(ids, return_inverse=True)
        return uniques, inverse.reshape(-1)
    flat = ids.reshape(-1)
    low, high = int(flat.min()), int(flat.max())
    if low < 0 or high >= _DENSE_TABLE_PER_VALUE * flat.size + 1024:
        uniques, inverse = np.unique(flat, return_inverse=True)
        return uniques, inverse
    present = np.zeros(high + 1, dtype=bool)
    present[flat] = True
    code_of_id = np.cumsum(present, dtype=np.int64) - 1
    return np.flatnonzero(present).astype(ids.dtype, copy=False), code_of_id[flat]


def nullable_floats(column: Any) -> np.ndarray:
    """A fetched DuckDB column as floats, SQL NULL (a masked entry) as NaN."""
    filled: Any = np.ma.filled(np.ma.asarray(column, dtype=float), np.nan)
    return np.asarray(filled, dtype=float)


def scores_sum_to_a_constant(connection: duckdb.DuckDBPyConnection) -> bool:
    """Do all complete score sets of a reviewer in a session add up to one number?

    Pairwise verdicts written as 1/0/0.5 (or any forced-choice allocation) do: then every
    reviewer's mean in a session is fixed by the scale, and leniency (a reviewer's level
    against the others') is not identified, whatever the design. Only sessions where the
    reviewer scored every candidate it was shown count; at least two such sets are needed.
    """
    row = connection.execute(
        """WITH complete AS (
               SELECT sum(score) AS total FROM records
               GROUP BY session, reviewer
               HAVING count(score) = count(*) AND count(*) >= 2)
           SELECT count(*), max(total) - min(total) FROM complete"""
    ).fetchone()
    return bool(row is not None and row[0] >= 2 and row[1] is not None and abs(row[1]) < 1e-9)
