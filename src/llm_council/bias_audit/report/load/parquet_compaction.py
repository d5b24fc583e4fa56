"""Compact the bias-audit store into Parquet, partitioned by day (hive layout).

``DIR/date=YYYY-MM-DD/part-N.parquet`` files hold every compacted record whose session
ended on that day (UTC); a session's records all carry its end time, so a session never
straddles two partitions and ``--since`` can skip whole days without opening them.

Idempotent: a session already in one of its day's files is never written again, so
running the compaction twice, or on a store that grew, leaves each session exactly once.
Append-only (ADR 0093): a day that gains sessions gets a new part file holding only them
(:mod:`.parquet_parts`: a hidden temporary file, fsynced, renamed into place); the files
already there are never touched, so the report's tail load (ADR 0081) reads only the new
file. A day that would hold more than :data:`MAX_PARTS_PER_DAY` parts is merged instead:
its parts and its new sessions into one new file, then the old parts removed (a reader in
between sees those sessions twice, and the loader pools them once with a warning); the
same run merges every other day holding more than one part.
Incomplete sessions (schema version 2 lines short of ``session_n_records``, e.g. a
session still being written) are not compacted: a later run picks them up once whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
from filelock import FileLock, Timeout

from llm_council.bias_audit.records.jsonl_snapshot import read_jsonl_snapshot
from llm_council.bias_audit.report.load.parquet_parts import (
    next_part,
    numbered_parts,
    part_number,
    remove_stale_temporaries,
    sync_directory,
    write_part,
)
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
    PART_GLOB,
    PARTITION_PREFIX,
    is_postgres_url,
    read_postgres,
    redact_url,
)
from llm_council.errors import RecordError

LOCK_NAME = ".compact.lock"
LOCK_TIMEOUT_S = 60.0
#: a day that would hold more part files is merged into one instead, and so is every
#: other day holding more than one (ADR 0093): hourly compaction merges once a day, and
#: a reader opens at most 16 files of any day
MAX_PARTS_PER_DAY = 16
#: the row order within every part file
ROW_ORDER = "ORDER BY session_id, reviewer_id, model_id"


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
    #: days whose part files were merged into one (more than MAX_PARTS_PER_DAY, or the
    #: rest of a merge a killed compaction had begun)
    days_merged: tuple[str, ...] = ()


def _read_source(connection: duckdb.DuckDBPyConnection, store: str) -> None:
    """Fill ``raw_lines`` (every record field, a row per line) from ``store``."""
    if is_postgres_url(store):
        read_postgres(connection, store, None, ALL_COLUMNS)
        return
    path = Path(store).expanduser()
    if not path.is_file():
        raise RecordError(f"no JSONL bias-audit store at {str(path)!r} to compact")
    read_jsonl_snapshot(connection, path, ALL_COLUMNS)


def _day_directory(out_dir: Path, day: str) -> Path:
    return out_dir / f"{PARTITION_PREFIX}{day}"


def _existing_sessions(connection: duckdb.DuckDBPyConnection, root: Path, days: list[str]) -> None:
    """``compacted_parts(session_id, filename)``: the sessions in every part file of
    ``days``, the files readers read (``part-*.parquet``, numbered or not)."""
    files = [
        str(file)
        for day in days
        for file in sorted(_day_directory(root, day).glob(PART_GLOB))
        if file.is_file()
    ]
    connection.execute(
        "CREATE OR REPLACE TEMP TABLE compacted_parts (session_id VARCHAR, filename VARCHAR)"
    )
    if files:
        connection.execute(
            """INSERT INTO compacted_parts
               SELECT DISTINCT session_id, filename
               FROM read_parquet(?, filename = true, union_by_name = true)
               WHERE session_id IS NOT NULL""",
            [files],
        )


def _finish_killed_merges(
    connection: duckdb.DuckDBPyConnection, root: Path, days: list[str]
) -> list[str]:
    """Remove the numbered parts whose every session is also in a later part of their day,
    what a merge killed between its rename and its unlinks leaves; returns their days.

    An appended part holds only sessions no other part holds, so it is never one of them.
    """
    numbered = [
        (str(part), day, part_number(part))
        for day in days
        for part in numbered_parts(_day_directory(root, day))
    ]
    if len(numbered) < 2:
        return []
    connection.execute(
        "CREATE OR REPLACE TEMP TABLE numbered (filename VARCHAR, day VARCHAR, number BIGINT)"
    )
    connection.executemany("INSERT INTO numbered VALUES (?, ?, ?)", numbered)
    superseded = connection.execute(
        """WITH per_file AS (
               SELECT session_id, filename, day, number
               FROM compacted_parts JOIN numbered USING (filename)),
           newest AS (
               SELECT session_id, day, max(number) AS newest FROM per_file GROUP BY ALL)
           SELECT filename, day FROM per_file JOIN newest USING (session_id, day)
           GROUP BY filename, day HAVING bool_and(number < newest)
           ORDER BY filename"""
    ).fetchall()
    if not superseded:
        return []
    for filename, _day in superseded:
        Path(str(filename)).unlink()
    for day in sorted({str(day) for _, day in superseded}):
        sync_directory(_day_directory(root, day))
    connection.execute(
        "DELETE FROM compacted_parts WHERE filename IN (SELECT unnest(?))",
        [[str(filename) for filename, _ in superseded]],
    )
    return sorted({str(day) for _, day in superseded})


def _parts_select(connection: duckdb.DuckDBPyConnection, parts: list[Path]) -> str:
    """The columns of :data:`ALL_COLUMNS` from ``parts`` (NULL where a part of an older
    version has none, ADR 0062), for ``read_parquet(?, union_by_name = true)``."""
    present = {
        str(row[0])
        for row in connection.execute(
            "DESCRIBE SELECT * FROM read_parquet(?, union_by_name = true)",
            [[str(part) for part in parts]],
        ).fetchall()
    }
    return ", ".join(
        f"CAST({name} AS {kind}) AS {name}" if name in present else f"NULL::{kind} AS {name}"
        for name, kind in ALL_COLUMNS.items()
    )


def _days_to_merge(root: Path, days: list[str], new_days: list[str]) -> set[str]:
    """The days this run merges into one file each: none, unless a day that gains sessions
    would hold more than :data:`MAX_PARTS_PER_DAY` parts; then every day that would hold
    more than one. The next report reads every file once anyway (a saved file is gone),
    so the other days' merges cost it nothing, and past days stop piling up parts."""
    gaining = set(new_days)
    n_parts = {day: len(numbered_parts(_day_directory(root, day))) for day in days}
    if not any(n_parts[day] >= MAX_PARTS_PER_DAY for day in gaining):
        return set()
    return {day for day in days if n_parts[day] + (day in gaining) > 1}


