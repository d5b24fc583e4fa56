"""From ``raw_lines`` (whatever a source read) to the typed, filtered ``records`` table.

Every source (a JSONL file, a Parquet directory, PostgreSQL, Spark) first produces a
``raw_lines`` table with the columns of :data:`REPORT_COLUMNS`, a line that could not be
read being a row of NULLs. :func:`build_records` then applies the same rules to all of
them: which lines are valid, which schema versions this reader knows, which sessions are
complete, and ``--since``.

Completeness (schema version 2): every line of a session carries ``session_n_records``,
the number of lines the writer wrote for it. A session whose count of valid lines differs
(a writer killed between lines, a line lost or duplicated) is dropped whole and reported,
never pooled. Version-1 lines carry no count; their sessions are taken as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import duckdb

from llm_council.bias_audit.records.jsonl_snapshot import SCORE_NOT_A_NUMBER

# Explicit column types: DuckDB neither guesses nor widens, and a value of the wrong type
# becomes NULL, which the validity check counts as an unreadable line.
REPORT_COLUMNS = {
    "schema_version": "INTEGER",
    "session_id": "VARCHAR",
    "timestamp": "VARCHAR",
    "reviewer_id": "VARCHAR",
    "model_id": "VARCHAR",
    "position": "INTEGER",
    "n_candidates": "INTEGER",
    "response_length_chars": "BIGINT",
    "response_length_words": "BIGINT",
    "score_value": "DOUBLE",
    "score_scale": "DOUBLE[]",
    "rank": "INTEGER",
    "is_self_review": "BOOLEAN",
    "session_n_records": "INTEGER",
    # live bias checks (ADR 0024): a check review's lines go to ``check_records``
    "check_kind": "VARCHAR",
    "check_of_position": "INTEGER",
    "check_treated": "BOOLEAN",
    # issue 11 section 2: style mimicry, reasoning-chain bias, parse outcomes
    "similarity_to_own": "DOUBLE",
    "rationale_chars": "BIGINT",
    "review_status": "VARCHAR",
    # ADR 0062: the reviewer's set-up, an object (validated where it is used)
    "reviewer_fingerprint": "JSON",
}
# Every field of a record, for copies that keep the whole record (Parquet compaction).
ALL_COLUMNS = {**REPORT_COLUMNS, "council_config_hash": "VARCHAR", "query_hash": "VARCHAR"}
REQUIRED = ("session_id", "reviewer_id", "model_id", "position", "response_length_words")
# Version 2 adds ``session_n_records`` (issue 10 item 3); version 1 lines have none.
READABLE_VERSIONS = (1, 2)

VALID_LINE = " AND ".join(f"{name} IS NOT NULL" for name in REQUIRED)
KNOWN_VERSION = f"schema_version IN ({', '.join(str(v) for v in READABLE_VERSIONS)})"

#: the largest score magnitude kept: far beyond any rating scale (scores outside their
#: scale, such as 0 for a lost verdict on 1-10, are real data), yet squares and cross-products
#: of a million such scores stay far from overflow (1e308 overflowed the joint model's Wald
#: test; issue 26 item 1)
MAX_ABS_SCORE = 1e6
#: a score no analysis can use: NaN, an infinity, or beyond :data:`MAX_ABS_SCORE`
BAD_SCORE = (
    "(score_value IS NOT NULL AND (isnan(score_value) OR isinf(score_value)"
    f" OR abs(score_value) > {MAX_ABS_SCORE:.0f}))"
)
#: what identifies a record: one per (session, reviewer, candidate, review kind), at the
#: position the reviewer saw the candidate
RECORD_IDENTITY = "session_id, reviewer_id, model_id, check_kind, position"


@dataclass(frozen=True)
class RecordCounts:
    """What :func:`build_records` kept and dropped."""

    n_rows: int
    n_valid: int
    n_unknown_version: int
    n_incomplete_sessions: int
    n_incomplete_records: int
    n_records: int
    n_sessions: int
    # live bias-check lines the engine left out without analysing them (Spark: ADR 0024)
    n_check_records_ignored: int = 0
    # lines dropped for a score that is not a usable number (BAD_SCORE)
    n_bad_scores: int = 0
    # lines of sessions found more than once, dropped (drop_duplicate_records), and sessions
    n_duplicate_records: int = 0
    n_duplicate_sessions: int = 0


def bad_score_sql(connection: duckdb.DuckDBPyConnection, source: str = "raw_lines") -> str:
    """The condition of a line whose score must be dropped: :data:`BAD_SCORE`, or a
    ``score_value`` that was not a JSON number where the source could tell (JSONL)."""
    columns = {str(row[0]) for row in connection.execute(f"DESCRIBE {source}").fetchall()}
    if SCORE_NOT_A_NUMBER in columns:
        return f"({BAD_SCORE} OR coalesce({SCORE_NOT_A_NUMBER}, false))"
    return BAD_SCORE


def drop_duplicate_records(connection: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """Pool once each session of ``raw_lines`` found more than once; returns (repeated
    lines dropped, sessions concerned).

    A session appended twice (a store concatenated with itself, a replayed import) repeats
    every one of its lines: without ``session_n_records`` it would be pooled twice, and with
    it the doubled count would be blamed on a writer killed mid-session (issue 26 item 6).
    A session counts as repeated when every distinct line of it occurs the same number of
    times (two or more) and no two of its distinct lines share a record's identity
    (:data:`RECORD_IDENTITY`): lines that merely share ids (a simulated council whose
    members share one name) are left as they are. A cheap count of distinct identity
    hashes runs first; the grouping runs only when it finds a repeat. Only usable lines are kept
    (the counts of unreadable lines are taken before this runs).
    """
    usable = f"{KNOWN_VERSION} AND {VALID_LINE}"
    # distinct hashes, not identities: half the CPU (0.17 s vs 0.33 s at 1M lines); a hash
    # collision can only make it look for repeats that the exact grouping then does not find
    row = connection.execute(
        f"""SELECT count(*) - count(DISTINCT hash({RECORD_IDENTITY}))
            FROM raw_lines WHERE {usable}"""
    ).fetchone()
    if row is None or int(row[0]) == 0:
        return 0, 0
    connection.execute(
        f"""CREATE OR REPLACE TEMP TABLE distinct_lines AS
            SELECT *, count(*) AS copies FROM raw_lines WHERE {usable} GROUP BY ALL"""
    )
    connection.execute(
        f"""CREATE OR REPLACE TEMP TABLE repeated_sessions AS
            SELECT session_id, sum(copies) - count(*) AS n_extra FROM distinct_lines
            GROUP BY session_id
            HAVING min(copies) >= 2 AND min(copies) = max(copies)
               AND count(*) = count(DISTINCT ({RECORD_IDENTITY}))"""
    )
    found = connection.execute(
        "SELECT count(*), coalesce(sum(n_extra), 0) FROM repeated_sessions"
    ).fetchone()
    n_sessions, n_extra = (int(found[0]), int(found[1])) if found is not None else (0, 0)
    if n_sessions:
        connection.execute(
            f"""CREATE OR REPLACE TABLE deduplicated_lines AS
                SELECT * EXCLUDE (copies) FROM distinct_lines
                WHERE session_id IN (SELECT session_id FROM repeated_sessions)
                UNION ALL BY NAME
                SELECT * FROM raw_lines WHERE {usable}
                  AND session_id NOT IN (SELECT session_id FROM repeated_sessions)"""
        )
        drop_raw_lines(connection)
        connection.execute("ALTER TABLE deduplicated_lines RENAME TO raw_lines")
    connection.execute("DROP TABLE distinct_lines")
    connection.execute("DROP TABLE repeated_sessions")
    return n_extra, n_sessions


def create_session_check(connection: duckdb.DuckDBPyConnection, source: str) -> None:
    """``session_check(session_id, n_lines, complete)`` over the usable lines of ``source``."""
    connection.execute(
        f"""CREATE OR REPLACE TEMP TABLE session_check AS
            SELECT session_id, count(*) AS n_lines,
                   count(session_n_records) = 0
                   OR (count(session_n_records) = count(*)
                       AND min(session_n_records) = count(*)
                       AND max(session_n_records) = count(*)) AS complete
            FROM {source} WHERE {KNOWN_VERSION} AND {VALID_LINE}
            GROUP BY session_id"""
    )


def incomplete_counts(connection: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(sessions, lines) that ``session_check`` found incomplete."""
    row = connection.execute(
        """SELECT count(*), coalesce(sum(n_lines), 0)
           FROM session_check WHERE NOT complete"""
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


#: a line of an observational review, not of a live bias check (ADR 0024)
OBSERVATIONAL = "check_kind IS NULL"

KEEP_COMPLETE = (
    f"{KNOWN_VERSION} AND {VALID_LINE} AND session_id IN "
    "(SELECT session_id FROM session_check WHERE complete)"
)


def since_filter_sql(
    since: datetime | None, until: datetime | None = None
) -> tuple[str, list[object]]:
    """The ``--since`` / ``--until`` condition on ``timestamp`` and its parameters
    (``since <= time < until``; TRUE without either)."""
    conditions: list[str] = []
    parameters: list[object] = []
    if since is not None:
        conditions.append("TRY_CAST(timestamp AS TIMESTAMPTZ) >= CAST(? AS TIMESTAMPTZ)")
        parameters.append(since.astimezone(UTC).isoformat())
    if until is not None:
        conditions.append("TRY_CAST(timestamp AS TIMESTAMPTZ) < CAST(? AS TIMESTAMPTZ)")
        parameters.append(until.astimezone(UTC).isoformat())
    return (" AND ".join(conditions) or "TRUE"), parameters


#: a line's fingerprint as the 64-bit key ``records.fingerprint`` holds (8 bytes a record,
#: where the text is some 370); :func:`create_fingerprint_table` maps keys to texts
FINGERPRINT_KEY = (
    "CASE WHEN reviewer_fingerprint IS NOT NULL THEN hash(reviewer_fingerprint::VARCHAR) END"
)
#: a fingerprint text longer than this is hostile or broken: never read (ADR 0062)
MAX_FINGERPRINT_CHARS = 2048


def create_fingerprint_table(connection: duckdb.DuckDBPyConnection) -> None:
    """``reviewer_fingerprints``: each distinct fingerprint of ``raw_lines`` by its key
    (:data:`FINGERPRINT_KEY`); texts past :data:`MAX_FINGERPRINT_CHARS` are left out."""
    connection.execute(
        f"""CREATE OR REPLACE TABLE reviewer_fingerprints AS
            SELECT DISTINCT {FINGERPRINT_KEY} AS fingerprint,
                   reviewer_fingerprint::VARCHAR AS fingerprint_text
            FROM raw_lines
            WHERE reviewer_fingerprint IS NOT NULL
              AND length(reviewer_fingerprint::VARCHAR) <= {MAX_FINGERPRINT_CHARS}"""
    )


def create_records_table(
    connection: duckdb.DuckDBPyConnection,
    lines_sql: str,
    sessions_sql: str,
    parameters: list[object],
    *,
    ordered: bool = False,
) -> None:
    """``records``, the analyses' table: the lines ``lines_sql`` selects, in the sessions
    ``sessions_sql`` lists (one ``session_id`` per row).

    Sessions get dense indices in ``session_id`` order, so every source and engine numbers
    them alike (the bootstrap resamples by index). With ``ordered`` the rows are stored
    sorted on every column (``ORDER BY ALL``): the same store gives the same row order on
    every run, where DuckDB's parallel join leaves it to thread timing (a reproducible
    report, :func:`~llm_council.bias_audit.report.load.loading.load_store`).
    """
    connection.execute(
        f"""CREATE TABLE records AS
            WITH sessions AS (
                SELECT session_id,
                       (row_number() OVER (ORDER BY session_id) - 1)::INTEGER AS session
                FROM ({sessions_sql}))
            SELECT session, session_id, reviewer_id AS reviewer, model_id AS model,
                   position, n_candidates,
                   response_length_words AS words, response_length_chars AS chars,
                   score_value AS score, rank,
                   rationale_chars, review_status,
                   coalesce(is_self_review, reviewer_id = model_id) AS is_self,
                   coalesce(score_scale[1], 1.0) AS scale_low,
                   coalesce(score_scale[2], 10.0) AS scale_high,
                   TRY_CAST(timestamp AS TIMESTAMPTZ) AS time,
                   similarity_to_own AS similarity,
                   {FINGERPRINT_KEY} AS fingerprint
            FROM ({lines_sql}) AS kept JOIN sessions USING (session_id)
            {"ORDER BY ALL" if ordered else ""}""",
        parameters,
    )


def count_records(connection: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(records, sessions) in ``records``."""
    sizes = connection.execute("SELECT count(*), count(DISTINCT session) FROM records").fetchone()
    assert sizes is not None
    return int(sizes[0]), int(sizes[1])


def split_check_records(
    connection: duckdb.DuckDBPyConnection, since_sql: str, since_parameters: list[object]
) -> None:
    """Copy the lines of live bias-check reviews (ADR 0024) from ``raw_lines`` into
    ``check_records``; the causal checks section pairs them with ``records``, which leaves
    them out (:data:`OBSERVATIONAL`), so no observational estimate ever sees a check
    review. A session's completeness counts them (its ``session_n_records`` does), so this
    runs after ``session_check`` is built. ``raw_lines`` may be a view, so nothing is
    deleted from it."""
    connection.execute(
        f"""CREATE OR REPLACE TABLE check_records AS SELECT * FROM raw_lines
            WHERE check_kind IS NOT NULL AND {KEEP_COMPLETE} AND {since_sql}""",
        since_parameters,
    )


def drop_raw_lines(connection: duckdb.DuckDBPyConnection) -> None:
    """Drop ``raw_lines``, a table or (a Parquet store) a view over the files."""
    row = connection.execute(
        "SELECT count(*) FROM duckdb_views() WHERE view_name = 'raw_lines' AND NOT internal"
    ).fetchone()
    connection.execute(f"DROP {'VIEW' if row and row[0] else 'TABLE'} raw_lines")


#: per session id, its usable lines as read (before repeated sessions are pooled once):
#: a session's lines on both sides of a resume offset are found by comparing these counts
LOADED_SESSIONS = "loaded_sessions"


def create_loaded_sessions(connection: duckdb.DuckDBPyConnection) -> None:
    """``loaded_sessions(session_id, n_lines)`` over the usable lines of ``raw_lines``."""
    connection.execute(
        f"""CREATE OR REPLACE TABLE {LOADED_SESSIONS} AS
            SELECT session_id, count(*) AS n_lines FROM raw_lines
            WHERE {KNOWN_VERSION} AND {VALID_LINE} GROUP BY session_id"""
    )


def build_records(
    connection: duckdb.DuckDBPyConnection,
    *,
    since: datetime | None,
    until: datetime | None = None,
    ordered: bool = False,
    keep_sessions: bool = False,
) -> RecordCounts:
    """Create ``records`` (the analyses' table) from ``raw_lines``, then drop ``raw_lines``
    (``ordered``: :func:`create_records_table`; ``keep_sessions``: also keep
    :data:`LOADED_SESSIONS`, for the tail load of ADR 0081)."""
    counts = connection.execute(
        f"""SELECT count(*),
                   count(*) FILTER (WHERE schema_version IS NOT NULL AND {VALID_LINE}),
                   count(*) FILTER (WHERE schema_version IS NOT NULL AND {VALID_LINE}
                                    AND NOT {KNOWN_VERSION})
            FROM raw_lines"""
    ).fetchone()
    assert counts is not None
    n_rows, n_valid, n_unknown_version = (int(value) for value in counts)
    if keep_sessions:
        create_loaded_sessions(connection)
    n_duplicate_records, n_duplicate_sessions = drop_duplicate_records(connection)
    create_session_check(connection, "raw_lines")
    n_incomplete_sessions, n_incomplete_records = incomplete_counts(connection)
    since_sql, since_parameters = since_filter_sql(since, until)
    # Number the complete sessions from session_check (one row per session) and join the
    # lines to them: half the work of numbering DISTINCT session_id over the kept lines.
    sessions_sql = "SELECT session_id FROM session_check WHERE complete"
    if since is not None or until is not None:
        sessions_sql += f" AND session_id IN (SELECT session_id FROM raw_lines WHERE {since_sql})"
    bad_score = bad_score_sql(connection)
    row = connection.execute(
        f"SELECT count(*) FROM raw_lines WHERE {KEEP_COMPLETE} AND {since_sql} AND {bad_score}",
        since_parameters,
    ).fetchone()
    n_bad_scores = int(row[0]) if row is not None else 0
    split_check_records(connection, f"{since_sql} AND NOT {bad_score}", since_parameters)
    create_records_table(
        connection,
        f"SELECT * FROM raw_lines WHERE {KNOWN_VERSION} AND {VALID_LINE} AND {OBSERVATIONAL} "
        f"AND {since_sql} AND NOT {bad_score}",
        sessions_sql,
        [*since_parameters, *since_parameters],
        ordered=ordered,
    )
    create_fingerprint_table(connection)  # ADR 0062
    drop_raw_lines(connection)
    connection.execute("DROP TABLE session_check")
    n_records, n_sessions = count_records(connection)
    return RecordCounts(
        n_rows=n_rows,
        n_valid=n_valid,
        n_unknown_version=n_unknown_version,
        n_incomplete_sessions=n_incomplete_sessions,
        n_incomplete_records=n_incomplete_records,
        n_records=n_records,
        n_sessions=n_sessions,
        n_bad_scores=n_bad_scores,
        n_duplicate_records=n_duplicate_records,
        n_duplicate_sessions=n_duplicate_sessions,
    )
