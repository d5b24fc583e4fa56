"""Read a chosen list of a Parquet store's partition files into ``raw_lines`` (the tail load).

The same columns and casts as :func:`~.record_sources.read_parquet_directory`, which
reads every partition; here only the files a tail load has not folded (ADR 0081).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from llm_council.bias_audit.report.load.raw_records import REPORT_COLUMNS
from llm_council.errors import RecordError


def _sql_text(value: str) -> str:
    """``value`` inside a single-quoted SQL literal."""
    return value.replace("'", "''")


def read_parquet_files(connection: duckdb.DuckDBPyConnection, root: Path, names: list[str]) -> None:
    """Fill ``raw_lines`` (a table) from the files ``names`` (paths under ``root``); an
    empty list gives an empty table."""
    if not names:
        columns_sql = ", ".join(f"{name} {kind}" for name, kind in REPORT_COLUMNS.items())
        connection.execute(f"CREATE OR REPLACE TABLE raw_lines ({columns_sql})")
        return
    file_list = ", ".join(f"'{_sql_text(str(root / name))}'" for name in names)
    source = f"read_parquet([{file_list}], union_by_name = true)"
    try:
        present = {
            str(row[0]) for row in connection.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        }
        selected = ", ".join(
            f"CAST({name} AS {kind}) AS {name}" if name in present else f"NULL::{kind} AS {name}"
            for name, kind in REPORT_COLUMNS.items()
        )
        # a table, not a view: the tail is small, and its files are hashed before this read
        connection.execute(f"CREATE OR REPLACE TABLE raw_lines AS SELECT {selected} FROM {source}")
    except duckdb.Error as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RecordError(f"cannot read the Parquet store {str(root)!r}: {first_line}") from None
