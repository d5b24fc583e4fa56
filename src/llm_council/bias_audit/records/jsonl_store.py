"""The JSONL record store: all-or-nothing session appends and a reader that checks them.

Writing (:func:`append_records`): all lines of one session are appended inside one
lock section (an exclusive ``flock`` on ``<store>.lock``, the lock
:class:`filelock.FileLock` takes: :mod:`~llm_council.bias_audit.records.store_lock`) by one
``os.write`` on a descriptor opened with ``O_APPEND``, so lines from concurrent processes
never interleave. Every record carries
``session_n_records`` (filled in here), so a session cut short is detectable whatever its
size: a SIGKILL can stop a large ``write`` part-way (the kernel checks for fatal signals
between pages), and readers then drop the partial session. A write that *fails* (full
disk, file-size limit, I/O error) is rolled back: the file is truncated to its length
before the write, still under the lock. If even that fails, :class:`PartialWriteError`
says exactly how many records were left behind. Store paths that are not regular files
(a FIFO, a directory, a device) are refused before anything is written.

Reading (:class:`RecordReader`): the store is read up to one consistent length (taken
under the writers' lock when one exists, so no write is half-seen) in two passes. The
first counts each session's valid lines; the second yields the records of sessions whose
count equals their ``session_n_records`` and drops the others with one
:class:`IncompleteSessionWarning` ("N incomplete sessions (M records) dropped"). A torn
*last* line is skipped with a :class:`TornRecordWarning`; a malformed line elsewhere with
a :class:`MalformedRecordWarning` naming ``file:line`` (or :class:`InputError` in strict
mode). Older schema versions are upgraded through
:func:`~llm_council.bias_audit.records.schema.upgrade_record`.
"""

from __future__ import annotations

import json
import os
import stat
import warnings
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import platformdirs
from filelock import FileLock, Timeout
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from llm_council.bias_audit.records.schema import (
    SCHEMA_VERSION,
    ReviewRecord,
    lone_surrogate_field,
    upgrade_record,
)
from llm_council.bias_audit.records.store_lock import store_lock_file, store_write_lock
from llm_council.bias_audit.records.store_sniff import STORE_SNIFF_BYTES, holds_records
from llm_council.errors import InputError, RecordError

STORE_VARIABLE = "LLM_COUNCIL_BIAS_STORE"
DEFAULT_STORE_NAME = "bias_records.jsonl"
LOCK_TIMEOUT_S = 30.0


class TornRecordWarning(UserWarning):
    """The store's last line was cut off mid-write and was skipped."""


class MalformedRecordWarning(UserWarning):
    """A line of the store is not a valid record and was skipped."""


class IncompleteSessionWarning(UserWarning):
    """Sessions whose line count differs from their ``session_n_records`` were dropped."""


class PartialWriteError(RecordError):
    """A failed append could not be rolled back; ``records_left`` records stayed in the store.

    Readers drop them (their session is incomplete), but the bytes are on disk.
    """

    def __init__(self, message: str, *, records_left: int) -> None:
        super().__init__(message)
        self.records_left = records_left


def store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$LLM_COUNCIL_BIAS_STORE``, else ``bias_records.jsonl`` in the user's data directory."""
    env = os.environ if environ is None else environ
    configured = env.get(STORE_VARIABLE, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("llm-council")) / DEFAULT_STORE_NAME


