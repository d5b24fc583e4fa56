"""Read one consistent prefix of a JSONL store that writers may be appending to.

The store is append-only, so its first ``size`` bytes never change once written. The
reader takes ``size`` once, from the open descriptor, and lets DuckDB parse the file by
path, in parallel. If the file is still ``size`` bytes (same inode, same mtime) after
DuckDB finished, DuckDB read exactly that prefix: nothing was appended while it read.
Otherwise a writer appended meanwhile and DuckDB may have read into a line still being
written (the old reader, which counted lines separately, reported thousands of phantom
"unreadable lines"), so the reader copies the prefix up to its last newline into a private
temporary file (in the kernel, ``copy_file_range``) and parses that instead. A line still
being written at the snapshot is simply not read: it is neither a record nor a torn line.

DuckDB gives one row per non-blank line (``records = true``: a line that is a JSON array or
scalar is one unreadable row, not a switch of the whole file to another mode), so lines
need no separate count: unreadable lines are the rows with a required field NULL.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb

from llm_council.errors import RecordError

#: the JSON reader's flag column: the line's ``score_value`` was present but not a JSON
#: number (a string such as ``"8"``, a boolean, an array), which DuckDB would otherwise cast
#: to a number or null (issue 26 item 7); the loader drops and counts such lines
SCORE_NOT_A_NUMBER = "score_not_a_number"
#: JSON types that are numbers (DuckDB's ``json_type``)
JSON_NUMBER_TYPES = "('UBIGINT', 'BIGINT', 'HUGEINT', 'DOUBLE')"

_COPY_BLOCK = 1 << 24
_TAIL_BLOCK = 1 << 16


@dataclass(frozen=True)
class JsonlSnapshot:
    """What was read: the prefix's length, and whether writers were appending."""

    ends_mid_line: bool
    snapshot_bytes: int
    read_while_appending: bool


