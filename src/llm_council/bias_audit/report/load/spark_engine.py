"""The report's scan on Apache Spark: ``bias-report --engine spark --store PARQUET_DIR``.

Spark reads the day partitions (pruning days before ``--since`` itself), applies the same
rules as the DuckDB path (:mod:`..raw_records`: valid lines, known schema versions,
complete sessions, ``--since``) in Spark SQL, and returns one row per kept session: its
score matrix as a list of cells (reviewer, candidate, position, length, score, rank).
Only those per-session rows and five counts cross into Python; the analyses then run on
them unchanged, in DuckDB, so both engines report the same numbers.

The SparkSession is built once per process (``local[*]`` unless ``spark.master`` is set,
e.g. through ``PYSPARK_SUBMIT_ARGS`` or ``spark-defaults.conf``) and reused.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.load.raw_records import (
    READABLE_VERSIONS,
    REQUIRED,
    RecordCounts,
    count_records,
    create_records_table,
)
from llm_council.errors import ConfigError, RecordError
from llm_council.infra.install_hints import extra_install_hint

_KNOWN = f"schema_version IN ({', '.join(str(v) for v in READABLE_VERSIONS)})"
_VALID = " AND ".join(f"{name} IS NOT NULL" for name in REQUIRED)
# The cells of a session's score matrix, in the order they are collected and unpacked.
_CELL_FIELDS = {
    "reviewer_id": object,
    "model_id": object,
    "position": np.int32,
    "n_candidates": object,
    "response_length_chars": object,
    "response_length_words": np.int64,
    "score_value": object,
    "scale_low": object,
    "scale_high": object,
    "rank": object,
    "is_self_review": object,
    "timestamp": object,
    # issue 11 section 2 (optional record fields): style mimicry, reasoning, parse outcomes
    "similarity_to_own": object,
    "rationale_chars": object,
    "review_status": object,
}
#: optional record fields a Parquet store compacted before they existed does not have
_OPTIONAL_FIELDS = {
    "similarity_to_own": "double",
    "rationale_chars": "bigint",
    "review_status": "string",
    "check_kind": "string",
}
_session: Any = None


def _spark_session() -> Any:
    """The process's SparkSession (built on first use; 10-20 s for a local JVM)."""
    global _session
    if _session is not None:
        return _session
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigError(
            "--engine spark needs pyspark: " + extra_install_hint("spark") + " (and a Java 17+ "
            "runtime, e.g. Debian's default-jre-headless)"
        ) from None
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ConfigError(
            "--engine spark needs a Java runtime: install one (Debian: default-jre-headless) "
            "or set JAVA_HOME"
        )
    builder = (
        SparkSession.builder.appName("llm-council bias-report")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
    )
    if "--master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        # local mode: bind to loopback, so a container whose hostname does not resolve works
        builder = (
            builder.master("local[*]")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    return _session


def _counts_sql() -> str:
    return f"""
        WITH usable AS (SELECT * FROM raw_lines WHERE {_KNOWN} AND {_VALID}),
        session_check AS (
            SELECT session_id, count(*) AS n_lines,
                   count(session_n_records) = 0
                   OR (count(session_n_records) = count(*)
                       AND min(session_n_records) = count(*)
                       AND max(session_n_records) = count(*)) AS complete
            FROM usable GROUP BY session_id)
        SELECT (SELECT count(*) FROM raw_lines) AS n_rows,
               (SELECT count(*) FROM raw_lines
                WHERE schema_version IS NOT NULL AND {_VALID}) AS n_valid,
               (SELECT count(*) FROM raw_lines
                WHERE schema_version IS NOT NULL AND {_VALID} AND NOT ({_KNOWN})) AS n_unknown,
               (SELECT count(*) FROM session_check WHERE NOT complete) AS n_incomplete_sessions,
               (SELECT coalesce(sum(n_lines), 0) FROM session_check WHERE NOT complete)
                   AS n_incomplete_records"""


def _sessions_sql(since_sql: str) -> str:
    cells = ", ".join(
        f"{name}"
        if name not in ("scale_low", "scale_high")
        # try_element_at: NULL, not an ANSI-mode error, for a short or missing scale
        else f"try_element_at(score_scale, {1 if name == 'scale_low' else 2}) AS {name}"
        for name in _CELL_FIELDS
    )
    return f"""
        WITH usable AS (SELECT * FROM raw_lines WHERE {_KNOWN} AND {_VALID}),
        complete AS (
            SELECT session_id FROM usable GROUP BY session_id
            HAVING count(session_n_records) = 0
                OR (count(session_n_records) = count(*)
                    AND min(session_n_records) = count(*)
                    AND max(session_n_records) = count(*)))
        SELECT session_id, collect_list(struct({cells})) AS cells
        FROM usable LEFT SEMI JOIN complete USING (session_id)
        WHERE {since_sql} AND check_kind IS NULL  -- live bias checks are not observations
        GROUP BY session_id"""


def _cells_to_columns(rows: list[Any]) -> dict[str, np.ndarray]:
    """The per-session rows as one column array per record field (for DuckDB to scan)."""
    columns: dict[str, list[Any]] = {name: [] for name in ("session_id", *_CELL_FIELDS)}
    for row in rows:
        for cell in row["cells"]:
            columns["session_id"].append(row["session_id"])
            for name in _CELL_FIELDS:
                columns[name].append(cell[name])
    kinds = {"session_id": object, **_CELL_FIELDS}
    return {name: np.asarray(values, dtype=kinds[name]) for name, values in columns.items()}


def spark_records(
    connection: duckdb.DuckDBPyConnection,
    root: Path,
    *,
    since: datetime | None,
    until: datetime | None = None,
) -> RecordCounts:
    """Scan the Parquet store at ``root`` on Spark and build ``records`` in ``connection``."""
    spark = _spark_session()
    try:
        frame = spark.read.parquet(str(root))
    except Exception as error:  # Spark raises its own AnalysisException hierarchy
        raise RecordError(f"Spark cannot read the Parquet store {str(root)!r}: {error}") from None
    since_sql = "TRUE"
    if since is not None:
        cutoff = since.astimezone(UTC)
        # the partition column first (Spark prunes whole days), then the exact time
        moment = cutoff.strftime("%Y-%m-%d %H:%M:%S.%f")
        since_sql = (
            f"date >= DATE '{cutoff.date().isoformat()}' AND "
            f"try_cast(timestamp AS TIMESTAMP) >= TIMESTAMP '{moment}'"
        )
    if until is not None:
        end = until.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
        since_sql += f" AND try_cast(timestamp AS TIMESTAMP) < TIMESTAMP '{end}'"
    for name, spark_type in _OPTIONAL_FIELDS.items():
        if name not in frame.columns:
            frame = frame.selectExpr("*", f"CAST(NULL AS {spark_type}) AS {name}")
    frame.createOrReplaceTempView("raw_lines")
    try:
        count_row = spark.sql(_counts_sql()).collect()[0]
        sessions = spark.sql(_sessions_sql(since_sql)).collect()
        n_check = spark.sql(
            "SELECT count(*) AS n FROM raw_lines WHERE check_kind IS NOT NULL"
        ).collect()[0]["n"]
    except Exception as error:  # a bad column type or a missing column: Spark's own errors
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise RecordError(
            f"Spark cannot read the Parquet store {str(root)!r}: {first_line}"
        ) from None
    columns = _cells_to_columns(sessions)
    connection.register("spark_cells", columns)
    create_records_table(
        connection,
        """SELECT session_id, reviewer_id, model_id, position,
                  CAST(n_candidates AS INTEGER) AS n_candidates,
                  CAST(response_length_chars AS BIGINT) AS response_length_chars,
                  response_length_words,
                  CAST(score_value AS DOUBLE) AS score_value,
                  [CAST(scale_low AS DOUBLE), CAST(scale_high AS DOUBLE)] AS score_scale,
                  CAST(rank AS INTEGER) AS rank,
                  CAST(is_self_review AS BOOLEAN) AS is_self_review,
                  CAST(timestamp AS VARCHAR) AS timestamp,
                  CAST(similarity_to_own AS DOUBLE) AS similarity_to_own,
                  CAST(rationale_chars AS BIGINT) AS rationale_chars,
                  CAST(review_status AS VARCHAR) AS review_status,
                  NULL::JSON AS reviewer_fingerprint  -- not collected by Spark (ADR 0062)
           FROM spark_cells""",
        "SELECT DISTINCT session_id FROM spark_cells",
        [],
    )
    connection.unregister("spark_cells")
    n_records, n_sessions = count_records(connection)
    return RecordCounts(
        n_rows=int(count_row["n_rows"]),
        n_valid=int(count_row["n_valid"]),
        n_unknown_version=int(count_row["n_unknown"]),
        n_incomplete_sessions=int(count_row["n_incomplete_sessions"]),
        n_incomplete_records=int(count_row["n_incomplete_records"]),
        n_records=n_records,
        n_sessions=n_sessions,
        n_check_records_ignored=int(n_check),
    )