def _append_day(connection: duckdb.DuckDBPyConnection, root: Path, day: str) -> None:
    """Write the new sessions of ``day`` as its next part file."""
    directory = _day_directory(root, day)
    query = f"SELECT {', '.join(ALL_COLUMNS)} FROM fresh WHERE day = ? {ROW_ORDER}"
    write_part(connection, query, [day], next_part(directory))


def _merge_day(connection: duckdb.DuckDBPyConnection, root: Path, day: str) -> None:
    """Write the parts of ``day`` and its new sessions as one new part, then remove the old
    parts.

    The merged file is renamed into place before the old parts are removed: a reader in
    between sees their sessions twice, which the loader pools once with a warning
    (:func:`~.raw_records.drop_duplicate_records`), never a session missing. A run killed
    in between leaves the same, which the next run finishes (:func:`_finish_killed_merges`).
    """
    directory = _day_directory(root, day)
    parts = numbered_parts(directory)
    old = f"SELECT {_parts_select(connection, parts)} FROM read_parquet(?, union_by_name = true)"
    fresh = f"SELECT {', '.join(ALL_COLUMNS)} FROM fresh WHERE day = ?"
    parameters: list[object] = [[str(part) for part in parts], day]
    write_part(connection, f"{old} UNION ALL {fresh} {ROW_ORDER}", parameters, next_part(directory))
    for part in parts:
        part.unlink()
    sync_directory(directory)


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
        _existing_sessions(connection, root, days)
        days_merged = _finish_killed_merges(connection, root, days)
        connection.execute(
            # a view, not a copy: the day files are written from ``dated`` directly
            """CREATE TEMP VIEW fresh AS
               SELECT * FROM dated
               WHERE day IS NOT NULL
                 AND session_id NOT IN (SELECT session_id FROM compacted_parts)"""
        )
        summary = connection.execute(
            """SELECT count(DISTINCT session_id), count(*),
                      (SELECT count(DISTINCT session_id) FROM dated
                       WHERE session_id IN (SELECT session_id FROM compacted_parts))
               FROM fresh"""
        ).fetchone()
        assert summary is not None
        new_days = [
            str(day)
            for (day,) in connection.execute(
                "SELECT DISTINCT day FROM fresh ORDER BY day"
            ).fetchall()
        ]
        merging = _days_to_merge(root, days, new_days)
        for day in sorted(merging | set(new_days)):
            if day in merging:
                _merge_day(connection, root, day)
            else:
                _append_day(connection, root, day)
        days_merged += merging
    except duckdb.Error as error:
        raise RecordError(
            f"cannot compact {redact_url(store)!r} into {str(root)!r}: {error}"
        ) from None
    except OSError as error:  # a rename, fsync or unlink of a part file
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
        days_merged=tuple(sorted(set(days_merged))),
    )
