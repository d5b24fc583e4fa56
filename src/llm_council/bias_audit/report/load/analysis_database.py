"""The report's in-memory DuckDB database, compressed once its tables grow large.

DuckDB keeps an in-memory table uncompressed: ``records`` and ``scored`` take about 224
bytes a record, so at 10M records they pass the report's ``memory_limit`` and every query
re-reads spilled blocks from disk. An in-memory database attached with ``COMPRESS``
compresses its tables at a ``CHECKPOINT`` (bit-packing, dictionaries, ALP: about a ninth of
the size on a default store), for one pass over them. Below
:data:`COMPRESS_ABOVE_BYTES` that pass costs more CPU than it saves, so small stores skip
it. Compression changes how the tables are stored, never what a query returns.
"""

from __future__ import annotations

import duckdb

#: the attached database every report table lives in
ANALYSIS_DATABASE = "report"
#: table memory (in RAM and spilled) past which the tables are compressed
COMPRESS_ABOVE_BYTES = 256 * 1024 * 1024


def open_analysis_database(connection: duckdb.DuckDBPyConnection) -> None:
    """Attach the compressible in-memory database and make it the connection's default."""
    connection.execute(f"ATTACH ':memory:' AS {ANALYSIS_DATABASE} (COMPRESS)")
    connection.execute(f"USE {ANALYSIS_DATABASE}")


def analysis_cursor(connection: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor for another thread that sees the report's tables.

    A DuckDB cursor starts in the default in-memory database, not in the one its parent
    ``USE``-d, so it switches itself.
    """
    cursor = connection.cursor()
    cursor.execute(f"USE {ANALYSIS_DATABASE}")
    return cursor


def table_bytes(connection: duckdb.DuckDBPyConnection) -> int:
    """Bytes the database's tables take, in memory and spilled to the temporary directory."""
    row = connection.execute(
        """SELECT coalesce(sum(memory_usage_bytes + temporary_storage_bytes), 0)
           FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"""
    ).fetchone()
    return int(row[0]) if row else 0


def compress_large_tables(connection: duckdb.DuckDBPyConnection) -> bool:
    """Compress the tables if they take more than :data:`COMPRESS_ABOVE_BYTES`; say if it did."""
    if table_bytes(connection) <= COMPRESS_ABOVE_BYTES:
        return False
    connection.execute(f"CHECKPOINT {ANALYSIS_DATABASE}")
    return True
