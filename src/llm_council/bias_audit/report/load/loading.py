"""Load a bias-audit store into DuckDB as one typed, filtered ``records`` table.

A store is a JSONL file (the append format), a directory of Parquet partitions written by
``llm-council bias-compact`` (the analysis format), or a ``postgresql://`` URL. DuckDB
reads JSON lines and Parquet itself (in C++, in parallel); the rows then go through the
same rules whatever the source (:mod:`.raw_records`): lines that cannot be read (a torn
last line, a corrupted line), lines of a schema version this reader does not know and
incomplete sessions are skipped and counted, and the report carries a warning for each.
With ``engine="spark"`` a Parquet directory is scanned and filtered by Apache Spark
instead (:mod:`.engines.spark`).
"""

from __future__ import annotations

import os
import re
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from llm_council.bias_audit.records.jsonl_snapshot import read_jsonl_snapshot
from llm_council.bias_audit.report.load.analysis_database import (
    compress_large_tables,
    open_analysis_database,
)
from llm_council.bias_audit.report.load.prefix_hasher import PrefixHasher
from llm_council.bias_audit.report.load.raw_records import (
    READABLE_VERSIONS,
    REPORT_COLUMNS,
    REQUIRED,
    RecordCounts,
    build_records,
)
from llm_council.bias_audit.report.load.record_sources import (
    is_postgres_url,
    read_parquet_directory,
    read_postgres,
    redact_url,
)
from llm_council.bias_audit.report.load.resume_point import ReadExtent
from llm_council.bias_audit.report.load.source_identity import read_extent, source_identity
from llm_council.errors import ConfigError, InputError, RecordError

