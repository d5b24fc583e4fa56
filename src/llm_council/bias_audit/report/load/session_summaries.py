"""The incremental report's summary file beside a store: ``<store>.report-sessions``.

It holds, per incremental section (ADR 0073), the section's version and its summary of
the sessions already folded, with what they cover: the folded sessions' ids and record
counts, the store's state when they were read (:mod:`.store_coverage`) and the settings
that shape the numbers. Layout: one line of sealed JSON (:mod:`~llm_council.bias_audit.
records.summary_seal`, kind ``"report-sessions"``), a newline, then the arrays' raw bytes
(:mod:`.summary_payload`), bound to the seal by their SHA-256 in the JSON.

Integrity as ADR 0052: the bytes are verified against the seal before any JSON is parsed;
the file is read without following a symlink (:func:`~llm_council.bias_audit.records.
summary_files.read_summary`); it is written 0600 through ``mkstemp`` and ``os.replace``
under the store's writer lock; a file that does not verify (edited, truncated, another
store's, another format) is ignored, and the report is computed from the records and the
file rewritten. A store whose directory cannot be written is summarised in memory only.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import structlog
from filelock import FileLock

from llm_council.bias_audit.records.store_lock import store_lock_file, store_write_lock
from llm_council.bias_audit.records.summary_files import (
    SummaryUnverifiable,
    read_summary,
    summarised_store,
    write_summary_atomically,
)
from llm_council.bias_audit.records.summary_seal import sealed_json, unsealed_json
from llm_council.bias_audit.report.load.resume_point import ResumePoint
from llm_council.bias_audit.report.load.summary_payload import (
    decode_arrays,
    digest,
    encode_array_chunks,
)

log = structlog.get_logger("llm_council.bias_audit")

SEAL_KIND = "report-sessions"
#: the file's layout version; a file of another is rebuilt
FILE_FORMAT = 3  # 3: the resume point (ADR 0081)
SUFFIX = ".report-sessions"
#: the largest file read (10M records of a 5-member council need about 150 MB)
MAX_FILE_BYTES = 512 * 1024 * 1024
LOCK_TIMEOUT_S = 30.0
#: the arrays every file holds, beside the sections' own
_SESSION_IDS = "folded/session_id"
_SESSION_RECORDS = "folded/n_records"
_OTHER_PREFIX_IDS = "folded/prefix_other_session_ids"


@dataclass(frozen=True)
class SavedSection:
    """One section's saved summary: its version, JSON metadata and arrays."""

    version: int
    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]


@dataclass(frozen=True)
class SessionSummaries:
    """What the file holds: the folded sessions (sorted ids; per session its record count
    and a digest of its records' content, as uint64 pairs), the store's coverage, the
    settings and each section's summary."""

    coverage: dict[str, Any]
    settings: dict[str, Any]
    session_ids: np.ndarray
    session_records: np.ndarray
    sections: dict[str, SavedSection] = field(default_factory=dict)
    #: where a tail load may resume reading the store (ADR 0081); None: a full load
    resume: ResumePoint | None = None


def summaries_path(store: str | Path) -> Path:
    """``<resolved store>.report-sessions`` (a symlink and its target share one file)."""
    resolved = summarised_store(store)
    return resolved.with_name(resolved.name + SUFFIX)


def encode_summaries(
    store: str | Path, summaries: SessionSummaries, *, compact: bool = True
) -> bytes | None:
    """The file's bytes; ``None`` without a sealing key (nothing is then written).
    ``compact=False``: every array at full width (ADR 0083's baseline layout)."""
    arrays: dict[str, np.ndarray] = {
        _SESSION_IDS: summaries.session_ids,
        _SESSION_RECORDS: summaries.session_records,
    }
    if summaries.resume is not None:
        arrays[_OTHER_PREFIX_IDS] = summaries.resume.other_session_ids
    sections_meta: dict[str, Any] = {}
    for name, section in summaries.sections.items():
        if "/" in name:
            raise ValueError(f"section name {name!r} holds a '/'")
        sections_meta[name] = {"version": section.version, "meta": section.meta}
        for array_name, values in section.arrays.items():
            arrays[f"{name}/{array_name}"] = values
    directory, chunks = encode_array_chunks(arrays, compact=compact)
    body = {
        "format": FILE_FORMAT,
        "coverage": summaries.coverage,
        "settings": summaries.settings,
        "sections": sections_meta,
        "resume": None if summaries.resume is None else summaries.resume.to_json(),
        "arrays": directory,
        "arrays_digest": digest(chunks),
    }
    sealed = sealed_json(SEAL_KIND, str(summarised_store(store)), body, resolved=True)
    return None if sealed is None else b"".join([sealed, b"\n", *chunks])


