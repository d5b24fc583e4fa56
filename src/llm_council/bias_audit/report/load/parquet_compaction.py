"""Compact the bias-audit store into Parquet, partitioned by day (hive layout).

``DIR/date=YYYY-MM-DD/part-0.parquet`` holds every compacted record whose session ended
on that day (UTC); a session's records all carry its end time, so a session never
straddles two partitions and ``--since`` can skip whole days without opening them.

Idempotent: a session already in its day's file is never written again, so running the
compaction twice, or on a store that grew, leaves each session exactly once. Only days
that gain sessions are rewritten: the day's file and the new sessions are written to a
hidden temporary file in the partition, which then replaces ``part-0.parquet`` in one
``os.replace`` (a reader, or a crash, sees the old file or the new one, never half).
Incomplete sessions (schema version 2 lines short of ``session_n_records``, e.g. a
session still being written) are not compacted: a later run picks them up once whole.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from llm_council.bias_audit.records.jsonl_snapshot import read_jsonl_snapshot
from llm_council.bias_audit.report.load.raw_records import (
    ALL_COLUMNS,
    KEEP_COMPLETE,
    KNOWN_VERSION,
    VALID_LINE,
    bad_score_sql,
    create_session_check,
    drop_duplicate_records,
    incomplete_counts,
)
from llm_council.bias_audit.report.load.record_sources import (
    PARTITION_PREFIX,
    is_postgres_url,
    read_postgres,
    redact_url,
)
from llm_council.errors import RecordError

PART_NAME = "part-0.parquet"
LOCK_NAME = ".compact.lock"
LOCK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction wrote and what it left in the source store."""

    out_dir: str
    n_sessions_written: int
    n_records_written: int
    days_written: tuple[str, ...]
    n_sessions_already_compacted: int
    n_incomplete_sessions: int
    n_incomplete_records: int
    n_unreadable: int
    n_unknown_version: int
    n_undated: int
    n_bad_scores: int = 0  # records whose score is not a usable number (BAD_SCORE)
    n_duplicate_records: int = 0  # lines of sessions found more than once, compacted once
    n_stale_temporaries_removed: int = 0  # left by a compaction that was killed


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_stale_temporaries(root: Path) -> int:
    """Delete the temporary day files (``.part-0.parquet.PID.tmp``) of compactions that
    were killed (issue 26 item 7); returns how many.

    Runs under the directory's lock, so no other compaction of ``root`` is writing; a file
    whose PID is this process or a live process is left alone all the same.
    """
    removed = 0
    prefix, suffix = f".{PART_NAME}.", ".tmp"
    for temporary in root.glob(f"{PARTITION_PREFIX}*/{prefix}*{suffix}"):
        pid_text = temporary.name.removeprefix(prefix).removesuffix(suffix)
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid() or _process_alive(pid):
            continue
        temporary.unlink(missing_ok=True)
        removed += 1
    return removed


def _read_source(connection: duckdb.DuckDBPyConnection, store: str) -> None:
    """Fill ``raw_lines`` (every record field, a row per line) from ``store``."""
    if is_postgres_url(store):
        read_postgres(connection, store, None, ALL_COLUMNS)
        return
    path = Path(store).expanduser()
    if not path.is_file():
        raise RecordError(f"no JSONL bias-audit store at {str(path)!r} to compact")
    read_jsonl_snapshot(connection, path, ALL_COLUMNS)


def _day_file(out_dir: Path, day: str) -> Path:
    return out_dir / f"{PARTITION_PREFIX}{day}" / PART_NAME


def _existing_sessions(connection: duckdb.DuckDBPyConnection, files: list[Path]) -> None:
    """``compacted(session_id)``: the sessions already in the given day files."""
    connection.execute("CREATE OR REPLACE TEMP TABLE compacted (session_id VARCHAR)")
    if files:
        connection.execute(
            "INSERT INTO compacted SELECT DISTINCT session_id FROM read_parquet(?)",
            [[str(file) for file in files]],
        )


def _write_day(connection: duckdb.DuckDBPyConnection, target: Path, day: str) -> None:
    """Rewrite one day's file as its old records plus the new sessions of that day."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    columns = ", ".join(ALL_COLUMNS)
    old = f"SELECT {columns} FROM read_parquet(?) UNION ALL " if target.exists() else ""
    parameters: list[object] = [str(target)] if target.exists() else []
    parameters.append(day)
    try:
        connection.execute(
            f"""COPY ({old}SELECT {columns} FROM fresh WHERE day = ?
                      ORDER BY session_id, reviewer_id, model_id)
                TO '{str(temporary).replace("'", "''")}' (FORMAT parquet, COMPRESSION zstd)""",
            parameters,
        )
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temporary, target)
    except BaseException:
        # a full disk or an interrupt: the day keeps its old file, no half file is left
        temporary.unlink(missing_ok=True)
        raise


