"""Folding the session this process has just appended from memory, not from the store.

After an audited session the store's tail past the monitor state's offset is, in the
usual case, exactly that session's lines, which the audit still holds as records. The
update then folds the session's estimates computed from those records and moves the
offset over the tail without parsing it (parsing 25 lines cost about 0.6 ms of the
1.5-2.7 ms update at 5 members; ADR 0053, second amendment).

The tail is recognised as the session's own by cheap checks of its bytes, under the
writer lock: it is ``n`` complete lines (``n`` the session's record count; a record's
JSON never holds a raw newline) and the session's ``"session_id":...`` pair occurs in it
exactly ``n`` times. The session's lines were written after the state's offset (the
state is checked against the store's bytes before the call), so ``n`` lines with the id
are its ``n`` lines. Anything else (another writer's lines in between, a torn line before
them, a state that is behind or already past them) answers ``None`` and the caller reads
and parses the tail as every other reader does; a session already folded (its digest in
the state) with nothing after it leaves the state as it is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pydantic_core

from llm_council.bias_audit.records.monitor_fold import (
    MonitorState,
    fold_estimates,
    session_digest,
)
from llm_council.bias_audit.records.monitor_sessions import (
    MonitoredRecord,
    SessionEstimates,
    session_estimates,
)

#: a tail longer than this is not read in one piece (a 9-member session is about 44 KiB)
MAX_APPENDED_BYTES = 4 * 1024 * 1024
#: bytes hashed before the offset to recognise the store a state was built from
FINGERPRINT_BYTES = 4096


@dataclass(frozen=True)
class AppendedSession:
    """One session as this process appended it: ``n_records`` lines, each holding the
    pair ``id_pair`` (``"session_id":<the id as JSON>``), its id's ``digest``, and its
    ``estimates`` from the records in memory (``None``: the scores identify no effect)."""

    n_records: int
    id_pair: bytes
    digest: bytes
    estimates: SessionEstimates | None


def appended_session(records: Sequence[MonitoredRecord]) -> AppendedSession | None:
    """The session the records make up, or ``None`` when they are not one whole session
    (none, or more than one ``session_id``): the caller then reads the store's tail."""
    if not records:
        return None
    session_id = records[0].session_id
    if any(record.session_id != session_id for record in records):
        return None
    # the store's writer encodes records with pydantic-core, as this does (no spaces, the
    # same escapes); should the two ever differ, the pair is not found and the tail is read
    id_pair = b'"session_id":' + pydantic_core.to_json(session_id)
    return AppendedSession(
        n_records=len(records),
        id_pair=id_pair,
        digest=session_digest(session_id),
        estimates=session_estimates(records),
    )


def finite_or_missing(estimates: SessionEstimates) -> bool:
    """No infinity in the estimates or their variances (NaN: no estimate), and every
    variance of an estimate positive: what the fold's sums can take."""
    values, variances = estimates.estimates, estimates.unit_variances
    if np.isinf(values).any() or np.isinf(variances).any():
        return False
    given = ~np.isnan(values)
    return bool((variances[given] > 0).all())


def _fingerprint(descriptor: int, tail: bytes, end: int) -> str:
    """SHA-256 of the ``FINGERPRINT_BYTES`` before ``end``: from the tail when it is long
    enough, else read (as :func:`.monitor_state._fingerprint` computes it)."""
    if len(tail) >= FINGERPRINT_BYTES or len(tail) == end:
        return hashlib.sha256(tail[-FINGERPRINT_BYTES:]).hexdigest()
    start = max(0, end - FINGERPRINT_BYTES)
    return hashlib.sha256(os.pread(descriptor, end - start, start)).hexdigest()


def fold_appended(
    state: MonitorState, handle: Any, end: int, appended: AppendedSession
) -> MonitorState | None:
    """``state`` (checked against the store up to its offset) moved to ``end`` over the
    appended session, folded from memory; ``state`` itself when the session was folded
    already and nothing follows; ``None`` when the tail is not exactly the session's lines
    (the caller reads it). Call under the store's writer lock."""
    if appended.digest in state.session_digests:
        return state if end == state.offset else None
    if appended.estimates is not None and not finite_or_missing(appended.estimates):
        return None  # never into the sums: the store's own lines decide
    length = end - state.offset
    if not 0 < length <= MAX_APPENDED_BYTES:
        return None
    descriptor = handle.fileno()
    tail = os.pread(descriptor, length, state.offset)
    if (
        len(tail) != length
        or not tail.endswith(b"\n")
        or tail.count(b"\n") != appended.n_records
        or tail.count(appended.id_pair) != appended.n_records
    ):
        return None
    folded = state if appended.estimates is None else fold_estimates(state, appended.estimates)
    return replace(
        folded,
        n_sessions=state.n_sessions + 1,
        session_digests=state.session_digests | {appended.digest},
        digest_log=state.digest_log + appended.digest,
        offset=end,
        fingerprint=_fingerprint(descriptor, tail, end),
        lines_read=state.lines_read + appended.n_records,
    )


__all__ = ["AppendedSession", "appended_session", "finite_or_missing", "fold_appended"]