def complete_prefix_end(descriptor: int, size: int) -> int:
    """The offset just past the last newline in the first ``size`` bytes (0 if none).

    Reads backwards from ``size`` in small blocks, so a store ending in a newline costs one
    ``pread`` of one block, whatever its size.
    """
    end = size
    while end > 0:
        start = max(0, end - _TAIL_BLOCK)
        block = os.pread(descriptor, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _parse_into_raw_lines(
    connection: duckdb.DuckDBPyConnection, path: str, columns: dict[str, str], label: str
) -> None:
    # ``score_value`` is read as JSON and kept only when it is a JSON number: typed DOUBLE,
    # DuckDB would read "8" as 8.0 and true as 1.0 (issue 26 item 7); the flag column lets
    # the loader drop and count such lines
    columns_sql = ", ".join(
        f"{name}: '{'JSON' if name == 'score_value' else kind}'" for name, kind in columns.items()
    )
    selected = "*"
    if "score_value" in columns:
        selected = (
            f"* REPLACE (CASE WHEN json_type(score_value) IN {JSON_NUMBER_TYPES} "
            "THEN TRY_CAST(score_value AS DOUBLE) END AS score_value), "
            f"score_value IS NOT NULL AND json_type(score_value) NOT IN {JSON_NUMBER_TYPES} "
            f"AS {SCORE_NOT_A_NUMBER}"
        )
    try:
        connection.execute(
            f"""CREATE OR REPLACE TABLE raw_lines AS SELECT {selected} FROM read_json(
                    ?, format = 'newline_delimited', records = true, ignore_errors = true,
                    columns = {{{columns_sql}}})""",
            [path],
        )
    except duckdb.Error as error:
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise RecordError(f"cannot read bias-audit store {label!r}: {first_line}") from None


def _copy_prefix(descriptor: int, length: int, target: int, start: int = 0) -> int:
    """Copy bytes ``[start, length)`` of ``descriptor`` to ``target`` (in the kernel if it
    can).

    Returns the offset reached: less than ``length`` only if the store was truncated
    meanwhile (a writer rolling back a failed append).
    """
    offset = start
    try:
        while offset < length:
            copied = os.copy_file_range(descriptor, target, length - offset, offset)
            if copied == 0:
                break
            offset += copied
        return offset
    except (AttributeError, OSError):
        os.ftruncate(target, 0)
        os.lseek(target, 0, os.SEEK_SET)
    offset = start
    while offset < length:
        block = os.pread(descriptor, min(_COPY_BLOCK, length - offset), offset)
        if not block:
            break
        os.write(target, block)
        offset += len(block)
    return offset


def read_jsonl_snapshot(
    connection: duckdb.DuckDBPyConnection, path: Path, columns: dict[str, str]
) -> JsonlSnapshot:
    """Parse one consistent prefix of the JSONL store at ``path`` into ``raw_lines``."""
    try:
        handle = path.open("rb", buffering=0)
    except OSError as error:
        raise RecordError(f"cannot open bias-audit store {str(path)!r}: {error.strerror}") from None
    with handle:
        descriptor = handle.fileno()
        before = os.fstat(descriptor)
        size = before.st_size
        _parse_into_raw_lines(connection, str(path), columns, str(path))
        try:
            after = os.stat(path)
        except OSError:
            after = None
        unchanged = after is not None and (after.st_ino, after.st_size, after.st_mtime_ns) == (
            before.st_ino,
            size,
            before.st_mtime_ns,
        )
        complete_end = complete_prefix_end(descriptor, size)
        if unchanged:
            return JsonlSnapshot(complete_end < size, size, False)
        # Appended (or replaced) while DuckDB read: parse a private copy of the prefix.
        with tempfile.NamedTemporaryFile(prefix="llm-council-snapshot-", suffix=".jsonl") as copy:
            copied = _copy_prefix(descriptor, complete_end, copy.fileno())
            _parse_into_raw_lines(connection, copy.name, columns, str(path))
    return JsonlSnapshot(False, copied, True)


def read_jsonl_range(
    connection: duckdb.DuckDBPyConnection,
    descriptor: int,
    start: int,
    columns: dict[str, str],
    label: str,
    end: int | None = None,
) -> JsonlSnapshot:
    """Parse bytes ``[start, end)`` (``end`` None: the end of the file) of the open store
    into ``raw_lines``, through a private copy (the tail load, ADR 0081; ``start`` is the
    start of a line).

    As :func:`read_jsonl_snapshot`: when the file did not change while it was copied, a
    last line without its newline is read (and reported torn if it does not parse);
    when a writer appended meanwhile, only whole lines are read. ``snapshot_bytes`` is
    the offset in the store where the read ended. A given ``end`` is read as it is
    (bytes a reader saw before: they no longer change).
    """
    if end is not None:
        with tempfile.NamedTemporaryFile(prefix="llm-council-tail-", suffix=".jsonl") as copy:
            reached = _copy_prefix(descriptor, end, copy.fileno(), start) if end > start else end
            if reached != end:
                raise RecordError(f"bias-audit store {label!r} shrank while it was read")
            _parse_into_raw_lines(connection, copy.name, columns, label)
        return JsonlSnapshot(complete_prefix_end(descriptor, end) < end, end, False)
    before = os.fstat(descriptor)
    size = before.st_size
    with tempfile.NamedTemporaryFile(prefix="llm-council-tail-", suffix=".jsonl") as copy:
        reached = _copy_prefix(descriptor, size, copy.fileno(), start) if size > start else start
        after = os.fstat(descriptor)
        unchanged = (after.st_size, after.st_mtime_ns) == (size, before.st_mtime_ns)
        complete_end = complete_prefix_end(descriptor, min(size, reached))
        if unchanged and reached == size:
            _parse_into_raw_lines(connection, copy.name, columns, label)
            return JsonlSnapshot(complete_end < size, size, False)
        end = max(start, complete_end)
        os.ftruncate(copy.fileno(), end - start)
        _parse_into_raw_lines(connection, copy.name, columns, label)
    return JsonlSnapshot(False, end, True)