def decode_summaries(store: str | Path, content: bytes) -> SessionSummaries:
    """The summaries in ``content``; :class:`SummaryUnverifiable` saying why when the seal,
    the digest or the layout does not hold."""
    # canonical JSON holds no raw newline; the arrays' bytes stay a view of ``content``
    newline = content.find(b"\n")
    sealed = content if newline < 0 else content[:newline]
    raw = memoryview(content)[newline + 1 :] if newline >= 0 else memoryview(b"")
    body = unsealed_json(SEAL_KIND, str(summarised_store(store)), sealed, resolved=True)
    if body is None or newline < 0:
        raise SummaryUnverifiable("the seal does not verify (edited, or another store's)")
    if body.get("format") != FILE_FORMAT:
        raise SummaryUnverifiable(
            f"format {body.get('format')!r}, this reader writes {FILE_FORMAT}"
        )
    if body.get("arrays_digest") != digest(raw):
        raise SummaryUnverifiable("the arrays' bytes do not match their digest (truncated?)")
    try:
        arrays = decode_arrays(body.get("arrays"), raw)
        sections_meta = body.get("sections")
        coverage, settings = body.get("coverage"), body.get("settings")
        if not (isinstance(sections_meta, dict) and isinstance(coverage, dict)):
            raise ValueError("sections or coverage is not an object")
        if not isinstance(settings, dict):
            raise ValueError("settings is not an object")
        session_ids = arrays.pop(_SESSION_IDS)
        session_records = arrays.pop(_SESSION_RECORDS)
        if session_ids.ndim != 1 or session_records.shape != (session_ids.size, 2):
            raise ValueError("the folded sessions' ids and counts differ in shape")
        other_ids = arrays.pop(_OTHER_PREFIX_IDS, None)
        resume = None
        if body.get("resume") is not None:
            if other_ids is None:
                raise ValueError("resume: no ids of the prefix's other sessions")
            resume = ResumePoint.from_json(body["resume"], other_ids)
        sections = {
            name: _saved_section(name, entry, arrays) for name, entry in sections_meta.items()
        }
    except (KeyError, ValueError) as error:
        raise SummaryUnverifiable(f"malformed: {error}") from None
    return SessionSummaries(coverage, settings, session_ids, session_records, sections, resume)


def _saved_section(name: str, entry: Any, arrays: Mapping[str, np.ndarray]) -> SavedSection:
    if not isinstance(entry, dict) or not isinstance(entry.get("version"), int):
        raise ValueError(f"section {name!r}: no version")
    meta = entry.get("meta")
    if not isinstance(meta, dict):
        raise ValueError(f"section {name!r}: meta is not an object")
    prefix = f"{name}/"
    mine = {key[len(prefix) :]: value for key, value in arrays.items() if key.startswith(prefix)}
    return SavedSection(int(entry["version"]), meta, mine)


def read_summaries(store: str | Path) -> SessionSummaries | None:
    """The verified summaries beside ``store``; ``None`` when there are none or they do
    not verify (logged once, with the reason: the caller recomputes them)."""
    path = summaries_path(store)
    try:
        content = read_summary(path, MAX_FILE_BYTES)
        if content is None:
            return None
        return decode_summaries(store, content)
    except SummaryUnverifiable as error:
        log.warning("report_sessions_unverifiable", path=str(path), reason=str(error))
        return None


def write_summaries(store: str | Path, summaries: SessionSummaries) -> bool:
    """Replace the file under the store's writer lock; ``False`` when nothing was written
    (no sealing key, a read-only directory: the summaries then live in memory only)."""
    content = encode_summaries(store, summaries)
    if content is None:
        return False
    path = summaries_path(store)
    lock_file = store_lock_file(summarised_store(store))
    try:
        with store_write_lock(lock_file, LOCK_TIMEOUT_S, lambda: FileLock(lock_file)):
            write_summary_atomically(path, content)
    except OSError as error:
        if error.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EISDIR):
            raise
        log.info("report_sessions_not_written", path=str(path), reason=os.strerror(error.errno))
        return False
    except Exception as error:  # noqa: BLE001 - a lock not taken in time: stay in memory
        log.info("report_sessions_not_written", path=str(path), reason=type(error).__name__)
        return False
    return True
