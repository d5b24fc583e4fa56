"""Where a re-run of the report resumes reading a store, and what the skipped prefix held.

A :class:`ResumePoint` is saved in the summary file (ADR 0081): for a JSONL store the
offset of the first line not folded and the SHA-256 of every byte before it; for a
Parquet directory each partition file's identity (path, size, ``mtime_ns``, SHA-256).
Both carry the prefix's load counts (every counter of :class:`~.raw_records.RecordCounts`)
and the ids of the prefix's sessions that were not folded (incomplete ones, sessions
with only live-check lines or bad scores), so a tail load can give the header a full
load gives, and refuse a tail line of a session the prefix already holds.
A :class:`ReadExtent` says what one load read, for the next resume point.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_council.bias_audit.report.load.raw_records import RecordCounts

#: the version of the session rules (:mod:`.raw_records`) a prefix's counts were made
#: with; a change of the rules changes what a prefix yields without changing its bytes
LOAD_RULES = 1
KINDS = ("jsonl", "parquet")

ZERO_COUNTS = RecordCounts(0, 0, 0, 0, 0, 0, 0)
_COUNT_NAMES = tuple(item.name for item in dataclasses.fields(RecordCounts))


def add_counts(first: RecordCounts, second: RecordCounts, sign: int = 1) -> RecordCounts:
    """``first + sign * second``, counter by counter (``sign`` is 1 or -1)."""
    return RecordCounts(
        **{name: getattr(first, name) + sign * getattr(second, name) for name in _COUNT_NAMES}
    )


def counts_to_json(counts: RecordCounts) -> dict[str, int]:
    return {name: int(getattr(counts, name)) for name in _COUNT_NAMES}


def counts_from_json(value: Any) -> RecordCounts:
    """The counts in ``value``; ``ValueError`` naming the field unless each is a whole
    number >= 0 and no field is missing or extra."""
    if not isinstance(value, dict) or set(value) != set(_COUNT_NAMES):
        raise ValueError("resume counts: not the fields of RecordCounts")
    for name in _COUNT_NAMES:
        number = value[name]
        if not isinstance(number, int) or isinstance(number, bool) or number < 0:
            raise ValueError(f"resume counts: field {name!r} is not a whole number >= 0")
    return RecordCounts(**{name: int(value[name]) for name in _COUNT_NAMES})


@dataclass(frozen=True)
class PartFile:
    """One Parquet partition file as it was read: path under the store, size, mtime, digest."""

    path: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class ResumePoint:
    """The prefix a re-run may skip, and what a full load of it reports."""

    kind: str
    counts: RecordCounts
    other_session_ids: np.ndarray  # sorted; prefix sessions with usable lines, not folded
    offset: int = 0  # JSONL: the first byte not in the prefix
    prefix_sha256: str = ""  # JSONL: "sha256:<hex>" of bytes [0, offset)
    files: tuple[PartFile, ...] = ()  # Parquet: the files of the prefix
    load_rules: int = LOAD_RULES

    def to_json(self) -> dict[str, Any]:
        """JSON-safe values (the ids go to the file's arrays)."""
        return {
            "kind": self.kind,
            "load_rules": self.load_rules,
            "offset": self.offset,
            "prefix_sha256": self.prefix_sha256,
            "files": [dataclasses.asdict(part) for part in self.files],
            "counts": counts_to_json(self.counts),
        }

    @classmethod
    def from_json(cls, value: Any, other_session_ids: np.ndarray) -> ResumePoint:
        """The resume point in ``value``; ``ValueError`` naming the field when malformed."""
        if not isinstance(value, dict):
            raise ValueError("resume: not an object")
        kind, offset, rules = value.get("kind"), value.get("offset"), value.get("load_rules")
        if kind not in KINDS:
            raise ValueError(f"resume: field 'kind' is {kind!r}")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("resume: field 'offset' is not a whole number >= 0")
        if not isinstance(rules, int) or isinstance(rules, bool):
            raise ValueError("resume: field 'load_rules' is not a whole number")
        digest = value.get("prefix_sha256")
        if not isinstance(digest, str):
            raise ValueError("resume: field 'prefix_sha256' is not a string")
        files = value.get("files")
        if not isinstance(files, list):
            raise ValueError("resume: field 'files' is not a list")
        ids = np.asarray(other_session_ids)
        if ids.ndim != 1 or (ids.size and ids.dtype.kind != "U"):
            raise ValueError("resume: the other sessions' ids are not a list of strings")
        return cls(
            kind=str(kind),
            counts=counts_from_json(value.get("counts")),
            other_session_ids=ids.astype(str),
            offset=offset,
            prefix_sha256=digest,
            files=tuple(_part_file(entry) for entry in files),
            load_rules=rules,
        )


def _part_file(entry: Any) -> PartFile:
    if not isinstance(entry, dict) or set(entry) != {"path", "size", "mtime_ns", "sha256"}:
        raise ValueError("resume: a file entry is not (path, size, mtime_ns, sha256)")
    path, digest = entry["path"], entry["sha256"]
    size, mtime = entry["size"], entry["mtime_ns"]
    if not (isinstance(path, str) and isinstance(digest, str)):
        raise ValueError("resume: a file entry's path or sha256 is not a string")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (size, mtime)):
        raise ValueError(f"resume: file {path!r}: size or mtime_ns is not a whole number >= 0")
    return PartFile(path, size, mtime, digest)


class TailRefused(Exception):
    """The saved prefix cannot be used with this tail: the report must load every record."""


@dataclass(frozen=True)
class ReadExtent:
    """What one load read, so the next resume point can be placed.

    ``start``/``end``: the byte range of a JSONL store read (a full load starts at 0);
    ``device``/``inode``: the file read; ``files``: the Parquet files read;
    ``counts``: the load counts of what was read (not of the prefix before ``start``);
    ``torn``: the last line read was incomplete. A tail load also carries the resume
    point it started from (``base``) and the verified summaries (``base_summaries``). A
    JSONL load carries the :class:`~.prefix_hasher.PrefixHasher` hashing its prefix on a
    background thread (``prefix_hasher``; a tail load's checks the saved digest), which
    the next resume point takes its digest from (ADR 0094).
    """

    kind: str
    counts: RecordCounts
    torn: bool = False
    start: int = 0
    end: int = 0
    device: int = 0
    inode: int = 0
    files: tuple[PartFile, ...] = ()
    base: ResumePoint | None = None
    base_summaries: Any = None
    prefix_hasher: Any = None  # a PrefixHasher (its module imports this one)
    appending: bool = False
