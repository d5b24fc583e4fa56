"""Read one consistent prefix of a JSONL store that writers may be appending to.

The store is append-only, so its first ``size`` bytes never change once written. The
reader takes ``size`` once, from the open descriptor, counts the lines in ``[0, size)``
and lets DuckDB parse the file by path, in parallel. If the file is still ``size`` bytes
(same inode, same mtime) after DuckDB finished, DuckDB read exactly that prefix: nothing
was appended while it read. Otherwise a writer appended meanwhile and DuckDB may have
read further than the count (the old code's thousands of phantom "unreadable lines"), so
the reader copies the prefix up to its last newline into a private temporary file (in
the kernel, ``copy_file_range``) and parses that instead. A line still being written at
the snapshot is simply not read: it is neither a record nor a torn line.
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from llm_council.errors import RecordError

_COUNT_CHUNK = 1 << 24
_NEWLINE = ord("\n")


@dataclass(frozen=True)
class LineCount:
    """Non-empty lines in ``[0, size)`` and where the last complete line ends."""

    n_lines: int
    ends_mid_line: bool
    complete_end: int


@dataclass(frozen=True)
class JsonlSnapshot:
    """What was read: the lines of the prefix, and whether writers were appending."""

    n_lines: int
    torn_last_line: bool
    snapshot_bytes: int
    read_while_appending: bool


def count_lines(descriptor: int, size: int) -> LineCount:
    """Count the non-empty lines in the first ``size`` bytes of ``descriptor``.

    ``bytearray.count`` (memchr speed) does the work 16 MB at a time; only a chunk that
    holds blank lines (``\\n\\n``, which DuckDB skips too) goes through numpy to count them
    exactly. ``os.preadv`` leaves the descriptor's offset alone, so this can run in a thread
    while another reader uses the same file.
    """
    buffer = bytearray(_COUNT_CHUNK)
    n_newlines = n_blank = 0
    previous_newline = True  # a newline at the very start is a blank line
    ends_mid_line = False
    complete_end = offset = 0
    while offset < size:
        window = memoryview(buffer)[: min(_COUNT_CHUNK, size - offset)]
        chunk = os.preadv(descriptor, [window], offset)
        if chunk == 0:  # truncated under us: the prefix ends here
            break
        data = buffer if chunk == _COUNT_CHUNK else buffer[:chunk]
        n_newlines += data.count(b"\n")
        n_blank += int(previous_newline and data[0] == _NEWLINE)
        if data.find(b"\n\n") >= 0:
            newline = np.frombuffer(data, dtype=np.uint8) == _NEWLINE
            n_blank += int(np.count_nonzero(newline[1:] & newline[:-1]))
        last = data.rfind(b"\n")
        if last >= 0:
            complete_end = offset + last + 1
        previous_newline = data[chunk - 1] == _NEWLINE
        ends_mid_line = not previous_newline
        offset += chunk
    return LineCount(
        n_lines=n_newlines - n_blank + (1 if ends_mid_line else 0),
        ends_mid_line=ends_mid_line,
        complete_end=complete_end,
    )


def _parse_into_raw_lines(
    connection: duckdb.DuckDBPyConnection, path: str, columns: dict[str, str], label: str
) -> None:
    columns_sql = ", ".join(f"{name}: '{kind}'" for name, kind in columns.items())
    try:
        connection.execute(
            f"""CREATE OR REPLACE TABLE raw_lines AS SELECT * FROM read_json(
                    ?, format = 'newline_delimited', ignore_errors = true,
                    columns = {{{columns_sql}}})""",
            [path],
        )
    except duckdb.Error as error:
        raise RecordError(f"cannot read bias-audit store {label!r}: {error}") from None


def _copy_prefix(descriptor: int, length: int, target: int) -> int:
    """Copy bytes ``[0, length)`` of ``descriptor`` to ``target`` (in the kernel if it can).

    Returns how many bytes were copied: fewer than ``length`` only if the store was
    truncated meanwhile (a writer rolling back a failed append).
    """
    offset = 0
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
    offset = 0
    while offset < length:
        block = os.pread(descriptor, min(_COUNT_CHUNK, length - offset), offset)
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
        # Count in a thread while DuckDB parses (pread releases the GIL, DuckDB's threads
        # never hold it), so the count costs almost no wall time.
        with ThreadPoolExecutor(max_workers=1) as executor:
            counting = executor.submit(count_lines, descriptor, size)
            _parse_into_raw_lines(connection, str(path), columns, str(path))
            count = counting.result()
        try:
            after = os.stat(path)
        except OSError:
            after = None
        unchanged = after is not None and (after.st_ino, after.st_size, after.st_mtime_ns) == (
            before.st_ino,
            size,
            before.st_mtime_ns,
        )
        if unchanged:
            return JsonlSnapshot(count.n_lines, count.ends_mid_line, size, False)
        # Appended (or replaced) while DuckDB read: parse a private copy of the prefix.
        with tempfile.NamedTemporaryFile(prefix="llm-council-snapshot-", suffix=".jsonl") as copy:
            copied = _copy_prefix(descriptor, count.complete_end, copy.fileno())
            if copied < count.complete_end:  # truncated meanwhile: count what was copied
                count = count_lines(copy.fileno(), copied)
            _parse_into_raw_lines(connection, copy.name, columns, str(path))
    n_lines = count.n_lines - (1 if count.ends_mid_line else 0)
    return JsonlSnapshot(n_lines, False, copied, True)
