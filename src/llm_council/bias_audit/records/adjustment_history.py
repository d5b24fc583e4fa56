"""The lookup side of the summed reviewer history: the sidecar if fresh, else rebuilt.

:func:`load_council_sums` accepts ``<store>.adjustments.json``
(:mod:`~llm_council.bias_audit.records.adjustment_sidecar`) only when its seal verifies
and it describes the store as it is now; otherwise (missing, forged, damaged, or a store
written, truncated or compacted behind its back) it sums every complete session the
store's reader gives. A store past :data:`BACKGROUND_REBUILD_BYTES` is summed in a
background thread and the lookup raises :class:`RecordError`, so that session aggregates
raw and the middleware's error says why.

Nothing here writes beside the store (a reader may only read it): a rebuild is kept in
this process's memory (:func:`~llm_council.bias_audit.records.summary_files.remember_rebuilt`),
later lookups use it while the store is unchanged, and the store's writer writes it
beside the store at its next append.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import BinaryIO

import structlog

from llm_council.bias_audit.records.adjustment_sidecar import (
    SIDECAR_KIND,
    CouncilSums,
    merge_councils,
    read_sidecar,
    store_key,
    sums_by_council,
)
from llm_council.bias_audit.records.background_rebuild import rebuild_once_in_background
from llm_council.bias_audit.records.jsonl_store import RecordReader
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_lock import (
    store_lock_file,
    store_write_lock,
    wait_for_writers,
)
from llm_council.bias_audit.records.summary_files import (
    rebuilt,
    remember_rebuilt,
    summarised_store,
)
from llm_council.errors import RecordError

log = structlog.get_logger("llm_council.bias_audit")

#: a stale store larger than this is summed in a background thread (a 32 MiB store holds
#: some 70 000 records, seconds to read)
BACKGROUND_REBUILD_BYTES = 32 * 1024 * 1024
#: records summed at a time while rebuilding (whole sessions), bounding its memory
_REBUILD_BATCH_RECORDS = 50_000
_LOCK_WAIT_S = 10.0
#: at most this much appended during a rebuild is read under the writers' lock to catch up
CATCH_UP_BYTES = 8 * 1024 * 1024


class _ReaderUpTo(RecordReader):
    """The store's reader stopped at a length taken under the writers' lock, so the sums
    describe exactly the store key written with them."""

    def __init__(self, path: Path, end: int) -> None:
        super().__init__(path)
        self.end = end

    def _consistent_end(self, handle: BinaryIO) -> int:
        return min(self.end, os.fstat(handle.fileno()).st_size)


def _lock_file(store: Path) -> str:
    return store_lock_file(store)


def _under_writer_lock() -> AbstractContextManager[object]:
    return nullcontext()


def _locked_status(store: Path) -> os.stat_result:
    if os.path.exists(_lock_file(store)):
        try:
            with store_write_lock(_lock_file(store), _LOCK_WAIT_S, _under_writer_lock):
                return os.stat(store)
        except Exception:  # noqa: BLE001, S110 - a read-only directory or a stuck writer
            pass
    return os.stat(store)


def _session_batches(records: Iterable[ReviewRecord]) -> Iterator[list[ReviewRecord]]:
    """Whole sessions (a session's lines are contiguous: one write each), in batches."""
    batch: list[ReviewRecord] = []
    for record in records:
        if len(batch) >= _REBUILD_BATCH_RECORDS and record.session_id != batch[-1].session_id:
            yield batch
            batch = []
        batch.append(record)
    if batch:
        yield batch


def rebuild_sums(store: Path) -> CouncilSums:
    """The sums of every complete session of the store, kept in memory for the store's
    state they describe (never written beside it: that is the writer's, at its next
    append). Reads only.

    Sessions appended while it read (a large store takes seconds) are then added under
    the writers' lock (:func:`_caught_up`), so under steady traffic the rebuild still ends
    fresh instead of stale again by the time it is done.
    """
    store = summarised_store(store)
    status = _locked_status(store)
    councils: CouncilSums = {}
    with warnings.catch_warnings():
        # a torn or malformed line is the report's to show, not every session's
        warnings.simplefilter("ignore")
        for batch in _session_batches(_ReaderUpTo(store, status.st_size)):
            councils = merge_councils(councils, sums_by_council(batch))
    caught_up = _caught_up(store, status, councils)
    if caught_up is not None:
        return caught_up
    remember_rebuilt(SIDECAR_KIND, store, store_key(status), councils)
    return councils


def _caught_up(store: Path, summed: os.stat_result, councils: CouncilSums) -> CouncilSums | None:
    """Under the writers' lock: add the sessions appended since ``summed`` (the store's
    state the sums describe) and keep them for the store as it is now; None when the
    store was replaced, shrank, grew by more than :data:`CATCH_UP_BYTES` or cannot be
    locked (the caller keeps what it summed)."""
    if not os.path.exists(_lock_file(store)):
        return None
    try:
        with store_write_lock(_lock_file(store), _LOCK_WAIT_S, _under_writer_lock):
            now = os.stat(store)
            if store_key(now) == store_key(summed):
                return None
            grown = now.st_size - summed.st_size
            if now.st_ino != summed.st_ino or not 0 < grown <= CATCH_UP_BYTES:
                return None
            with store.open("rb") as handle:
                handle.seek(summed.st_size)
                tail = handle.read(grown)
            merged = merge_councils(councils, sums_by_council(_complete_sessions(tail)))
            remember_rebuilt(SIDECAR_KIND, store, store_key(now), merged)
            return merged
    except Exception:  # noqa: BLE001 - a lock we cannot take or a file we cannot write
        return None


def _complete_sessions(tail: bytes) -> list[ReviewRecord]:
    """The records of the appends in ``tail`` whose sessions are complete (the count of
    their lines equals their ``session_n_records``), as the store's reader keeps them."""
    records = []
    for raw_line in tail.split(b"\n"):
        if not raw_line.strip():
            continue
        try:
            records.append(ReviewRecord.model_validate_json(raw_line))
        except (ValueError, RecursionError):  # pydantic's ValidationError too
            continue
    found = Counter(record.session_id for record in records)
    return [
        record
        for record in records
        if record.session_n_records is None or record.session_n_records == found[record.session_id]
    ]


def _rebuild_in_background(store: Path) -> None:
    # a failure leaves the sums stale: the next lookup tries again
    rebuild_once_in_background(
        f"adjustments:{summarised_store(store)}",
        lambda: rebuild_sums(store),
        lambda error: log.warning("adjustment_sums_not_rebuilt", error=str(error)),
        thread_name="adjustment-sums-rebuild",
    )


def load_council_sums(store: Path) -> CouncilSums:
    """The store's sums per council: the sealed file when it describes the store as it is
    (or this process's rebuild at that state), else rebuilt from the records (in the
    background for a large store, raising :class:`RecordError`). A missing store has no
    history. Reads only: nothing is written beside the store.

    A lookup that races a writer (the store appended, the file not yet rewritten) looks
    again under the writers' lock before rebuilding.
    """
    store = summarised_store(store)
    for locked in (False, True):
        try:
            status = os.stat(store)
        except FileNotFoundError:
            return {}
        read = read_sidecar(store, status.st_size)
        if read is not None and read[0] == store_key(status):
            return read[1]
        kept = rebuilt(SIDECAR_KIND, store, store_key(status))
        if kept is not None:
            return kept
        if locked or read is None or not wait_for_writers(store, _LOCK_WAIT_S):
            break
    if status.st_size > BACKGROUND_REBUILD_BYTES:
        _rebuild_in_background(store)
        raise RecordError(
            f"{store}: the summed reviewer history is stale and being rebuilt in the "
            f"background ({status.st_size / 2**20:.0f} MiB store); this session aggregates raw"
        )
    return rebuild_sums(store)