ENGINES = ("duckdb", "spark")
_SINCE_PATTERN = re.compile(r"^(\d+)([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
#: DuckDB's share of the report's memory; past it, tables spill to a temporary directory.
#: 1M records need about 0.35 GB, so the cap only binds for stores of several million.
DEFAULT_MEMORY_LIMIT = "1GB"


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
    since: str | None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    n_incomplete_sessions: int = 0
    n_incomplete_records: int = 0
    read_while_appending: bool = False
    #: what was read, for the tail load's next resume point (ADR 0081); None: not kept
    extent: ReadExtent | None = None


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


def new_report_connection(threads: int | None, memory_limit: str) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    # row order carries no meaning here; not preserving it lets the parallel reader skip a merge
    connection.execute("SET preserve_insertion_order = false")
    # DuckDB draws its own progress bar on a terminal; the CLI has one already
    connection.execute("SET enable_progress_bar = false")
    # Past ``memory_limit`` DuckDB moves its tables to a private directory (which it creates,
    # and removes on close) instead of growing: 10M records then fit in a bounded footprint.
    # Without it an in-memory database may take 80% of RAM and spills into ./.tmp.
    spill = Path(tempfile.gettempdir()) / f"llm-council-report-{os.getpid()}-{uuid.uuid4().hex}"
    connection.execute(f"SET temp_directory = '{_sql_text(str(spill))}'")
    try:
        connection.execute(f"SET memory_limit = '{_sql_text(memory_limit)}'")
    except duckdb.Error:
        connection.close()
        raise ConfigError(
            f"memory limit {memory_limit!r} is not a DuckDB size (e.g. 1GB, 512MB)"
        ) from None
    if threads is not None:
        connection.execute(f"SET threads TO {int(threads)}")
    open_analysis_database(connection)
    return connection


def _sql_text(value: str) -> str:
    """``value`` inside a single-quoted SQL literal."""
    return value.replace("'", "''")


def load_warnings(label: str, counts: RecordCounts, torn: bool) -> tuple[int, list[str]]:
    """The number of unreadable lines and the report's warnings about what was skipped.

    Every source gives one row per line, a line it could not read being a row with a
    required field NULL, so the unreadable lines are the rows that are not valid.
    """
    n_unreadable = counts.n_rows - counts.n_valid
    # a last line without its newline is torn only if it did not parse as a record
    torn = torn and n_unreadable > 0
    warnings: list[str] = []
    if torn:
        warnings.append(f"{label}: the last line is incomplete (an interrupted write); skipped it")
    other_unreadable = n_unreadable - (1 if torn else 0)
    if other_unreadable > 0:
        warnings.append(
            f"{label}: skipped {other_unreadable} unreadable line(s) (not JSON, or a required "
            f"field missing or of the wrong type: {', '.join(REQUIRED)})"
        )
    if counts.n_unknown_version:
        known = ", ".join(str(version) for version in READABLE_VERSIONS)
        warnings.append(
            f"{label}: skipped {counts.n_unknown_version} line(s) with a schema_version this "
            f"reader does not know (it reads {known}); upgrade llm-council to read them"
        )
    if counts.n_duplicate_records:
        warnings.append(
            f"{label}: {counts.n_duplicate_sessions} session(s) found more than once (every "
            "record repeated, as when a session is appended twice): "
            f"{counts.n_duplicate_records} repeated record(s) dropped, each session pooled once"
        )
    if counts.n_bad_scores:
        warnings.append(
            f"{label}: dropped {counts.n_bad_scores} record(s) whose score is not a finite "
            "number (NaN, an infinity, beyond 1e6 in size, a string or a boolean)"
        )
    if counts.n_incomplete_sessions:
        warnings.append(
            f"{label}: {counts.n_incomplete_sessions} incomplete session(s) "
            f"({counts.n_incomplete_records} records) dropped: fewer or more lines than the "
            "session_n_records its writer declared (a writer killed mid-session)"
        )
    if counts.n_check_records_ignored:
        warnings.append(
            f"{label}: {counts.n_check_records_ignored} live bias-check record(s) not analysed: "
            "the causal checks section is computed by the DuckDB engine (--engine duckdb)"
        )
    return n_unreadable, warnings


def _hashing_its_prefix(extent: ReadExtent | None, path: Path) -> ReadExtent | None:
    """A JSONL extent with the next resume point's digest started on a thread of its own,
    hashed while the tables are built (ADR 0094)."""
    if extent is None or extent.kind != "jsonl":
        return extent
    hasher = PrefixHasher.of_path(path, extent.device, extent.inode, end=extent.end)
    return replace(extent, prefix_hasher=hasher)


def load_store(
    store: str | Path,
    *,
    since: datetime | None = None,
    since_label: str | None = None,
    threads: int | None = None,
    engine: str = "duckdb",
    until: datetime | None = None,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    reproducible: bool = False,
    keep_extent: bool = False,
) -> LoadedStore:
    """Read ``store`` into DuckDB and build the ``records`` table the analyses query.

    ``keep_extent``: also keep what was read (:class:`~.resume_point.ReadExtent`, and the
    ``loaded_sessions`` table) for the tail load's next resume point (ADR 0081); only a
    JSONL file or a Parquet directory read by DuckDB has one.

    ``memory_limit`` caps DuckDB's memory (a DuckDB size such as ``1GB``); beyond it the
    tables spill to a private temporary directory, removed when the connection closes.

    ``reproducible``: every query on the returned connection gives the same bits on every
    run. DuckDB adds floating-point sums in parallel, in an order left to thread timing,
    and its parallel join stores rows in such an order too, so a report's figures vary
    run to run in their last digits (about 1e-13 relative on 1M records). Here ``records``
    is stored sorted (:func:`~.raw_records.create_records_table`) and, once it is built,
    the connection runs on one thread, so every later table and sum sees the rows in one
    order. The Spark engine adds its per-session sums in its own order: not offered there.
    """
    if engine not in ENGINES:
        raise ConfigError(f"unknown engine {engine!r} (choose one of {', '.join(ENGINES)})")
    if reproducible and engine != "duckdb":
        raise ConfigError(
            "--reproducible needs --engine duckdb (Spark adds per-session sums in its own order)"
        )
    location = str(store)
    if is_postgres_url(location):
        if engine != "duckdb":
            raise ConfigError("--engine spark reads a Parquet directory, not PostgreSQL")
        label = redact_url(location)
        path: Path | None = None
    else:
        path = Path(location).expanduser()
        label = str(path)
        if not path.exists():
            raise RecordError(
                f"no bias-audit store at {label!r} "
                "(run `llm-council ask --bias-audit` first, or pass --store PATH)"
            )
        if engine == "spark" and not path.is_dir():
            raise ConfigError(
                f"--engine spark reads a Parquet directory; {label!r} is not one "
                "(write it with `llm-council bias-compact --out DIR`)"
            )
    if engine == "spark":
        assert path is not None
        from llm_council.bias_audit.report.load.spark_engine import spark_records

        connection = new_report_connection(threads, memory_limit)
        try:
            counts = spark_records(connection, path, since=since, until=until)
            compress_large_tables(connection)
        except BaseException:
            connection.close()
            raise
        torn, appending, before = False, False, None
    else:
        connection = new_report_connection(threads, memory_limit)
        keep = keep_extent and path is not None and since is None and until is None
        try:
            before = source_identity(path) if keep and path is not None else None
            torn, appending, size = _read_raw_lines(connection, location, path, since)
            counts = _build_records_of(
                connection, path, label, since=since, until=until, ordered=reproducible, keep=keep
            )
            compress_large_tables(connection)
            if reproducible:
                connection.execute("SET threads TO 1")
        except BaseException:
            connection.close()
            raise
    n_unreadable, warnings = load_warnings(label, counts, torn)
    extent = None
    if engine == "duckdb" and before is not None and path is not None:
        extent = _hashing_its_prefix(read_extent(path, before, counts, torn, size), path)
    return LoadedStore(
        connection=connection,
        path=label,
        n_lines=counts.n_rows,
        n_records=counts.n_records,
        n_sessions=counts.n_sessions,
        n_unreadable=n_unreadable,
        n_unknown_version=counts.n_unknown_version,
        since=since_label,
        warnings=tuple(warnings),
        n_incomplete_sessions=counts.n_incomplete_sessions,
        n_incomplete_records=counts.n_incomplete_records,
        read_while_appending=appending,
        extent=extent,
    )


def _build_records_of(
    connection: duckdb.DuckDBPyConnection,
    path: Path | None,
    label: str,
    *,
    since: datetime | None,
    until: datetime | None,
    ordered: bool,
    keep: bool,
) -> RecordCounts:
    """:func:`~.raw_records.build_records`; a Parquet file listed at the start of the load
    and gone before a later pass read it (``bias-compact`` merging a day removes its old
    parts, ADR 0093) is a :class:`RecordError`, not a DuckDB traceback."""
    try:
        return build_records(
            connection, since=since, until=until, ordered=ordered, keep_sessions=keep
        )
    except duckdb.IOException as error:
        if path is None or not path.is_dir():
            raise
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RecordError(
            f"cannot read the Parquet store {label!r}: a partition file was removed while "
            f"the report read it (a bias-compact merging a day?); run the report again "
            f"({first_line})"
        ) from None


def _read_raw_lines(
    connection: duckdb.DuckDBPyConnection,
    location: str,
    path: Path | None,
    since: datetime | None,
) -> tuple[bool, bool, int]:
    """Fill ``raw_lines`` from the store; returns (torn last line, read while appending,
    the JSONL bytes read)."""
    if path is None:
        read_postgres(connection, location, since)
        return False, False, 0
    if path.is_dir():
        read_parquet_directory(connection, path, since)
        return False, False, 0
    if not path.is_file():
        raise RecordError(
            f"bias-audit store {str(path)!r} is not a regular file or a Parquet directory"
        )
    snapshot = read_jsonl_snapshot(connection, path, REPORT_COLUMNS)
    return snapshot.ends_mid_line, snapshot.read_while_appending, snapshot.snapshot_bytes
