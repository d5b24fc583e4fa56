"""Copy a JSONL record store into a PostgreSQL store (``llm-council store-copy``).

The JSONL reader's complete sessions (:class:`~.jsonl_store.RecordReader`: malformed
lines, a torn tail and incomplete sessions are left out, and counted), written through
the same :class:`~.postgres_store.PostgresWriter` a council uses: one transaction per
session, folded into the reviewer profiles, a few sessions in flight over the pool. A
session already in the store is skipped before its sums are computed (and a race with
another writer adds nothing: ``ON CONFLICT DO NOTHING``), so a copy that was interrupted
is finished by running it again. A session the store refuses (a
position outside ``n_candidates``, a score beyond the bound) is left out and counted; a
database error stops the copy.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from llm_council.bias_audit.records.jsonl_store import (
    IncompleteSessionWarning,
    MalformedRecordWarning,
    RecordReader,
)
from llm_council.bias_audit.records.postgres_store import PostgresWriter, check_session
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import RecordError

#: sessions written at once (each in its own transaction, over the writer's pool)
IN_FLIGHT = 8


@dataclass
class CopySummary:
    """What a copy read, wrote and left out."""

    sessions_read: int = 0
    sessions_written: int = 0
    sessions_already_present: int = 0
    records_written: int = 0
    lines_left_out: int = 0
    sessions_refused: list[str] = field(default_factory=list)
    sessions_split: int = 0


def _sessions(reader: RecordReader, summary: CopySummary) -> Iterator[list[ReviewRecord]]:
    """The reader's records grouped by session (a JSONL session is one contiguous write;
    a session found again after another one is left out and counted)."""
    seen: set[str] = set()
    split: set[str] = set()
    current: list[ReviewRecord] = []
    for record in reader:
        if current and record.session_id != current[0].session_id:
            seen.add(current[0].session_id)
            yield current
            current = []
        if record.session_id in seen:
            split.add(record.session_id)
            summary.sessions_split = len(split)
            continue
        current.append(record)
    if current:
        yield current


async def _copy(
    source: Path, url: str, progress: Callable[[CopySummary], None] | None
) -> CopySummary:
    summary = CopySummary()
    reader = RecordReader(source, strict=False)
    writer = PostgresWriter.for_url(url)

    async def batch(sessions: list[list[ReviewRecord]]) -> None:
        stored = await writer.stored_sessions([records[0].session_id for records in sessions])
        summary.sessions_already_present += len(stored)
        await asyncio.gather(
            *(one(records) for records in sessions if records[0].session_id not in stored)
        )

    async def one(records: list[ReviewRecord]) -> None:
        try:
            check_session(url, records)
        except RecordError as error:
            summary.sessions_refused.append(str(error))
            return
        added = await writer.write_session(records)
        if added:
            summary.sessions_written += 1
            summary.records_written += added
        else:
            summary.sessions_already_present += 1

    # what the reader leaves out is counted in the summary, not warned line by line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MalformedRecordWarning)
        warnings.simplefilter("ignore", IncompleteSessionWarning)
        try:
            await _copy_sessions(reader, summary, batch, progress)
        finally:
            await writer.aclose()
    summary.lines_left_out = len(reader.skipped)
    return summary


async def _copy_sessions(
    reader: RecordReader,
    summary: CopySummary,
    write_batch: Callable[[list[list[ReviewRecord]]], Awaitable[None]],
    progress: Callable[[CopySummary], None] | None,
) -> None:
    """Write the reader's sessions, :data:`IN_FLIGHT` at a time."""
    batch: list[list[ReviewRecord]] = []
    for records in _sessions(reader, summary):
        summary.sessions_read += 1
        batch.append(records)
        if len(batch) == IN_FLIGHT:
            await write_batch(batch)
            batch = []
            if progress is not None:
                progress(summary)
    if batch:
        await write_batch(batch)


def copy_jsonl_to_postgres(
    source: Path, url: str, *, progress: Callable[[CopySummary], None] | None = None
) -> CopySummary:
    """Copy every complete session of the JSONL store ``source`` into the PostgreSQL
    store at ``url`` (migrated first, by ``store-migrate``); idempotent. ``progress`` is
    called with the running summary after every :data:`IN_FLIGHT` sessions."""
    if not source.exists():
        raise RecordError(f"{source}: no such JSONL store")
    return asyncio.run(_copy(source, url, progress))
