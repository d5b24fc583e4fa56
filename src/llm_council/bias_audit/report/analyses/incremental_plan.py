"""The incremental plan's value type and the schemas of the sessions a run summarizes.

An :class:`IncrementalPlan` says which sessions each incremental section summarizes now
and what it merges with; :func:`session_tables` builds the schemas (``fresh``, ``held``)
that hold those sessions' rows under the analysis tables' names, and
:func:`current_sessions` lists the loaded sessions with their record counts and content
digests (ADR 0073). Shared by the plan of a full load (:mod:`.incremental_runner`) and
of a tail load (:mod:`.tail_plan`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.load.analysis_database import ANALYSIS_DATABASE
from llm_council.bias_audit.report.load.resume_point import ResumePoint
from llm_council.bias_audit.report.load.session_summaries import SessionSummaries

#: the schema holding the sessions folded now (copies of, or views over, the analysis tables)
FRESH_SCHEMA = "fresh"
#: the schema holding the new sessions held back (not folded: still possibly being written)
HELD_SCHEMA = "held"
_COPIED_TABLES = ("records", "scored", "session_names")
_SHARED_TABLES = ("reviewers", "models")


@dataclass(frozen=True)
class IncrementalPlan:
    """Which sessions each incremental section summarizes now, and what it merges with.

    ``how``: ``"incremental"`` (a verified file; ``n_new`` sessions summarized),
    ``"cold"`` (every session summarized; ``reason`` says why nothing saved was used) or
    ``"off"`` (no summary file for this report: every session, nothing saved). Sessions
    held back are summarized every run and merged into the result, never saved.
    """

    how: str
    reason: str
    schema: str | None  # where the sessions to fold now are; None: none
    held_schema: str | None  # where the sessions held back are; None: none
    saved: SessionSummaries | None
    session_ids: np.ndarray  # the sessions the saved file will hold, sorted
    session_records: np.ndarray  # (sessions, 2) uint64: record count, content digest
    coverage: dict[str, Any] | None
    settings: dict[str, Any]
    n_new: int  # sessions folded now
    n_held: int = 0
    resume: ResumePoint | None = None  # saved with the file: where a tail load resumes
    #: after a tail load (ADR 0081): ``records`` holds only the new sessions, so a section
    #: whose saved summary cannot be merged must not be recomputed from the tables
    tail: bool = False
    #: the saved summaries the tail plan read and checked, by section name (read once)
    read_back: dict[str, Any] | None = None
    #: the schemas of ``schema``'s sessions in blocks, summarized one at a time and merged
    #: (a large store, ADR 0092: :mod:`.session_chunks`); empty: ``schema`` at once
    blocks: tuple[str, ...] = ()


#: the columns of ``records`` a session's content digest covers (everything an analysis reads)
_DIGESTED = (
    "reviewer, model, position, n_candidates, words, chars, score, rank, rationale_chars, "
    "review_status, is_self, scale_low, scale_high, time, similarity, fingerprint"
)


def current_sessions(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, np.ndarray]:
    """(per session sorted by id: dense index, record count, content digest; the ids).

    The digest is the sum modulo 2**64 of DuckDB's 64-bit ``hash`` of each record's
    analysed fields: the same records in any order give the same digest, and a record
    changed, added or removed changes it except with probability about 2**-64. DuckDB's
    hash may change between its versions; the saved settings name the version.
    """
    rows = connection.execute(
        f"""SELECT n.session, n.session_id, c.n_records, c.digest FROM session_names n
            JOIN (SELECT session, count(*) AS n_records,
                         (sum(hash({_DIGESTED})) % 18446744073709551616)::UBIGINT AS digest
                  FROM records GROUP BY session) c
            USING (session)"""
    ).fetchnumpy()
    ids = np.asarray(rows["session_id"], dtype=str)
    order = np.argsort(ids, kind="stable")
    table = np.column_stack(
        [
            np.asarray(rows["session"], dtype=np.uint64)[order],
            np.asarray(rows["n_records"], dtype=np.uint64)[order],
            np.asarray(rows["digest"], dtype=np.uint64)[order],
        ]
    )
    return table, ids[order]


def session_tables(
    connection: duckdb.DuckDBPyConnection, schema: str, sessions: np.ndarray, *, keep: bool
) -> None:
    """The analysis tables in ``schema``: copies of the rows of ``sessions`` (``keep``), or
    views of every other row."""
    target = f"{ANALYSIS_DATABASE}.{schema}"
    new_schema(connection, target)
    connection.execute(
        f"CREATE TABLE {target}.chosen_session AS SELECT unnest(?::INTEGER[]) AS session",
        [sessions.tolist()],
    )
    chosen = f"session {'IN' if keep else 'NOT IN'} (SELECT session FROM {target}.chosen_session)"
    filtered_tables(connection, f"{ANALYSIS_DATABASE}.main", target, chosen, copy=keep)


def new_schema(connection: duckdb.DuckDBPyConnection, target: str) -> None:
    """``target`` (``database.schema``) created empty, whatever it held."""
    connection.execute(f"DROP SCHEMA IF EXISTS {target} CASCADE")
    connection.execute(f"CREATE SCHEMA {target}")


def filtered_tables(
    connection: duckdb.DuckDBPyConnection, source: str, target: str, condition: str, *, copy: bool
) -> None:
    """``source``'s analysis tables in ``target`` (both ``database.schema``), keeping the
    rows whose ``session`` meets ``condition`` (SQL): copies (``copy``) or views. The
    reviewer and model tables are views of the whole; ``check_records``, keyed by session
    id, keeps the sessions ``target.session_names`` holds (without its own, a query in
    ``target`` would read every session's check reviews, ADR 0085)."""
    kind = "TABLE" if copy else "VIEW"
    for table in _COPIED_TABLES:
        connection.execute(
            f"CREATE {kind} {target}.{table} AS SELECT * FROM {source}.{table} WHERE {condition}"
        )
    for table in _SHARED_TABLES:
        connection.execute(f"CREATE VIEW {target}.{table} AS SELECT * FROM {source}.{table}")
    if _has_relation(connection, source, "check_records"):
        connection.execute(
            f"""CREATE {kind} {target}.check_records AS SELECT * FROM {source}.check_records
                WHERE session_id IN (SELECT session_id FROM {target}.session_names)"""
        )


def _has_relation(connection: duckdb.DuckDBPyConnection, schema: str, name: str) -> bool:
    """Does ``schema`` (``database.schema``) hold a table or view called ``name``?"""
    database, schema_name = schema.split(".")
    row = connection.execute(
        """SELECT count(*) FROM information_schema.tables
           WHERE table_catalog = ? AND table_schema = ? AND table_name = ?""",
        [database, schema_name, name],
    ).fetchone()
    return bool(row and row[0])


__all__ = [
    "FRESH_SCHEMA",
    "HELD_SCHEMA",
    "IncrementalPlan",
    "current_sessions",
    "filtered_tables",
    "new_schema",
    "session_tables",
]
