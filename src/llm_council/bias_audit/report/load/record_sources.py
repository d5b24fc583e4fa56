"""Sources other than a JSONL file: a Parquet directory and a PostgreSQL store.

Each fills the ``raw_lines`` table of :mod:`.raw_records` with the columns of
:data:`~.raw_records.REPORT_COLUMNS`; the rules that follow are the same for every source.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb

from llm_council.bias_audit.records.store_urls import is_postgres_url, redact_url, url_password
from llm_council.bias_audit.report.load.raw_records import REPORT_COLUMNS
from llm_council.errors import RecordError

PARTITION_PREFIX = "date="
PART_GLOB = "part-*.parquet"


@dataclass(frozen=True)
class ParquetPartition:
    """One ``date=YYYY-MM-DD`` directory of a compacted store."""

    day: date
    directory: Path

    def files(self) -> list[Path]:
        return sorted(self.directory.glob(PART_GLOB))


def list_partitions(root: Path) -> list[ParquetPartition]:
    """The store's ``date=`` partitions, oldest first (other entries are ignored)."""
    partitions = []
    for entry in root.iterdir():
        if not (entry.is_dir() and entry.name.startswith(PARTITION_PREFIX)):
            continue
        try:
            day = date.fromisoformat(entry.name.removeprefix(PARTITION_PREFIX))
        except ValueError:
            raise RecordError(
                f"{str(entry)!r}: partition name is not date=YYYY-MM-DD ({entry.name!r})"
            ) from None
        partitions.append(ParquetPartition(day, entry))
    return sorted(partitions, key=lambda partition: partition.day)


def _empty_raw_lines(connection: duckdb.DuckDBPyConnection) -> None:
    columns_sql = ", ".join(f"{name} {kind}" for name, kind in REPORT_COLUMNS.items())
    connection.execute(f"CREATE OR REPLACE TABLE raw_lines ({columns_sql})")


def read_parquet_directory(
    connection: duckdb.DuckDBPyConnection, root: Path, since: datetime | None
) -> int:
    """Fill ``raw_lines`` from the partitions of ``root``; returns how many files were read.

    With ``since``, partitions of earlier days are never opened (partition pruning): a
    session's records all carry the session's end time, so a session lies in one partition.
    """
    partitions = list_partitions(root)
    if not partitions:
        raise RecordError(
            f"{str(root)!r} holds no Parquet partitions (date=YYYY-MM-DD/); "
            "write them with `llm-council bias-compact --out DIR`"
        )
    first_day = since.astimezone(UTC).date() if since is not None else None
    files = [
        str(file)
        for partition in partitions
        if first_day is None or partition.day >= first_day
        for file in partition.files()
    ]
    if not files:
        _empty_raw_lines(connection)
        return 0
    file_list = ", ".join(f"'{_sql_text(file)}'" for file in files)
    try:  # a store compacted before a column existed has none: NULL (ADR 0062)
        present = {
            str(row[0])
            for row in connection.execute(
                f"DESCRIBE SELECT * FROM read_parquet([{file_list}], union_by_name = true)"
            ).fetchall()
        }
    except duckdb.Error as error:
        raise RecordError(f"cannot read the Parquet store {str(root)!r}: {error}") from None
    selected = ", ".join(
        f"CAST({name} AS {kind}) AS {name}" if name in present else f"NULL::{kind} AS {name}"
        for name, kind in REPORT_COLUMNS.items()
    )
    # A view, not a copy: each of the few passes over the lines reads only the columns it
    # needs from the compressed files, and 10M lines never sit uncompressed in memory.
    try:
        connection.execute(
            f"""CREATE OR REPLACE VIEW raw_lines AS SELECT {selected}
                FROM read_parquet([{file_list}], union_by_name = true)"""
        )
        connection.execute("SELECT count(*) FROM raw_lines").fetchone()  # read errors: here
    except duckdb.Error as error:
        raise RecordError(f"cannot read the Parquet store {str(root)!r}: {error}") from None
    return len(files)


def _sql_text(value: str) -> str:
    """``value`` inside a single-quoted SQL literal."""
    return value.replace("'", "''")


def _driver_error(url: str, error: BaseException) -> RecordError:
    """A driver error as one message naming the store without the URL's password."""
    message = str(error).replace(url, redact_url(url))
    password = url_password(url)  # not urlsplit(): it raises on an unclosed "["
    if password:
        message = message.replace(password, "***")
    return RecordError(f"cannot read {redact_url(url)!r}: {' '.join(message.split())}")


def read_postgres(
    connection: duckdb.DuckDBPyConnection,
    url: str,
    since: datetime | None,
    columns: dict[str, str] = REPORT_COLUMNS,
) -> int:
    """Fill ``raw_lines`` from a PostgreSQL store; returns the number of rows fetched.

    The store module streams the rows as Arrow batches and DuckDB scans that stream
    (``arrow_batch_reader``), so only one batch of rows is in Python's memory at a time.
    """
    try:
        postgres_store = importlib.import_module("llm_council.bias_audit.records.postgres_store")
    except ImportError as error:
        raise RecordError(
            f"cannot read {redact_url(url)!r}: the PostgreSQL store is not available "
            f"({error.name or error}); install llm-council[postgres]"
        ) from None
    try:
        reader = postgres_store.arrow_batch_reader(url, since=since)
    except RecordError:
        raise
    except Exception as error:  # a driver error: name it without the URL's password
        raise _driver_error(url, error) from None
    present = set(reader.schema.names)
    selected = ", ".join(
        f"TRY_CAST({name} AS {kind}) AS {name}" if name in present else f"NULL::{kind} AS {name}"
        for name, kind in columns.items()
    )
    connection.register("postgres_rows", reader)
    try:
        connection.execute(
            f"CREATE OR REPLACE TABLE raw_lines AS SELECT {selected} FROM postgres_rows"
        )
    except Exception as error:  # the connection dropped mid-stream
        raise _driver_error(url, error) from None
    finally:
        connection.unregister("postgres_rows")
    row = connection.execute("SELECT count(*) FROM raw_lines").fetchone()
    return int(row[0]) if row is not None else 0


def default_store_location(environ: Mapping[str, str] | None = None) -> str:
    """``$LLM_COUNCIL_BIAS_STORE`` as given when it is a URL, else the JSONL store's path.

    A URL must not go through :class:`~pathlib.Path`, which would fold its ``//``.
    """
    from llm_council.bias_audit.records.jsonl_store import STORE_VARIABLE, store_path

    env = os.environ if environ is None else environ
    configured = env.get(STORE_VARIABLE, "").strip()
    return configured if is_postgres_url(configured) else str(store_path(env))
