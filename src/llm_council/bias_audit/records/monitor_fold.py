"""Folding a store's sessions into the anytime monitor, in the order they were written.

Lines are grouped into sessions as written (one write per session, so a session's lines
are consecutive); a session ends at a line of another session or at a malformed line. A
session whose line count differs from its ``session_n_records`` is skipped, as is a
``session_id`` already folded in (8-byte BLAKE2b digests: the state never holds the ids).
The e-process depends on the order of the sessions, so they are folded in store order.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from pydantic import ValidationError

from llm_council.bias_audit.records.monitor_sessions import (
    MonitoredRecord,
    SessionEstimates,
    session_estimates,
)
from llm_council.bias_audit.records.schema import SCHEMA_VERSION, ReviewRecord, upgrade_record
from llm_council.stats.monitor.anytime_monitor import (
    MonitorSettings,
    MonitorSums,
    fold_session,
)
from llm_council.stats.monitor.monitor_session_effects import BIASES

#: bytes read at a time while folding the store
READ_BLOCK_BYTES = 1 << 20
DIGEST_BYTES = 8
#: the float sums of :class:`MonitorSums` besides the counts and the peaks
SUM_FIELDS = ("inv_k_sum", "x_over_k_sum", "x2_over_k_sum", "precision", "weighted_sum")


@dataclass(frozen=True)
class MonitorState:
    """The monitor over one store: ``reviewers`` name the rows of ``sums`` (shape
    ``(len(reviewers), len(BIASES))``); ``session_digests`` the folded sessions' digests
    and ``digest_log`` the same digests concatenated in the order folded (what the file
    holds: appending to it costs nothing per folded session, sorting a set would);
    ``lines_read`` the store's lines before ``offset``, of which ``malformed_lines`` were
    neither blank nor a record (the first: line ``first_malformed_line``, 1-based; 0:
    none), so ``bias-watch`` can name a file that is not a store."""

    settings: MonitorSettings
    reviewers: tuple[str, ...] = ()
    sums: MonitorSums = field(default_factory=lambda: MonitorSums.empty((0, len(BIASES))))
    n_sessions: int = 0
    session_digests: frozenset[bytes] = frozenset()
    digest_log: bytes = b""
    inode: int | None = None
    offset: int = 0
    fingerprint: str = ""
    lines_read: int = 0
    malformed_lines: int = 0
    first_malformed_line: int = 0


def session_digest(session_id: str) -> bytes:
    """8 bytes of BLAKE2b of the id: the state never holds the ids themselves."""
    return hashlib.blake2b(session_id.encode("utf-8"), digest_size=DIGEST_BYTES).digest()


def _grow(state: MonitorState, names: tuple[str, ...]) -> MonitorState:
    """``state`` with a row for every name in ``names`` it lacks (appended, in order)."""
    new = tuple(name for name in names if name not in state.reviewers)
    if not new:
        return state
    extra = MonitorSums.empty((len(new), len(BIASES)))
    joined = {
        name: np.concatenate([getattr(state.sums, name), getattr(extra, name)])
        for name in ("n", *SUM_FIELDS, "peak_log_e", "confirmed_at")
    }
    return replace(state, reviewers=state.reviewers + new, sums=MonitorSums(**joined))


def fold_estimates(state: MonitorState, session: SessionEstimates) -> MonitorState:
    """``state`` after one session's estimates (new reviewers get a row)."""
    grown = _grow(state, session.reviewers)
    if grown.reviewers == session.reviewers:  # the usual case: no rows to scatter into
        estimates, variances = session.estimates, session.unit_variances
    else:
        index = {name: row for row, name in enumerate(grown.reviewers)}
        rows = np.array([index[name] for name in session.reviewers], dtype=np.intp)
        estimates = np.full((len(grown.reviewers), len(BIASES)), np.nan)
        variances = np.full_like(estimates, np.nan)
        estimates[rows] = session.estimates
        variances[rows] = session.unit_variances
    sums = fold_session(grown.sums, estimates, variances, grown.settings)
    return replace(grown, sums=sums)


class SessionFolder:
    """Folds sessions into a state one at a time; :meth:`result` is the state after them.

    The new sessions' digests are kept apart from the state's (an ordered dict for the
    whole fold): copying the state's set per session would make a rebuild quadratic in
    the number of sessions, and an update after an append pay for the whole store.
    """

    def __init__(self, state: MonitorState) -> None:
        self.state = state
        self.n_sessions = state.n_sessions
        self.known = state.session_digests
        self.new: dict[bytes, None] = {}

    def add(self, records: Sequence[MonitoredRecord]) -> None:
        """Fold one session's records, unless its id was folded in already (the count
        and the digests move even when the session gives no estimate)."""
        digest = session_digest(records[0].session_id)
        if digest in self.known or digest in self.new:
            return
        estimates = session_estimates(records)
        if estimates is not None:
            self.state = fold_estimates(self.state, estimates)
        self.n_sessions += 1
        self.new[digest] = None

    def result(self) -> MonitorState:
        if not self.new:
            return replace(self.state, n_sessions=self.n_sessions)
        return replace(
            self.state,
            n_sessions=self.n_sessions,
            session_digests=self.known.union(self.new),
            digest_log=self.state.digest_log + b"".join(self.new),
        )