_FILE_KINDS = {
    stat.S_IFIFO: "a FIFO",
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _not_regular_error(path: Path, mode: int) -> RecordError:
    kind = _FILE_KINDS.get(stat.S_IFMT(mode), "not a regular file")
    return RecordError(f"{path}: the record store must be a regular file, but it is {kind}")


def check_store_path(path: Path) -> None:
    """Raise :class:`RecordError` if ``path`` exists and is not a regular file.

    Cheap enough to run before a session's model calls, so a FIFO or a directory named
    as the store stops the run instead of swallowing (or hanging on) its records.
    """
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # created on first append, or reported then (a parent that is a file)
    except OSError as error:
        raise RecordError(f"{path}: cannot use as the record store: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise _not_regular_error(path, mode)


def _holds_records(path: Path) -> bool:
    try:
        return holds_records(path)
    except OSError as error:
        raise RecordError(f"{path}: cannot use as the record store: {error.strerror}") from None


def check_append_target(path: Path) -> None:
    """:func:`check_store_path`, and refuse an existing file that is not a store.

    Writers only: a store path naming someone's notes, directly or through a symlink, must
    not get records appended to it (issue 26 item 7). A reader keeps reading any regular
    file and reports its unreadable lines instead.
    """
    check_store_path(path)
    if path.is_file() and not _holds_records(path):
        target = f" (a symlink to {os.path.realpath(path)})" if os.path.islink(path) else ""
        raise RecordError(
            f"{path}{target}: not a bias-audit store (no line of its first "
            f"{STORE_SNIFF_BYTES // 1024} KiB is a record); refusing to append records to it"
        )


_LOCKS: dict[tuple[int, str], FileLock] = {}


def _lock_path(path: Path) -> str:
    """The resolved store's lock: a symlink to a store and the store share one writer lock."""
    return store_lock_file(path)


def _lock_for(path: Path) -> FileLock:
    """The store's lock (``<store>.lock``), one object per path and process.

    Cached because creating one costs ~0.1 ms; per process because filelock refuses an
    instance inherited across ``fork`` (a pre-forking server's workers each need their own).
    """
    lock_file = _lock_path(path)
    key = (os.getpid(), lock_file)
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = FileLock(lock_file, timeout=LOCK_TIMEOUT_S)
    return lock


def _ends_without_newline(descriptor: int, size: int) -> bool:
    return size > 0 and os.pread(descriptor, 1, size - 1) != b"\n"


def _write_fully(descriptor: int, payload: bytes) -> None:
    """One ``os.write`` for the payload; loop only if the kernel accepted part of it."""
    view = memoryview(payload)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def with_session_counts(records: Sequence[ReviewRecord]) -> list[ReviewRecord]:
    """``records`` with ``session_n_records`` set to each session's number of records here."""
    counts = Counter(record.session_id for record in records)
    return [
        record
        if record.session_n_records == counts[record.session_id]
        else record.model_copy(update={"session_n_records": counts[record.session_id]})
        for record in records
    ]


def _roll_back(
    descriptor: int, path: Path, start: int, payload: bytes, skip: int, error: OSError
) -> RecordError:
    """Truncate to ``start``; the error to raise says what the store holds afterwards."""
    n_records = payload.count(b"\n")
    reason = error.strerror or str(error)
    try:
        os.ftruncate(descriptor, start)
    except OSError as truncate_error:
        try:
            size = os.fstat(descriptor).st_size
        except OSError:
            size = start + len(payload)  # cannot tell: assume the worst, never understate
        landed = payload[skip : max(skip, min(size - start, len(payload)))]
        left = landed.count(b"\n")
        torn = " and a torn line" if landed and not landed.endswith(b"\n") else ""
        return PartialWriteError(
            f"{path}: cannot append records: {reason}; rollback failed "
            f"({truncate_error.strerror}): {left} of {n_records - (skip > 0)} records{torn} "
            "left in the store (readers drop this incomplete session)",
            records_left=left,
        )
    return RecordError(
        f"{path}: cannot append records: {reason} (rolled back: the store is unchanged)"
    )


def _update_profiles(path: Path, before: os.stat_result, records: Sequence[ReviewRecord]) -> None:
    """Merge the appended session into the reviewer-profile summary (under the lock).

    The records are already in the store: a summary that cannot be written (or a hostile
    one that cannot even be parsed) is left stale and rebuilt by the next lookup, never an
    error of the append.
    """
    # imported here: the profiles pull numpy and scipy, which reading a store does not need
    from llm_council.bias_audit.records.reviewer_profiles import (
        merge_after_append,
        profile_fields,
    )

    try:
        cells = profile_fields(records)
        merge_after_append(path, before, cells)
    except Exception as error:  # noqa: BLE001 - never fail an append whose records landed
        import structlog  # here: reading a store does not need it

        structlog.get_logger("llm_council.bias_audit").warning(
            "reviewer_profiles_not_updated", error=type(error).__name__
        )


def _update_adjustment_sums(
    path: Path, before: os.stat_result, records: Sequence[ReviewRecord]
) -> None:
    """Add the appended sessions to the debiased aggregate's summed history (ADR 0049;
    never fails the append). Imported here for the same reason as the profiles."""
    from llm_council.bias_audit.records.adjustment_sidecar import merge_after_append

    merge_after_append(path, before, records)


def _remove_stale_summary_temporaries(path: Path) -> None:
    """Under the lock: delete the summaries' temporary files a killed writer left."""
    from llm_council.bias_audit.records.summary_files import remove_stale_temporaries

    remove_stale_temporaries(Path(os.path.realpath(path)))


def _line(record: ReviewRecord) -> bytes:
    """The record's JSON line; :class:`RecordError` naming the field when a text field holds
    a lone UTF-16 surrogate (UTF-8 cannot store it: nothing of the session is written)."""
    try:
        return (record.model_dump_json() + "\n").encode("utf-8")
    except PydanticSerializationError:
        found = lone_surrogate_field(record)
        if found is None:
            raise
        raise RecordError(
            f"record of session {ascii(record.session_id)}: field {found[0]!r} holds a "
            f"lone UTF-16 surrogate at character {found[1]}, which UTF-8 cannot store"
        ) from None


def append_records(path: Path, records: Sequence[ReviewRecord]) -> int:
    """Append ``records`` under the store's lock, all or nothing; return how many.

    Raises :class:`RecordError` if nothing was written (including after a rollback), and
    :class:`PartialWriteError` in the one case where part of the session stayed behind.
    """
    if not records:
        return 0
    lines = [_line(record) for record in with_session_counts(records)]
    try:
        check_append_target(path)
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
        with store_write_lock(_lock_path(path), LOCK_TIMEOUT_S, lambda: _lock_for(path)):
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
            descriptor = os.open(path, flags, 0o600)
            try:
                status = os.fstat(descriptor)
                if not stat.S_ISREG(status.st_mode):  # replaced since the check above
                    raise _not_regular_error(path, status.st_mode)
                start = status.st_size
                skip = 1 if _ends_without_newline(descriptor, start) else 0
                payload = b"\n" * skip + b"".join(lines)
                try:
                    # the whole session in one write; readers check it against session_n_records
                    _write_fully(descriptor, payload)
                except OSError as error:
                    raise _roll_back(descriptor, path, start, payload, skip, error) from None
                _remove_stale_summary_temporaries(path)
                _update_profiles(path, status, records)
                _update_adjustment_sums(path, status, records)
            finally:
                os.close(descriptor)
    except Timeout as error:
        raise RecordError(
            f"{path}: could not lock the record store within {LOCK_TIMEOUT_S:g} s"
        ) from error
    except OSError as error:
        raise RecordError(f"{path}: cannot append records: {error.strerror or error}") from error
    return len(lines)


def _parse_line(raw_line: bytes) -> ReviewRecord:
    """One line as a current-version record; raises what :func:`_describe` explains."""
    try:  # fast path: a current-version line, parsed and validated in pydantic-core
        record = ReviewRecord.model_validate_json(raw_line)
        if record.schema_version == SCHEMA_VERSION:
            return record
    except ValidationError:
        pass  # the slow path below says precisely what is wrong (or upgrades an old line)
    parsed = json.loads(raw_line.decode("utf-8"))
    if not isinstance(parsed, dict):
        raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
    return ReviewRecord.model_validate(upgrade_record(parsed))


def _describe(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "record"
        return f"field '{field}': {first['msg']}"
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(error, RecursionError):
        return "JSON nested too deeply"
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _lines_up_to(handle: BinaryIO, end: int) -> Iterator[tuple[int, bytes]]:
    """``(line_number, raw_line)`` for the first ``end`` bytes; bytes past ``end`` are unseen."""
    handle.seek(0)
    position = 0
    for line_number, raw_line in enumerate(handle, start=1):
        if position >= end:
            return
        if position + len(raw_line) > end:
            raw_line = raw_line[: end - position]
        position += len(raw_line)
        yield line_number, raw_line


_MIXED = -1  # a session whose records disagree on session_n_records


class RecordReader:
    """Iterate the records of a store; after iteration, ``skipped`` lists what was dropped.

    ``skipped`` holds ``(line_number, reason)`` for every non-blank line not yielded
    (malformed, torn, or part of an incomplete session); ``torn_tail`` says whether the
    last line was a torn write; ``incomplete_sessions`` maps each dropped session to
    ``(valid lines found, session_n_records)``. ``strict=True`` raises :class:`InputError`
    on any malformed line except a torn last line (which a crash can legitimately leave).
    """

    def __init__(self, path: Path, *, strict: bool = False) -> None:
        self.path = Path(path)
        self.strict = strict
        self.skipped: list[tuple[int, str]] = []
        self.torn_tail = False
        self.incomplete_sessions: dict[str, tuple[int, int]] = {}

    def _open(self) -> BinaryIO | None:
        try:
            check_store_path(self.path)
            return self.path.open("rb")
        except FileNotFoundError:
            return None
        except OSError as error:
            raise RecordError(
                f"{self.path}: cannot read the record store: {error.strerror}"
            ) from error

    def _consistent_end(self, handle: BinaryIO) -> int:
        """The length to read: taken under the writers' lock, if any, so no write is half-seen."""
        if os.path.exists(_lock_path(self.path)):
            try:
                with _lock_for(self.path).acquire(timeout=LOCK_TIMEOUT_S):
                    return os.fstat(handle.fileno()).st_size
            except (Timeout, OSError):
                pass  # a read-only directory or a stuck writer: read what is there
        return os.fstat(handle.fileno()).st_size

    def _skip(self, line_number: int, raw_line: bytes, error: Exception) -> None:
        reason = _describe(error)
        if not raw_line.endswith(b"\n"):
            self.torn_tail = True
            self.skipped.append((line_number, f"torn last line: {reason}"))
            warnings.warn(
                f"{self.path}:{line_number}: skipped a torn last line (a write was interrupted)",
                TornRecordWarning,
                stacklevel=3,
            )
            return
        if self.strict:
            raise InputError(
                f"malformed record: {reason}", path=str(self.path), line=line_number
            ) from error
        self.skipped.append((line_number, reason))
        warnings.warn(
            f"{self.path}:{line_number}: skipped a malformed record: {reason}",
            MalformedRecordWarning,
            stacklevel=3,
        )

    def _count_sessions(self, handle: BinaryIO, end: int) -> None:
        """Pass 1: report malformed lines; find sessions whose line count is not as declared."""
        found: Counter[str] = Counter()
        declared: dict[str, int | None] = {}
        for line_number, raw_line in _lines_up_to(handle, end):
            if not raw_line.strip():
                continue
            try:
                record = _parse_line(raw_line)
            # JSONDecodeError is a ValueError; a deeply nested line raises RecursionError
            except (ValueError, ValidationError, RecursionError) as error:
                self._skip(line_number, raw_line, error)
                continue
            session = record.session_id
            found[session] += 1
            if session not in declared:
                declared[session] = record.session_n_records
            elif declared[session] != record.session_n_records:
                declared[session] = _MIXED
        self.incomplete_sessions = {
            session: (found[session], expected)
            for session, expected in declared.items()
            if expected is not None and expected != found[session]
        }

    def __iter__(self) -> Iterator[ReviewRecord]:
        self.skipped = []
        self.torn_tail = False
        self.incomplete_sessions = {}
        handle = self._open()
        if handle is None:
            return
        with handle:
            end = self._consistent_end(handle)
            self._count_sessions(handle, end)
            if self.incomplete_sessions:
                n_dropped = sum(found for found, _ in self.incomplete_sessions.values())
                warnings.warn(
                    f"{self.path}: {len(self.incomplete_sessions)} incomplete sessions "
                    f"({n_dropped} records) dropped: their line count differs from "
                    "session_n_records (a write was cut short)",
                    IncompleteSessionWarning,
                    stacklevel=2,
                )
            for line_number, raw_line in _lines_up_to(handle, end):
                if not raw_line.strip():
                    continue
                try:
                    record = _parse_line(raw_line)
                except (ValueError, ValidationError, RecursionError):
                    continue  # reported in pass 1
                counts = self.incomplete_sessions.get(record.session_id)
                if counts is not None:
                    found, expected = counts
                    declared = "disagree on" if expected == _MIXED else f"declare {expected}"
                    self.skipped.append(
                        (
                            line_number,
                            f"incomplete session: {found} records found, they {declared} "
                            "session_n_records",
                        )
                    )
                    continue
                yield record


def read_records(path: Path, *, strict: bool = False) -> Iterator[ReviewRecord]:
    """The store's complete sessions in file order (see :class:`RecordReader`)."""
    return iter(RecordReader(path, strict=strict))
