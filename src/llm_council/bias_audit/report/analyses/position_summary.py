"""The position section (:mod:`.position`) as an incremental section (ADRs 0073, 0088).

The within-answers fit's summed least-squares state grows as k^4/4 with k = R (K + 1)
columns (137 MB at 9 members, ADR 0088), so the summary keeps the reviews themselves, as
small codes: each scored review at a valid slot is one code into a table of the distinct
(reviewer, model, session size, slot, self-review) it was given in, and its score; each
session is one run of consecutive reviews. The name tables are sorted, so a code's order
is its name's order. ``merge`` concatenates and re-codes to the union of names (exact);
``finish`` rebuilds the arrays :func:`~.position.position_bias` queries (reviewer and
model indices among every reviewer and model of the records, sessions in id order) and
calls the same :func:`~.position_fit.position_from_records`: equal to a full recompute
bit for bit. The modal session size is chosen from per-size session counts, which add
across disjoint sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.position import modal_n_slots
from llm_council.bias_audit.report.analyses.position_fit import position_from_records
from llm_council.bias_audit.report.analyses.position_records import take_slot_columns
from llm_council.bias_audit.report.estimates import PositionBias

#: the columns of the kinds table: the distinct (reviewer, model, size, slot, self) of reviews
KIND_COLUMNS = ("kind_reviewer", "kind_model", "kind_size", "kind_slot", "kind_self")


@dataclass(frozen=True)
class PositionSummary:
    """Sorted name tables, the kinds of review, one run per session, one row per review.

    ``cell_*``: every scored review at a valid slot (``0 <= position < n_candidates``), its
    kind and score, grouped in runs of one session (``run_session``, ``run_length``);
    ``size_*``: per session size (``size_null``: no ``n_candidates``), the sessions with a
    scored review of that size (valid slot or not), as the modal size counts them.
    """

    sessions: np.ndarray  # str: every session with a review in ``cell_*``
    reviewers: np.ndarray  # str: every reviewer with a record (their index is the load's)
    models: np.ndarray  # str: every model with a record
    kind_reviewer: np.ndarray
    kind_model: np.ndarray
    kind_size: np.ndarray
    kind_slot: np.ndarray
    kind_self: np.ndarray  # bool
    run_session: np.ndarray
    run_length: np.ndarray
    cell_kind: np.ndarray
    cell_score: np.ndarray  # float
    size_value: np.ndarray
    size_null: np.ndarray  # bool
    size_sessions: np.ndarray


_FIELDS = tuple(field.name for field in fields(PositionSummary))
_TABLES = ("sessions", "reviewers", "models")
#: each coded column and the table it indexes
_CODES = {"kind_reviewer": "reviewers", "kind_model": "models", "run_session": "sessions"}
_BOOLS = ("kind_self", "size_null")
_FLOATS = ("cell_score",)

#: each scored review at a valid slot, as codes into the sorted name tables (DuckDB's VARCHAR
#: order is byte order, which for UTF-8 is Python's code point order); reviewers and models
#: are the indexes of ``create_analysis_tables``'s ``reviewers`` and ``models`` tables
_CELLS_SQL = """
    WITH cells AS (
        SELECT session_id, reviewer, model, n_candidates, position, is_self, score
        FROM records
        WHERE score IS NOT NULL AND position >= 0 AND position < n_candidates),
    session_codes AS (
        SELECT session_id, (row_number() OVER (ORDER BY session_id) - 1)::INTEGER AS code
        FROM (SELECT DISTINCT session_id FROM cells))
    SELECT s.code AS session, r.reviewer_index AS reviewer, m.model_index AS model,
           c.n_candidates AS size, c.position AS slot, c.is_self AS is_self, c.score AS score
    FROM cells c JOIN session_codes s USING (session_id) JOIN reviewers r USING (reviewer)
    JOIN models m USING (model)