def fold_session_records(state: MonitorState, records: Sequence[MonitoredRecord]) -> MonitorState:
    """``state`` after one session's records (:meth:`SessionFolder.add`)."""
    folder = SessionFolder(state)
    folder.add(records)
    return folder.result()


#: a JSON escape of a UTF-16 surrogate (``\\ud800``-``\\udfff``): paired, it is one
#: character; alone, the line is malformed JSON to the report's loader (DuckDB)
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _parse(line: bytes) -> ReviewRecord | None:
    """A line as a current-version record, an older version upgraded, or ``None`` (not a
    record, or text with a lone surrogate: the report's loader counts such a line as
    unreadable, and its id cannot be encoded to be digested, so the fold skips it too)."""
    record = _parsed(line)
    if record is None or b"\\u" not in line:  # most lines: no escape at all, one fast scan
        return record
    if _SURROGATE_ESCAPE.search(line) and not _encodable(record):
        return None
    return record


def _encodable(record: ReviewRecord) -> bool:
    """Does every text field of ``record`` encode as UTF-8 (no lone surrogate)?"""
    for value in record.model_dump().values():
        for text in value if isinstance(value, list | tuple) else [value]:
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    return False
    return True


def _parsed(line: bytes) -> ReviewRecord | None:
    """A line as a current-version record (parsed in pydantic-core, as the store's reader
    does), an older version upgraded, or ``None``."""
    try:
        record = ReviewRecord.model_validate_json(line)
        if record.schema_version == SCHEMA_VERSION:
            return record
    except ValidationError:
        pass  # an older version, or not a record: the slow path below decides
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict):
            return None
        return ReviewRecord.model_validate(upgrade_record(raw))
    except (ValueError, ValidationError, RecursionError):
        return None


def _complete_lines(handle: Any, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """``(offset just past it, line)`` for every newline-terminated line in
    ``[start, end)``; a last line without its newline (a torn write) is not yielded."""
    handle.seek(start)
    cursor = start  # where ``carry`` begins in the file
    carry = b""
    remaining = end - start
    while remaining > 0:
        block = handle.read(min(READ_BLOCK_BYTES, remaining))
        if not block:
            break
        remaining -= len(block)
        lines = (carry + block).split(b"\n")
        carry = lines.pop()
        for line in lines:
            cursor += len(line) + 1
            yield cursor, line


def fold_range(state: MonitorState, handle: Any, start: int, end: int) -> tuple[MonitorState, int]:
    """Fold the complete sessions written in ``[start, end)``; the new offset.

    A session's lines are consecutive (one write each); a session ends at a line of
    another session or at a malformed line. A session with fewer lines than its
    ``session_n_records`` at the end of the range is left unread (the offset stays before
    it): read again with what follows, it is judged the same way online and rebuilt.
    """
    folder = SessionFolder(state)
    group: list[ReviewRecord] = []
    group_start = offset = start
    # line numbers: of the line just read, before ``offset`` and before ``group_start``
    line_number = lines_at_offset = group_lines = state.lines_read
    malformed, first_malformed = state.malformed_lines, state.first_malformed_line

    def finish() -> None:
        declared = group[0].session_n_records
        if declared is None or declared == len(group):
            folder.add(group)
        # else: cut short, or lines of one session not written together

    def counted(state: MonitorState, lines: int) -> MonitorState:
        return replace(
            state,
            lines_read=lines,
            malformed_lines=malformed,
            first_malformed_line=first_malformed,
        )

    line_start = start
    for line_end, line in _complete_lines(handle, start, end):
        line_number += 1
        this_start, line_start = line_start, line_end
        blank = not line.strip()
        record = None if blank else _parse(line)
        if record is None or (group and record.session_id != group[0].session_id):
            if group:
                finish()
                group = []
            offset = this_start if record is not None else line_end
            lines_at_offset = line_number - 1 if record is not None else line_number
        if record is None:
            if not blank:
                malformed += 1
                first_malformed = first_malformed or line_number
            continue  # blank, malformed or torn: never a session's record
        if not group:
            group_start, group_lines = this_start, line_number - 1
        group.append(record)
        offset, lines_at_offset = line_end, line_number
    if group:
        declared = group[0].session_n_records
        if declared is not None and len(group) < declared:
            return counted(folder.result(), group_lines), group_start
        finish()
    return counted(folder.result(), lines_at_offset), offset
