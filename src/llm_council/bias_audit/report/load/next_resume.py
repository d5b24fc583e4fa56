"""Place the next resume point after a load (ADR 0081): where the next tail load starts.

JSONL: the lines of the store's last 64 KiB read (the *window*) are held back, as ADR
0073 holds back the sessions still possibly being written; the resume offset is the
start of the window's first whole line. A session with usable lines both in the window
and before it (its lines in the window differ from its lines in the whole read; almost
always the first session of the window) would be cut in two by the offset, so the offset
moves back to the first line of such sessions, up to :data:`MAX_WINDOW_BYTES`; past that
no resume point is saved (the next run loads every record). The window is parsed again
through the same :func:`~.raw_records.build_records` (a few hundred lines), so the
prefix's counts are this load's minus the window's, plus the counts of the prefix this
load skipped. A session of the prefix that is incomplete
is counted incomplete there, as a full load counts it, and its id kept.

Parquet: ``bias-compact`` writes whole sessions, so nothing is held back: the prefix is
every file read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from llm_council.bias_audit.records.jsonl_snapshot import read_jsonl_range
from llm_council.bias_audit.report.load.raw_records import (
    LOADED_SESSIONS,
    REPORT_COLUMNS,
    RecordCounts,
    build_records,
)
from llm_council.bias_audit.report.load.resume_point import (
    ZERO_COUNTS,
    ReadExtent,
    ResumePoint,
    add_counts,
)
from llm_council.bias_audit.report.load.store_coverage import TAIL_BYTES
from llm_council.errors import RecordError

#: the largest window tried before giving up on a resume point (an interleaving writer)
MAX_WINDOW_BYTES = 4 * 1024 * 1024
#: how many times the offset may move back to a straddling session's first line
_MAX_MOVES = 8
_NO_IDS = np.asarray([], dtype=str)


@dataclass(frozen=True)
class NextResume:
    """The resume point to save, and the sessions of this load it leaves unfolded."""

    point: ResumePoint
    held_session_ids: np.ndarray  # sorted: sessions of ``records`` in the window


@dataclass(frozen=True)
class _Window:
    counts: RecordCounts
    lines: dict[str, int]  # usable lines per session id
    record_ids: np.ndarray  # sessions the window's lines make into records, sorted


def _ids(connection: duckdb.DuckDBPyConnection, sql: str) -> np.ndarray:
    rows = connection.execute(sql).fetchnumpy()
    return np.unique(np.asarray(rows["session_id"], dtype=str)) if rows else _NO_IDS


def next_resume_point(
    connection: duckdb.DuckDBPyConnection, store: str | Path, extent: ReadExtent
) -> NextResume | None:
    """The resume point after the load ``extent`` describes (its ``loaded_sessions`` and
    ``records`` are in ``connection``); ``None`` when none can be placed."""
    base = extent.base
    base_counts = base.counts if base is not None else ZERO_COUNTS
    base_other = base.other_session_ids if base is not None else _NO_IDS
    loaded_ids = _ids(connection, f"SELECT session_id FROM {LOADED_SESSIONS}")
    record_ids = _ids(connection, "SELECT DISTINCT session_id FROM records")
    if extent.kind == "parquet":
        point = ResumePoint(
            kind="parquet",
            counts=add_counts(base_counts, extent.counts),
            other_session_ids=np.union1d(base_other, np.setdiff1d(loaded_ids, record_ids)),
            files=extent.files,
        )
        return NextResume(point, _NO_IDS)
    path = Path(os.path.realpath(store))
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        status = os.fstat(descriptor)
        if (status.st_dev, status.st_ino) != (extent.device, extent.inode):
            return None
        if extent.prefix_hasher is None:  # the file was replaced before the hash could start
            return None
        if status.st_size < extent.end:
            return None
        placed = _place_window(connection, descriptor, extent)
        if placed is None:
            return None
        offset, window = placed
        # the load's background hash (ADR 0094; TailRefused when a tail's prefix changed)
        digest = extent.prefix_hasher.state_at(descriptor, offset)
    except (OSError, RecordError):
        return None
    finally:
        os.close(descriptor)
    window_ids = np.asarray(sorted(window.lines), dtype=str)
    not_folded = np.setdiff1d(np.setdiff1d(loaded_ids, record_ids), window_ids)
    point = ResumePoint(
        kind="jsonl",
        counts=add_counts(add_counts(base_counts, extent.counts), window.counts, -1),
        other_session_ids=np.union1d(base_other, not_folded),
        offset=offset,
        prefix_sha256="sha256:" + digest.hexdigest(),
    )
    return NextResume(point, np.intersect1d(window.record_ids, record_ids))


def _place_window(
    connection: duckdb.DuckDBPyConnection, descriptor: int, extent: ReadExtent
) -> tuple[int, _Window] | None:
    """(the resume offset, the window after it) with no session on both sides."""
    offset = _line_start_after(descriptor, max(extent.start, extent.end - TAIL_BYTES), extent)
    if offset is None:  # one line longer than the window: it starts before the window
        offset = _line_start_after(
            descriptor, max(extent.start, extent.end - MAX_WINDOW_BYTES), extent
        )
        if offset is None:
            return None
    for _attempt in range(_MAX_MOVES):
        window = _parse_window(descriptor, offset, extent.end)
        missing = _lines_before(connection, window)
        if not missing:
            return offset, window
        moved = _back_to_first_lines(descriptor, offset, extent, missing)
        if moved is None:
            return None
        offset = moved
    return None


def _line_start_after(descriptor: int, point: int, extent: ReadExtent) -> int | None:
    """The start of the first line at or after ``point`` (``extent.start`` is one);
    ``None`` when no line starts between ``point`` and the end read."""
    if point <= extent.start:
        return extent.start
    block = os.pread(descriptor, extent.end - (point - 1), point - 1)
    newline = block.find(b"\n")
    return None if newline < 0 else point + newline


def _back_to_first_lines(
    descriptor: int, offset: int, extent: ReadExtent, missing: dict[str, int]
) -> int | None:
    """The start of the line, before ``offset``, from which the lines of the sessions of
    ``missing`` (id -> usable lines they have before ``offset``) are all after it.

    Walks back line by line (at most :data:`MAX_WINDOW_BYTES`), reading each line's
    ``session_id`` with Python's JSON parser. DuckDB decides again on the new window, so a
    line the two parsers judge differently costs another move, never a wrong offset.
    """
    low = max(extent.start, offset - MAX_WINDOW_BYTES)
    block = os.pread(descriptor, offset - low, low)
    if len(block) != offset - low:
        return None
    lines = block.split(b"\n")[:-1]  # the block ends at a line start: its last piece is b""
    starts = np.cumsum([0, *[len(line) + 1 for line in lines]])[:-1] + low
    remaining = dict(missing)
    first = 1 if low > extent.start else 0  # the first piece may begin before ``low``
    for index in range(len(lines) - 1, first - 1, -1):
        session_id = _session_id(lines[index])
        if session_id in remaining:
            remaining[session_id] -= 1
            if remaining[session_id] <= 0:
                del remaining[session_id]
            if not remaining:
                return int(starts[index])
    return None


def _session_id(line: bytes) -> str | None:
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if isinstance(record, dict) and record.get("session_id") is not None:
        return str(record["session_id"])
    return None


def _parse_window(descriptor: int, offset: int, end: int) -> _Window:
    """The load counts and sessions of bytes ``[offset, end)``, on a connection of their own."""
    window = duckdb.connect()
    try:
        window.execute("SET threads TO 1")
        read_jsonl_range(window, descriptor, offset, REPORT_COLUMNS, "window", end=end)
        counts = build_records(window, since=None, keep_sessions=True)
        rows = window.execute(f"SELECT session_id, n_lines FROM {LOADED_SESSIONS}").fetchall()
        record_ids = _ids(window, "SELECT DISTINCT session_id FROM records")
    finally:
        window.close()
    return _Window(counts, {str(sid): int(n) for sid, n in rows}, record_ids)


def _lines_before(connection: duckdb.DuckDBPyConnection, window: _Window) -> dict[str, int]:
    """The window's sessions with usable lines before it too (in this load's read), and
    how many."""
    if not window.lines:
        return {}
    rows = connection.execute(
        f"""SELECT session_id, n_lines FROM {LOADED_SESSIONS}
            WHERE session_id IN (SELECT unnest(?::VARCHAR[]))""",
        [list(window.lines)],
    ).fetchall()
    return {
        str(sid): int(n) - window.lines[str(sid)]
        for sid, n in rows
        if int(n) != window.lines[str(sid)]
    }
