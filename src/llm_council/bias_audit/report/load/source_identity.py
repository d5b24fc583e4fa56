"""Which bytes a load read: the JSONL file's identity, or each Parquet file's (ADR 0081).

Taken before a load and checked after it, so a resume point never describes a file that
changed while it was read. A Parquet file's identity includes the SHA-256 of its bytes
(compressed, about 40 MB at 1M records): ``bias-compact`` adds new part files and never
rewrites one (ADR 0093), but a merged day's new file or a file edited with its size and
time kept must still be caught.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import cast

from llm_council.bias_audit.report.load.raw_records import RecordCounts
from llm_council.bias_audit.report.load.record_sources import list_partitions
from llm_council.bias_audit.report.load.resume_point import PartFile, ReadExtent

_BLOCK = 1 << 20
#: a JSONL file: (device, inode); a Parquet directory: its files' (path, size, mtime_ns)
Identity = tuple[tuple[object, ...], ...]


def parquet_stats(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(path under ``root``, size, mtime_ns) of every partition file, in path order."""
    found = []
    for partition in list_partitions(root):
        for file in partition.files():
            status = file.stat()
            found.append((file.relative_to(root).as_posix(), status.st_size, status.st_mtime_ns))
    return tuple(sorted(found))


def source_identity(path: Path) -> Identity | None:
    """The identity of the store at ``path`` now; ``None`` when it cannot be read."""
    try:
        if path.is_dir():
            return parquet_stats(path)
        status = os.stat(path)
    except OSError:
        return None
    return ((status.st_dev, status.st_ino),)


def file_sha256(path: Path, length: int | None = None) -> hashlib._Hash:
    """The SHA-256 state over the first ``length`` bytes of ``path`` (all of it: None);
    ``OSError`` when the file is shorter."""
    digest = hashlib.sha256()
    with path.open("rb", buffering=0) as stream:
        extend_sha256(digest, stream.fileno(), 0, length)
    return digest


def extend_sha256(digest: hashlib._Hash, descriptor: int, start: int, end: int | None) -> None:
    """Feed bytes ``[start, end)`` of ``descriptor`` (to its end: None) to ``digest``."""
    buffer = bytearray(_BLOCK)
    view = memoryview(buffer)
    offset = start
    while end is None or offset < end:
        want = _BLOCK if end is None else min(_BLOCK, end - offset)
        got = os.preadv(descriptor, [view[:want]], offset)
        if got == 0:
            if end is not None:
                raise OSError(f"the file ends at {offset}, before {end}")
            return
        digest.update(view[:got])
        offset += got


def parquet_part_files(root: Path, stats: tuple[tuple[str, int, int], ...]) -> tuple[PartFile, ...]:
    """Each file of ``stats`` with its SHA-256; ``OSError`` when one changed meanwhile."""
    parts = tuple(
        PartFile(name, size, mtime, "sha256:" + file_sha256(root / name).hexdigest())
        for name, size, mtime in stats
    )
    if parquet_stats(root) != stats:
        raise OSError("a partition file changed while it was hashed")
    return parts


def read_extent(
    path: Path, before: Identity, counts: RecordCounts, torn: bool, size: int
) -> ReadExtent | None:
    """What a full load of ``path`` read, when the store is the one it was before the read
    (``before``: :func:`source_identity`); ``None`` otherwise (no resume point is saved)."""
    if source_identity(path) != before:
        return None
    if path.is_dir():
        try:
            files = parquet_part_files(path, cast(tuple[tuple[str, int, int], ...], before))
        except OSError:
            return None
        return ReadExtent("parquet", counts, files=files)
    device, inode = cast(tuple[int, int], before[0])
    return ReadExtent("jsonl", counts, torn=torn, start=0, end=size, device=device, inode=inode)