def compact_store(store: str | Path, out_dir: str | Path) -> CompactionResult:
    """Append the complete sessions of ``store`` not yet in ``out_dir`` to its day files."""
    root = Path(out_dir).expanduser()
    if root.exists() and not root.is_dir():
        raise RecordError(f"--out {str(root)!r} exists and is not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise RecordError(f"cannot create --out {str(root)!r}: {error.strerror}") from None
    try:
        with FileLock(str(root / LOCK_NAME), timeout=LOCK_TIMEOUT_S):
            return _compact_locked(str(store), root)
    except Timeout:
        raise RecordError(
            f"another bias-compact holds {str(root / LOCK_NAME)!r} (waited {LOCK_TIMEOUT_S:.0f} s)"
        ) from None


def _compact_locked(store: str, root: Path) -> CompactionResult:
    connection = duckdb.connect()
    try:
        connection.execute("SET TimeZone = 'UTC'")
        connection.execute("SET enable_progress_bar = false")
        n_stale = remove_stale_temporaries(root)
        _read_source(connection, store)
        row = connection.execute(
            f"""SELECT count(*) FILTER (WHERE schema_version IS NULL OR NOT ({VALID_LINE})),
                       count(*) FILTER (WHERE schema_version IS NOT NULL AND {VALID_LINE}
                                        AND NOT {KNOWN_VERSION})
                FROM raw_lines"""
        ).fetchone()
        assert row is not None
        n_unreadable, n_unknown_version = int(row[0]), int(row[1])
        n_duplicates, _ = drop_duplicate_records(connection)
        create_session_check(connection, "raw_lines")
        n_incomplete_sessions, n_incomplete_records = incomplete_counts(connection)
        bad_score = bad_score_sql(connection)
        bad = connection.execute(
            f"SELECT count(*) FROM raw_lines WHERE {KEEP_COMPLETE} AND {bad_score}"
        ).fetchone()
        connection.execute(
            f"""CREATE TEMP TABLE dated AS
                SELECT *, strftime(CAST(TRY_CAST(timestamp AS TIMESTAMPTZ) AS DATE), '%Y-%m-%d')
                          AS day
                FROM raw_lines WHERE {KEEP_COMPLETE} AND NOT {bad_score}"""
        )
        connection.execute("DROP TABLE raw_lines")
        undated = connection.execute("SELECT count(*) FROM dated WHERE day IS NULL").fetchone()
        assert undated is not None
        days = [
            str(day)
            for (day,) in connection.execute(
                "SELECT DISTINCT day FROM dated WHERE day IS NOT NULL ORDER BY day"
            ).fetchall()
        ]
        _existing_sessions(
            connection, [_day_file(root, day) for day in days if _day_file(root, day).exists()]
        )
        connection.execute(
            # a view, not a copy: the day files are written from ``dated`` directly
            """CREATE TEMP VIEW fresh AS
               SELECT * FROM dated
               WHERE day IS NOT NULL AND session_id NOT IN (SELECT session_id FROM compacted)"""
        )
        summary = connection.execute(
            """SELECT count(DISTINCT session_id), count(*),
                      (SELECT count(DISTINCT session_id) FROM dated
                       WHERE session_id IN (SELECT session_id FROM compacted))
               FROM fresh"""
        ).fetchone()
        assert summary is not None
        new_days = [
            str(day)
            for (day,) in connection.execute(
                "SELECT DISTINCT day FROM fresh ORDER BY day"
            ).fetchall()
        ]
        for day in new_days:
            _write_day(connection, _day_file(root, day), day)
    except duckdb.Error as error:
        raise RecordError(
            f"cannot compact {redact_url(store)!r} into {str(root)!r}: {error}"
        ) from None
    finally:
        connection.close()
    return CompactionResult(
        out_dir=str(root),
        n_sessions_written=int(summary[0]),
        n_records_written=int(summary[1]),
        days_written=tuple(new_days),
        n_sessions_already_compacted=int(summary[2]),
        n_incomplete_sessions=n_incomplete_sessions,
        n_incomplete_records=n_incomplete_records,
        n_unreadable=n_unreadable,
        n_unknown_version=n_unknown_version,
        n_undated=int(undated[0]),
        n_bad_scores=int(bad[0]) if bad is not None else 0,
        n_duplicate_records=n_duplicates,
        n_stale_temporaries_removed=n_stale,
    )
