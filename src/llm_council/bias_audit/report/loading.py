"""Load a bias-audit JSONL store into DuckDB as one typed, filtered ``records`` table.

DuckDB reads the JSON lines itself (in C++, in parallel), so a million records load in
about a second; everything after that is SQL over the ``records`` table plus numpy on the
aggregated arrays. Lines that cannot be read (a torn last line from an interrupted write,
a corrupted line) and lines of a schema version this reader does not know are skipped and
counted, and the report carries a warning for each kind.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np

from llm_council.bias_audit.record_schema import SCHEMA_VERSION
from llm_council.errors import InputError, RecordError

# Explicit column types: DuckDB neither guesses nor widens, and a value of the wrong type
# becomes NULL, which the validity check below counts as an unreadable line.
_COLUMNS = {
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
}
_REQUIRED = ("session_id", "reviewer_id", "model_id", "position", "response_length_words")
_SINCE_PATTERN = re.compile(r"^(\d+)([smhdw])$")
_COUNT_CHUNK = 1 << 24
_NEWLINE = ord("\n")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class LoadedStore:
    """The ``records`` table in an open DuckDB connection, and what was skipped on the way."""

    connection: duckdb.DuckDBPyConnection
    path: str
    n_lines: int
    n_records: int
    n_sessions: int
    n_unreadable: int
    n_unknown_version: int
    n_before_since: int
    since: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)


def parse_since(value: str, *, now: datetime | None = None, option: str = "--since") -> datetime:
    """Turn ``7d`` / ``24h`` / ``30m`` / ``2w`` or an ISO date/time into a UTC cut-off.

    ``option`` names the flag in the error (``--until`` parses the same way: ``7d`` = 7 days ago).
    """
    text = value.strip()
    match = _SINCE_PATTERN.match(text)
    if match:
        amount, unit = int(match.group(1)), match.group(2)
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[unit]: amount})
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{option} {value!r} is neither a duration (7d, 24h, 30m, 2w) nor an ISO date"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _count_lines(path: Path) -> tuple[int, bool]:
    """Count the non-empty lines and tell whether the file ends inside a line (a torn write).

    numpy compares 16 MB at a time (about 0.15 s for a million records); blank lines are not
    counted because DuckDB skips them too.
    """
    buffer = bytearray(_COUNT_CHUNK)
    as_bytes = np.frombuffer(buffer, dtype=np.uint8)
    n_newlines = n_blank = 0
    previous_newline = True  # a newline at the very start is a blank line
    last_is_newline = True
    with path.open("rb", buffering=0) as handle:
        while size := handle.readinto(buffer):
            newline = as_bytes[:size] == _NEWLINE
            n_newlines += int(np.count_nonzero(newline))
            n_blank += int(np.count_nonzero(newline[1:] & newline[:-1]))
            n_blank += int(previous_newline and newline[0])
            previous_newline = last_is_newline = bool(newline[-1])
    torn = not last_is_newline
    return n_newlines - n_blank + (1 if torn else 0), torn


def _read_raw_lines(path: Path, threads: int | None) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB with the store's lines in ``raw_lines`` (bad lines as NULLs)."""
    connection = duckdb.connect()
    # row order carries no meaning here; not preserving it lets the parallel reader skip a merge
    connection.execute("SET preserve_insertion_order = false")
    if threads is not None:
        connection.execute(f"SET threads TO {int(threads)}")
    columns_sql = ", ".join(f"{name}: '{kind}'" for name, kind in _COLUMNS.items())
    try:
        connection.execute(
            f"""CREATE TABLE raw_lines AS SELECT * FROM read_json(
                    ?, format = 'newline_delimited', ignore_errors = true,
                    columns = {{{columns_sql}}})""",
            [str(path)],
        )
    except duckdb.Error as error:
        connection.close()
        raise RecordError(f"cannot read bias-audit store {str(path)!r}: {error}") from None
    return connection


