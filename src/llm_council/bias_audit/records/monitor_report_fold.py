"""The report's read-only fold of the monitor, and the state it may keep (ADR 0087).

The report continues the fold from whichever usable state covers more: the middleware's
``<store>.monitor.json`` or the copy the report kept in its summary file. The copy it keeps
stops at the start of the store's last session: a session still being written (or written
in several appends, or without ``session_n_records``) is then re-read with whatever
follows it next time, so the kept state plus the next fold equals a fold from the first
byte. That holds because a session boundary depends only on the two lines around it (a
line of another session, a blank or malformed line ends a session: :func:`.fold_range`),
so the boundary at the cut exists in the full fold too.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from llm_council.bias_audit.records.monitor_fold import MonitorState, _parse, fold_range
from llm_council.bias_audit.records.monitor_state import (
    _fingerprint,
    _open_store,
    _usable,
    read_state,
)
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

#: bytes read back from the end at a time when looking for the last session's first line
_BACK_BLOCK_BYTES = 64 * 1024


def last_session_start(handle: Any, start: int, end: int) -> int:
    """The offset in ``[start, end]`` where the last session of ``[start, end)`` begins: the
    first of the consecutive complete lines, ending at the last complete line, that are
    records of one session; the end of the last complete line when that line is no record
    (blank or malformed: it closed the session before it)."""
    size = _BACK_BLOCK_BYTES
    while True:
        begin = max(start, end - size)
        handle.seek(begin)
        block = handle.read(end - begin)
        last_newline = block.rfind(b"\n")
        if last_newline < 0:
            if begin == start:
                return start  # no complete line
            size *= 2
            continue
        lines = block[: last_newline + 1].split(b"\n")[:-1]
        if begin > start:
            lines = lines[1:]  # the first may be cut by the block's start
        position = begin + last_newline + 1  # just past the last complete line
        session = None
        for line in reversed(lines):
            record = _parse(line) if line.strip() else None
            if record is None or (session is not None and record.session_id != session):
                return position
            session = record.session_id
            position -= len(line) + 1
        if begin == start:
            return position
        size *= 2


def _folded_to(state: MonitorState, handle: Any, end: int) -> MonitorState:
    if end > state.offset:
        state, offset = fold_range(state, handle, state.offset, end)
        state = replace(state, offset=offset)
    return replace(state, fingerprint=_fingerprint(handle, state.offset))


def report_states(
    store: Path, settings: MonitorSettings, saved: MonitorState | None
) -> tuple[MonitorState, MonitorState]:
    """The state at the store's end, and the state to keep (up to its last session's start).

    Read only: nothing is written and no lock is taken (ADR 0053). The fold starts from
    whichever usable state covers more, ``<store>.monitor.json``'s or ``saved`` (the
    report's copy), else from the first byte."""
    handle = _open_store(store)
    if handle is None:
        empty = MonitorState(settings=settings)
        return empty, empty
    with handle:
        end = os.fstat(handle.fileno()).st_size
        state = read_state(store)
        if not _usable(state, settings, handle):
            state = None
        covers_more = state is None or (saved is not None and saved.offset > state.offset)
        if saved is not None and covers_more and _usable(saved, settings, handle):
            state = saved
        if state is None:
            state = MonitorState(settings=settings, inode=os.fstat(handle.fileno()).st_ino)
        kept = _folded_to(state, handle, last_session_start(handle, state.offset, end))
        return _folded_to(kept, handle, end), kept


__all__ = ["last_session_start", "report_states"]