"""


def _strings(values: list[str]) -> np.ndarray:
    return np.asarray(values, dtype=str) if values else np.zeros(0, dtype=str)


def _names(connection: duckdb.DuckDBPyConnection, query: str) -> np.ndarray:
    return _strings([str(row[0]) for row in connection.execute(query).fetchall()])


def _kinds(columns: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """(the distinct rows of ``columns`` in lexicographic order, each row's index there).

    One sort of a mixed-radix int64 key when the radices fit (every real store), else
    numpy's row-wise unique (same table, same order). The key is built a column at a
    time: one (n,) temporary beside it, not a shifted copy of every column."""
    n = columns[0].size
    if n == 0:
        return [column[:0] for column in columns], np.zeros(0, dtype=np.int64)
    lows = [int(column.min()) for column in columns]
    radices = [int(column.max()) - low + 1 for column, low in zip(columns, lows, strict=True)]
    if int(np.prod(radices, dtype=object)) < 2**62:
        key = np.zeros(n, dtype=np.int64)
        for column, low, radix in zip(columns, lows, radices, strict=True):
            key *= radix
            key += column.astype(np.int64, copy=False)
            key -= low
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        del key
        return [column[first] for column in columns], inverse.reshape(-1).astype(np.int64)
    shifted = np.column_stack(
        [column.astype(np.int64) - low for column, low in zip(columns, lows, strict=True)]
    )
    table, inverse = np.unique(shifted, axis=0, return_inverse=True)
    rows = [table[:, i] + lows[i] for i in range(len(columns))]
    return rows, inverse.reshape(-1).astype(np.int64)


def _summarize(connection: duckdb.DuckDBPyConnection) -> PositionSummary:
    cells = connection.execute(_CELLS_SQL).fetchnumpy()
    on_cells = """FROM records
        WHERE score IS NOT NULL AND position >= 0 AND position < n_candidates"""
    sessions = _names(connection, f"SELECT DISTINCT session_id {on_cells} ORDER BY 1")
    reviewers = _names(connection, "SELECT reviewer FROM reviewers ORDER BY reviewer_index")
    models = _names(connection, "SELECT model FROM models ORDER BY model_index")
    sizes = connection.execute(
        """SELECT n_candidates, count(DISTINCT session_id) FROM records
           WHERE score IS NOT NULL GROUP BY n_candidates ORDER BY 1 NULLS LAST"""
    ).fetchall()

    def column(name: str) -> np.ndarray:
        return np.asarray(cells.pop(name)).reshape(-1)

    # the kinds in the fetched order, then only the two per-review arrays put in runs
    kind_columns, cell_kind = _kinds(
        [column("reviewer"), column("model"), column("size"), column("slot"), column("is_self")]
    )
    session = column("session").astype(np.int64, copy=False)
    by_session = np.argsort(session, kind="stable")  # one run per session
    return PositionSummary(
        sessions=sessions,
        reviewers=reviewers,
        models=models,
        kind_reviewer=kind_columns[0],
        kind_model=kind_columns[1],
        kind_size=kind_columns[2],
        kind_slot=kind_columns[3],
        kind_self=kind_columns[4].astype(bool),
        run_session=np.arange(sessions.size, dtype=np.int64),
        run_length=np.bincount(session, minlength=sessions.size).astype(np.int64),
        cell_kind=cell_kind[by_session],
        cell_score=np.asarray(column("score"), dtype=float)[by_session],
        size_value=np.asarray([0 if v is None else int(v) for v, _ in sizes], dtype=np.int64),
        size_null=np.asarray([v is None for v, _ in sizes], dtype=bool),
        size_sessions=np.asarray([int(n) for _, n in sizes], dtype=np.int64),
    )


def _recode(values: np.ndarray, table: np.ndarray, union: list[str]) -> np.ndarray:
    """``values`` (codes into ``table``) as codes into ``union`` (which holds ``table``)."""
    index = {name: code for code, name in enumerate(union)}
    mapping = np.asarray([index[str(name)] for name in table.tolist()], dtype=np.int64)
    return mapping[values] if values.size else values.astype(np.int64)


def _merge(saved: PositionSummary, new: PositionSummary) -> PositionSummary:
    parts = (saved, new)
    tables = {
        name: sorted({str(v) for part in parts for v in getattr(part, name).tolist()})
        for name in _TABLES
    }
    recoded = {
        field: [
            _recode(getattr(part, field), getattr(part, table), tables[table]) for part in parts
        ]
        for field, table in _CODES.items()
    }
    kind_parts = [
        [recoded["kind_reviewer"][i], recoded["kind_model"][i]]
        + [getattr(part, field).astype(np.int64) for field in KIND_COLUMNS[2:]]
        for i, part in enumerate(parts)
    ]
    kinds, inverse = _kinds(
        [np.concatenate([kind[c] for kind in kind_parts]) for c in range(len(KIND_COLUMNS))]
    )
    n_saved_kinds = saved.kind_reviewer.size
    cell_kind = np.concatenate(
        [inverse[:n_saved_kinds][saved.cell_kind], inverse[n_saved_kinds:][new.cell_kind]]
    ).astype(np.int64)
    # per size, sessions add up: the parts hold disjoint sessions
    totals: dict[tuple[bool, int], int] = {}
    for part in parts:
        for null, value, n in zip(
            part.size_null.tolist(),
            part.size_value.tolist(),
            part.size_sessions.tolist(),
            strict=True,
        ):
            key = (bool(null), 0 if null else int(value))
            totals[key] = totals.get(key, 0) + int(n)
    keys = sorted(totals)
    return PositionSummary(
        sessions=_strings(tables["sessions"]),
        reviewers=_strings(tables["reviewers"]),
        models=_strings(tables["models"]),
        kind_reviewer=kinds[0],
        kind_model=kinds[1],
        kind_size=kinds[2],
        kind_slot=kinds[3],
        kind_self=kinds[4].astype(bool),
        run_session=np.concatenate(recoded["run_session"]),
        run_length=np.concatenate([saved.run_length, new.run_length]).astype(np.int64),
        cell_kind=cell_kind,
        cell_score=np.concatenate([saved.cell_score, new.cell_score]).astype(float),
        size_value=np.asarray([value for _, value in keys], dtype=np.int64),
        size_null=np.asarray([null for null, _ in keys], dtype=bool),
        size_sessions=np.asarray([totals[key] for key in keys], dtype=np.int64),
    )


def _finish(summary: PositionSummary, significance_level: float) -> PositionBias | None:
    """:func:`~.position.position_bias`'s result, from the rebuilt arrays of its queries."""
    n_slots = modal_n_slots(
        [
            (None if null else int(value), int(n))
            for null, value, n in zip(
                summary.size_null.tolist(),
                summary.size_value.tolist(),
                summary.size_sessions.tolist(),
                strict=True,
            )
        ]
    )
    if n_slots is None:
        return None
    chosen = (summary.kind_size == n_slots)[summary.cell_kind]
    if not chosen.any():
        return None
    kind = summary.cell_kind[chosen]
    # the small per-kind tables narrowed before indexing (no full-length int64 copies);
    # the list is handed over, so its arrays are freed as they are reordered (ADR 0092)
    columns = [
        np.repeat(summary.run_session, summary.run_length)[chosen],
        summary.kind_reviewer.astype(np.int32)[kind],
        summary.kind_model.astype(np.int32)[kind],
        summary.kind_slot.astype(np.int32)[kind],
        summary.kind_self[kind],
        summary.cell_score[chosen],
    ]
    del kind, chosen
    records = take_slot_columns(n_slots, columns)
    return position_from_records(records, summary.reviewers.tolist(), significance_level)


def _fail(field: str, problem: str) -> ValueError:
    return ValueError(f"position summary: array {field!r} {problem}")


def _check_kinds(summary: PositionSummary) -> None:
    """Each array's kind and dimension (``ValueError`` naming the field)."""
    for field in _FIELDS:
        values = getattr(summary, field)
        want = (
            "U"
            if field in _TABLES
            else "b"
            if field in _BOOLS
            else "f"
            if field in _FLOATS
            else "iu"
        )
        if values.ndim != 1 or (values.size and values.dtype.kind not in want):
            raise _fail(field, f"is not a one-dimensional array of kind {want!r}")


def _check_lengths(summary: PositionSummary) -> None:
    """Arrays read together have one length, and the runs cover the reviews exactly."""
    for prefix in ("kind_", "run_", "cell_", "size_"):
        sizes = {f: getattr(summary, f).size for f in _FIELDS if f.startswith(prefix)}
        counts = list(sizes.values())
        # the most common length; on a tie, the group's first field's (a table's key column)
        common = max(counts, key=lambda size: (counts.count(size), size == counts[0]))
        for field, size in sizes.items():
            if size != common:  # the field whose length differs from most of its group's
                raise _fail(field, f"has {size} elements where its group has {common}")
    lengths = summary.run_length
    if lengths.size and int(lengths.min()) < 1:
        raise _fail("run_length", "holds a run of no reviews")
    if int(lengths.sum()) != summary.cell_kind.size:
        raise _fail("run_length", "does not add up to the number of reviews")


def _check_values(summary: PositionSummary) -> None:
    """Codes in range, tables sorted and distinct, scores finite, sizes known."""
    for table in _TABLES:
        names = getattr(summary, table)
        if names.size > 1 and not bool(np.all(names[1:] > names[:-1])):
            raise _fail(table, "is not sorted and distinct")
    bounds = {**{f: len(getattr(summary, t)) for f, t in _CODES.items()}}
    bounds["cell_kind"] = summary.kind_reviewer.size
    for field, bound in bounds.items():
        codes = getattr(summary, field)
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= bound):
            raise _fail(field, "holds a code out of range")
    if not bool(np.all(np.isfinite(summary.cell_score))):
        raise _fail("cell_score", "holds a score that is not a finite number")
    slots = summary.kind_slot
    if slots.size and (int(slots.min()) < 0 or bool(np.any(slots >= summary.kind_size))):
        raise _fail("kind_slot", "holds a slot outside its session size")
    known = summary.size_value[~summary.size_null]
    if not bool(np.all(np.isin(summary.kind_size, known))):
        raise _fail("kind_size", "holds a session size the size table does not count")
    if summary.size_sessions.size and int(summary.size_sessions.min()) < 1:
        raise _fail("size_sessions", "holds a count below one")
    keys = set(zip(summary.size_null.tolist(), summary.size_value.tolist(), strict=True))
    if len(keys) != summary.size_value.size:
        raise _fail("size_value", "lists a size twice")


class PositionSection:
    """:func:`~.position.position_bias` as an incremental section (ADR 0088)."""

    name = "position"
    version = 1

    def __init__(self, significance_level: float = 0.05) -> None:
        self.significance_level = significance_level

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> PositionSummary:
        return _summarize(connection)

    def merge(self, saved: PositionSummary, new: PositionSummary) -> PositionSummary:
        return _merge(saved, new)

    def finish(self, summary: PositionSummary) -> PositionBias | None:
        return _finish(summary, self.significance_level)

    def to_payload(self, summary: PositionSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {field: getattr(summary, field) for field in _FIELDS}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> PositionSummary:
        missing = sorted(set(_FIELDS) - set(arrays))
        if missing:
            raise ValueError(f"position summary: no array {missing[0]!r}")
        summary = PositionSummary(**{field: np.asarray(arrays[field]) for field in _FIELDS})
        _check_kinds(summary)
        _check_lengths(summary)
        _check_values(summary)
        return summary