def load_store(
    store_path: str | Path,
    *,
    since: datetime | None = None,
    since_label: str | None = None,
    threads: int | None = None,
    until: datetime | None = None,
) -> LoadedStore:
    """Read ``store_path`` into DuckDB and build the ``records`` table the analyses query."""
    path = Path(store_path).expanduser()
    if not path.is_file():
        raise RecordError(
            f"no bias-audit store at {str(path)!r} "
            "(run `llm-council ask --bias-audit` first, or pass --store PATH)"
        )
    # Count lines in a thread while DuckDB parses (file reads release the GIL, DuckDB's
    # threads never hold it), so the check costs almost no wall time.
    with ThreadPoolExecutor(max_workers=1) as executor:
        counting = executor.submit(_count_lines, path)
        connection = _read_raw_lines(path, threads)
        n_lines, torn = counting.result()

    valid = " AND ".join(f"{name} IS NOT NULL" for name in _REQUIRED)
    counts = connection.execute(
        f"""SELECT count(*),
                   count(*) FILTER (WHERE schema_version IS NOT NULL AND ({valid})),
                   count(*) FILTER (WHERE schema_version IS NOT NULL AND ({valid})
                                    AND schema_version <> {SCHEMA_VERSION})
            FROM raw_lines"""
    ).fetchone()
    assert counts is not None
    n_rows, n_parsed, n_unknown_version = (int(value) for value in counts)
    n_unreadable = max(n_lines - n_rows, 0) + (n_rows - n_parsed)

    since_filter = "TRUE"
    parameters: list[object] = []
    if since is not None:
        since_filter = "TRY_CAST(timestamp AS TIMESTAMPTZ) >= CAST(? AS TIMESTAMPTZ)"
        parameters.append(since.astimezone(UTC).isoformat())
    if until is not None:
        since_filter += " AND TRY_CAST(timestamp AS TIMESTAMPTZ) < CAST(? AS TIMESTAMPTZ)"
        parameters.append(until.astimezone(UTC).isoformat())
    connection.execute(
        f"""CREATE TABLE records AS
            WITH usable AS (
                SELECT * FROM raw_lines
                WHERE schema_version = {SCHEMA_VERSION} AND {valid} AND {since_filter}),
            sessions AS (
                SELECT session_id,
                       (row_number() OVER (ORDER BY session_id) - 1)::INTEGER AS session
                FROM (SELECT DISTINCT session_id FROM usable))
            SELECT session, session_id, reviewer_id AS reviewer, model_id AS model,
                   position, n_candidates,
                   response_length_words AS words, response_length_chars AS chars,
                   score_value AS score, rank,
                   coalesce(is_self_review, reviewer_id = model_id) AS is_self,
                   coalesce(score_scale[1], 1.0) AS scale_low,
                   coalesce(score_scale[2], 10.0) AS scale_high,
                   TRY_CAST(timestamp AS TIMESTAMPTZ) AS time
            FROM usable JOIN sessions USING (session_id)""",
        parameters,
    )
    connection.execute("DROP TABLE raw_lines")
    sizes = connection.execute("SELECT count(*), count(DISTINCT session) FROM records").fetchone()
    assert sizes is not None
    n_records, n_sessions = int(sizes[0]), int(sizes[1])
    n_current = n_parsed - n_unknown_version

    warnings: list[str] = []
    if torn:
        warnings.append(f"{path}: the last line is incomplete (an interrupted write); skipped it")
    other_unreadable = n_unreadable - (1 if torn else 0)
    if other_unreadable > 0:
        warnings.append(
            f"{path}: skipped {other_unreadable} unreadable line(s) (not JSON, or a required "
            f"field missing or of the wrong type: {', '.join(_REQUIRED)})"
        )
    if n_unknown_version:
        warnings.append(
            f"{path}: skipped {n_unknown_version} line(s) with a schema_version this reader "
            f"does not know (it reads 1..{SCHEMA_VERSION}); upgrade llm-council to read them"
        )
    return LoadedStore(
        connection=connection,
        path=str(path),
        n_lines=n_lines,
        n_records=n_records,
        n_sessions=n_sessions,
        n_unreadable=n_unreadable,
        n_unknown_version=n_unknown_version,
        n_before_since=n_current,
        since=since_label,
        warnings=tuple(warnings),
    )
