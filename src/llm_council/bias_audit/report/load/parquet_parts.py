"""The numbered part files of a compacted day: their names, writing one, and what a killed
``bias-compact`` left behind (ADR 0093).

A day directory holds ``part-N.parquet`` files, N a decimal number that only grows: a
file, once written, is never written again under its name, so the tail load (ADR 0081)
can trust a saved file by its identity. Each is written to a hidden temporary file
(``.part-N.parquet.PID.tmp``) in the same directory, fsynced, then renamed into place:
a reader, or a crash, sees the whole file or none of it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from llm_council.bias_audit.report.load.record_sources import PARTITION_PREFIX

#: a part file this module wrote; ``part-x.parquet`` is not one (readers still read it)
PART_NAME = re.compile(r"part-([0-9]+)\.parquet")
#: its temporary file, named by the writing process's PID
TEMPORARY_NAME = re.compile(r"\.part-[0-9]+\.parquet\.([0-9]+)\.tmp")


def part_number(path: Path) -> int | None:
    """N of ``part-N.parquet``; ``None`` for any other name."""
    match = PART_NAME.fullmatch(path.name)
    return int(match.group(1)) if match else None


def numbered_parts(day_directory: Path) -> list[Path]:
    """The day's ``part-N.parquet`` files, by N (``part-10`` after ``part-9``)."""
    if not day_directory.is_dir():
        return []
    found = [
        (number, entry)
        for entry in day_directory.iterdir()
        if (number := part_number(entry)) is not None and entry.is_file()
    ]
    return [entry for _, entry in sorted(found)]


def next_part(day_directory: Path) -> Path:
    """``part-N.parquet`` with N one more than the day's highest (``part-0`` for none); an
    entry of that form that is not a file (a directory) still takes its number."""
    taken = (
        [number for entry in day_directory.iterdir() if (number := part_number(entry)) is not None]
        if day_directory.is_dir()
        else []
    )
    return day_directory / f"part-{max(taken) + 1 if taken else 0}.parquet"


def write_part(
    connection: duckdb.DuckDBPyConnection, query: str, parameters: list[object], target: Path
) -> None:
    """Write the rows of ``query`` to ``target`` through a temporary file and one rename.

    On any failure (a full disk, an interrupt) the temporary file is removed and
    ``target`` does not exist.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        connection.execute(
            f"""COPY ({query})
                TO '{str(temporary).replace("'", "''")}' (FORMAT parquet, COMPRESSION zstd)""",
            parameters,
        )
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    sync_directory(target.parent)


def sync_directory(directory: Path) -> None:
    """Make the renames and unlinks in ``directory`` durable, in the order they were made."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_stale_temporaries(root: Path) -> int:
    """Delete the temporary part files (``.part-N.parquet.PID.tmp``, any N) of compactions
    that were killed (issue 26 item 7); returns how many.

    Runs under the directory's lock, so no other compaction of ``root`` is writing; a file
    whose PID is this process or a live process is left alone all the same.
    """
    removed = 0
    for temporary in root.glob(f"{PARTITION_PREFIX}*/.part-*.tmp"):
        match = TEMPORARY_NAME.fullmatch(temporary.name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _process_alive(pid):
            continue
        temporary.unlink(missing_ok=True)
        removed += 1
    return removed
