"""The JSONL record store: safe concurrent appends and a reader that survives torn lines.

Writing: all lines of one session are appended inside one :class:`filelock.FileLock`
section by a single ``os.write`` on a descriptor opened with ``O_APPEND``, so lines from
concurrent processes never interleave and a killed writer leaves a whole session or none
of it (only a power loss can tear the write). If the file ends in a torn line (a
writer died mid-write), the next append first ends it with a newline, so the torn
fragment stays one malformed line and never swallows a good record.

Reading: a torn *last* line (no trailing newline and not a valid record) is skipped
with a :class:`TornRecordWarning`; a malformed line elsewhere is skipped with a
:class:`MalformedRecordWarning` naming ``file:line`` and counted, or raises
:class:`~llm_council.errors.InputError` in strict mode. Older schema versions are
upgraded through :func:`~llm_council.bias_audit.record_schema.upgrade_record`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import platformdirs
from filelock import FileLock, Timeout
from pydantic import ValidationError

from llm_council.bias_audit.record_schema import ReviewRecord, upgrade_record
from llm_council.errors import InputError, RecordError

STORE_VARIABLE = "LLM_COUNCIL_BIAS_STORE"
DEFAULT_STORE_NAME = "bias_records.jsonl"
LOCK_TIMEOUT_S = 30.0


class TornRecordWarning(UserWarning):
    """The store's last line was cut off mid-write and was skipped."""


class MalformedRecordWarning(UserWarning):
    """A line of the store is not a valid record and was skipped."""


def store_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$LLM_COUNCIL_BIAS_STORE``, else ``bias_records.jsonl`` in the user's data directory."""
    env = os.environ if environ is None else environ
    configured = env.get(STORE_VARIABLE, "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_data_dir("llm-council")) / DEFAULT_STORE_NAME


_LOCKS: dict[str, FileLock] = {}


def _lock_for(path: Path) -> FileLock:
    """The store's lock (``<store>.lock``), one object per path: creating one costs ~0.1 ms."""
    key = str(path.absolute()) + ".lock"
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = FileLock(key, timeout=LOCK_TIMEOUT_S)
    return lock


def _ends_without_newline(descriptor: int) -> bool:
    size = os.fstat(descriptor).st_size
    if size == 0:
        return False
    return os.pread(descriptor, 1, size - 1) != b"\n"


def _write_fully(descriptor: int, payload: bytes) -> None:
    """One ``os.write`` for the payload; loop only if the kernel accepted part of it."""
    view = memoryview(payload)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def append_records(path: Path, records: Sequence[ReviewRecord]) -> int:
    """Append ``records`` (one JSON line each) under the store's lock; return how many."""
    if not records:
        return 0
    lines = [(record.model_dump_json() + "\n").encode("utf-8") for record in records]
    try:
        if not path.parent.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
        with _lock_for(path):
            descriptor = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                if _ends_without_newline(descriptor):
                    lines[0] = b"\n" + lines[0]
                # the whole session in one write: a killed writer leaves all of it or none
                _write_fully(descriptor, b"".join(lines))
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


class RecordReader:
    """Iterate the records of a store; after iteration, ``skipped`` lists what was dropped.

    ``skipped`` holds ``(line_number, reason)``; ``torn_tail`` says whether the last line
    was a torn write. ``strict=True`` raises :class:`InputError` on any malformed line
    except a torn last line (which a crash can legitimately leave).
    """

    def __init__(self, path: Path, *, strict: bool = False) -> None:
        self.path = Path(path)
        self.strict = strict
        self.skipped: list[tuple[int, str]] = []
        self.torn_tail = False

    def __iter__(self) -> Iterator[ReviewRecord]:
        self.skipped = []
        self.torn_tail = False
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        except OSError as error:
            raise RecordError(
                f"{self.path}: cannot read the record store: {error.strerror}"
            ) from error
        with handle:
            for line_number, raw_line in enumerate(handle, start=1):
                is_complete = raw_line.endswith(b"\n")
                if not raw_line.strip():
                    continue
                try:
                    record = _parse_line(raw_line)
                # JSONDecodeError is a ValueError; a deeply nested line raises RecursionError
                except (ValueError, ValidationError, RecursionError) as error:
                    reason = _describe(error)
                    if not is_complete:
                        self.torn_tail = True
                        self.skipped.append((line_number, f"torn last line: {reason}"))
                        warnings.warn(
                            f"{self.path}:{line_number}: skipped a torn last line "
                            "(a write was interrupted)",
                            TornRecordWarning,
                            stacklevel=2,
                        )
                        continue
                    if self.strict:
                        raise InputError(
                            f"malformed record: {reason}", path=str(self.path), line=line_number
                        ) from error
                    self.skipped.append((line_number, reason))
                    warnings.warn(
                        f"{self.path}:{line_number}: skipped a malformed record: {reason}",
                        MalformedRecordWarning,
                        stacklevel=2,
                    )
                    continue
                yield record


def read_records(path: Path, *, strict: bool = False) -> Iterator[ReviewRecord]:
    """The store's records in file order (see :class:`RecordReader` for what is skipped)."""
    return iter(RecordReader(path, strict=strict))
