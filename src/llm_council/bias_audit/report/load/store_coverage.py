"""What part of a store a saved summary describes, and whether the store still extends it.

A JSONL store is append-only: the summary records the file's device and inode, its size
when read and the SHA-256 of the (up to) 64 KiB before that size. The store extends it
when it is still that file, at least that long, with those bytes in place. A Parquet
store grows by new part files (``bias-compact`` appends, ADR 0093; a merged day's old
parts are removed), so there the summary records the partition files' paths under the
store, and the store extends it while every one is still there. Anything else
(a store replaced, truncated, rewritten; a partition file removed) does not extend it,
and the summaries are rebuilt. Only the tail of a JSONL prefix is hashed, as in ADR
0052; an edit elsewhere, and any edit of a Parquet file, is caught by the per-session
content digests the report checks (:mod:`~llm_council.bias_audit.report.analyses.
incremental_runner`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from llm_council.bias_audit.report.load.record_sources import list_partitions

#: how much of a JSONL prefix's end is hashed
TAIL_BYTES = 64 * 1024


def _tail_digest(descriptor: int, size: int) -> str:
    start = max(0, size - TAIL_BYTES)
    block = os.pread(descriptor, size - start, start)
    if len(block) != size - start:
        raise OSError("the store shrank while it was read")
    return "sha256:" + hashlib.sha256(block).hexdigest()


def _jsonl_coverage(path: Path) -> dict[str, Any]:
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        return {
            "kind": "jsonl",
            "device": status.st_dev,
            "inode": status.st_ino,
            "size": status.st_size,
            "tail": _tail_digest(descriptor, status.st_size),
        }
    finally:
        os.close(descriptor)


def _parquet_files(root: Path) -> list[str]:
    files = []
    for partition in list_partitions(root):
        for file in partition.files():
            files.append(file.relative_to(root).as_posix())
    return files


def store_coverage(store: str | Path) -> dict[str, Any] | None:
    """The store's coverage as JSON-safe values; ``None`` for a store that has none
    (PostgreSQL, anything but a regular file or a directory) or cannot be read."""
    path = Path(os.path.realpath(store))
    try:
        if path.is_dir():
            return {"kind": "parquet", "files": _parquet_files(path)}
        if path.is_file():
            return _jsonl_coverage(path)
    except OSError:
        return None
    return None


def extends(saved: Any, store: str | Path) -> bool:
    """Does ``store`` now hold everything ``saved`` (a :func:`store_coverage`) described?"""
    if not isinstance(saved, dict):
        return False
    path = Path(os.path.realpath(store))
    try:
        if saved.get("kind") == "jsonl" and path.is_file():
            return _jsonl_extends(saved, path)
        if saved.get("kind") == "parquet" and path.is_dir():
            files = saved.get("files")
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                return False
            return set(files) <= set(_parquet_files(path))
    except (OSError, ValueError):
        return False
    return False


def _jsonl_extends(saved: dict[str, Any], path: Path) -> bool:
    size = saved.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return False
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        status = os.fstat(descriptor)
        if (status.st_dev, status.st_ino) != (saved.get("device"), saved.get("inode")):
            return False
        if status.st_size < size:
            return False
        return _tail_digest(descriptor, size) == saved.get("tail")
    finally:
        os.close(descriptor)


def recent_session_ids(store: str | Path) -> set[str]:
    """The ``session_id`` of every line in a JSONL store's last :data:`TAIL_BYTES`.

    A session there may still be being written: a version-1 session carries no count of
    its lines, so a snapshot that cut it looks complete. The report does not fold these
    sessions into the saved summaries (it computes them each run until they are older),
    so their later lines never contradict a saved summary. Lines that do not parse, and
    a Parquet store (whose compaction writes whole sessions), give nothing.
    """
    path = Path(os.path.realpath(store))
    if not path.is_file():
        return set()
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = os.fstat(descriptor).st_size
            start = max(0, size - TAIL_BYTES)
            block = os.pread(descriptor, size - start, start)
        finally:
            os.close(descriptor)
    except OSError:
        return set()
    lines = block.split(b"\n")
    if start > 0:
        lines = lines[1:]  # the first may begin before the window
    found: set[str] = set()
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("session_id") is not None:
            found.add(str(record["session_id"]))
    return found
