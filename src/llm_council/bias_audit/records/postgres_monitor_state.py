"""The anytime monitor's state in a PostgreSQL store, folded in each session's transaction.

Schema 8 (:mod:`.postgres_schema`) keeps

- ``bias_monitor_state``: one row, the state's body (:mod:`.monitor_body`, without the
  session digests) as JSON text and its seal; ``body`` NULL: never built;
- ``bias_monitor_sessions``: the fold order, ``session_id -> fold_seq`` (1, 2, ...): which
  sessions the state holds and in which order. ``written_at`` is not commit order (a
  transaction that began first can commit last), and the e-process depends on the order;
- ``bias_monitor_marks``: a statement trigger on ``bias_sessions`` and ``bias_records``
  inserts the changing transaction's id; the writer's fold deletes its own. A mark that
  survives means records changed without a fold (an importer, a failed fold, a delete).

**The fold** (:func:`fold_monitor_session`), in the writer's transaction after its
records, in a savepoint: lock the state row (``SELECT ... FOR UPDATE``: concurrent
writers on any number of replicas fold one at a time, in the order they take the lock),
check it (:func:`checked_state`), fold the session's estimates, write the row, log the
session at ``fold_seq = last + 1`` and delete the transaction's mark. The state row, the
log row and the records commit together or not at all, so a session is folded exactly
once; a writer killed before its commit leaves nothing. A state that does not check (never
built, stale, damaged, unsealed, behind its log, other settings) is not folded into: the
mark stays and the next look rebuilds (:mod:`.postgres_monitor`).

**The seal**: HMAC-SHA256 of kind ``postgres-monitor-state``, the store's id and the body
(:func:`~.postgres_profile_seals.row_seal`), under the explicit shared key only (the
per-machine key file would differ between replicas); without one nothing is sealed and
nothing verified, as for the profiles (ADR 0056).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog
from psycopg import AsyncConnection
from psycopg import Error as DriverError

from llm_council.bias_audit.records.monitor_append import finite_or_missing
from llm_council.bias_audit.records.monitor_body import (
    state_body,
    state_from_body,
    sums_read_back,
)
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
from llm_council.bias_audit.records.postgres_errors import scrub_message
from llm_council.bias_audit.records.postgres_profile_seals import (
    row_seal,
    seal_verifies,
    sealing_key,
)
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.bias_audit.records.summary_seal import all_finite
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

log = structlog.get_logger("llm_council.bias_audit")

#: the store schema version that holds the monitor's tables
MONITOR_SCHEMA_VERSION = 8
STATE_KIND = "postgres-monitor-state"
_DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError)

#: the schema's version, the state and what it is checked against, in one statement (a
#: reader's look; fails on a schema without the monitor's tables)
LOOKUP = """SELECT v.version, s.body, s.seal,
    EXISTS (SELECT 1 FROM bias_monitor_marks),
    (SELECT fold_seq FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1),
    (SELECT session_id FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1),
    (SELECT min(store_id) FROM llm_council_store)
  FROM (SELECT max(version) AS version FROM llm_council_schema) v
  LEFT JOIN (SELECT body, seal FROM bias_monitor_state LIMIT 1) s ON true"""
# the writer, in one statement: the row, locked, with the marks of other transactions and
# the log's last session. After a wait for the lock the row is the newest version but the
# subqueries see the statement's snapshot from before the wait; a log that looks behind
# the row, or marks a rebuild deleted during the wait, are then read again
# (:data:`_AFTER_LOCK`, a new snapshot in READ COMMITTED). A mark committed during the
# wait may be missed, as one committed just after the check would be: it stays, and the
# next look rebuilds
_LOCK = """SELECT s.body, s.seal,
    EXISTS (SELECT 1 FROM bias_monitor_marks WHERE xact_id <> pg_current_xact_id()),
    (SELECT fold_seq FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1),
    (SELECT session_id FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1)
  FROM bias_monitor_state s FOR UPDATE OF s"""
_AFTER_LOCK = """SELECT
    EXISTS (SELECT 1 FROM bias_monitor_marks WHERE xact_id <> pg_current_xact_id()),
    (SELECT fold_seq FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1),
    (SELECT session_id FROM bias_monitor_sessions ORDER BY fold_seq DESC LIMIT 1)"""
#: a state never built, in a store with no other session and no unfolded change: the
#: first session of a new store starts it (no look has to rebuild an empty store)
_FIRST_SESSION = """SELECT NOT EXISTS (SELECT 1 FROM bias_sessions WHERE session_id <> %s)
    AND NOT EXISTS (SELECT 1 FROM bias_monitor_sessions)"""
# the row, the log's line and the transaction's own mark gone, in one round trip
_WRITE = """WITH logged AS (
        INSERT INTO bias_monitor_sessions (session_id, fold_seq) VALUES (%(session)s, %(seq)s)),
    unmarked AS (
        DELETE FROM bias_monitor_marks WHERE xact_id = pg_current_xact_id())
  UPDATE bias_monitor_state SET body = %(body)s, seal = %(seal)s, updated_at = now()"""


@dataclass(frozen=True)
class CheckedState:
    """A state that checked, and the log's last ``fold_seq`` it covers (0: none)."""

    state: MonitorState
    last_seq: int


def state_row(state: MonitorState, last_seq: int, last_session: str | None) -> dict[str, Any]:
    """The row's body: the state's (no digests, no file position) and the log's last
    session it covers (``fold_seq`` and the digest of its id)."""
    bare = replace(state, digest_log=b"", session_digests=frozenset(), inode=None, offset=0)
    return {
        "monitor": state_body(bare),
        "last_seq": last_seq,
        "last_session": None if last_session is None else session_digest(last_session).hex(),
    }


def encoded_row(
    state: MonitorState, last_seq: int, last_session: str | None, store_id: str
) -> tuple[str, str | None]:
    """``(body as JSON text, seal or None without a key)``; ``ValueError`` for a state
    whose sums are not finite (never written: it would not read back)."""
    if not sums_read_back(state):  # a written row always reads back
        raise ValueError("the monitor's sums are not finite")
    body = state_row(state, last_seq, last_session)
    if not all_finite(body):
        raise ValueError("the monitor's settings are not finite")
    key = sealing_key()
    return json.dumps(body, separators=(",", ":")), (
        row_seal(key, STATE_KIND, store_id, body) if key else None
    )


def checked_state(
    row: Sequence[Any] | None,
    stale: bool,
    last_seq: int | None,
    last_session: str | None,
    store_id: str,
    settings: MonitorSettings,
) -> CheckedState | str:
    """The state the row holds when it can be used as it is; else why not, the row's own
    fault first (``absent``, ``damaged``, ``unsealed``, ``behind its log``), then
    ``other settings``, then ``stale`` (records changed without a fold)."""
    if row is None or row[0] is None:
        return "absent"
    try:
        body = json.loads(row[0])
        key = sealing_key()
        if key is not None and not seal_verifies(key, STATE_KIND, store_id, body, row[1]):
            return "unsealed"
        expected = None if last_session is None else session_digest(last_session).hex()
        if int(body["last_seq"]) != (last_seq or 0) or body["last_session"] != expected:
            return "behind its log"
        state = state_from_body(body["monitor"], None)
    except (*_DAMAGED, RecursionError):
        return "damaged"
    if state is None:
        return "damaged"
    if state.settings != settings:
        return "other settings"
    if stale:
        return "stale"
    return CheckedState(state, last_seq or 0)


@dataclass(frozen=True)
class SessionInput:
    """What a writer folds: the session's estimates (``None``: its scores identify no
    effect, the session still counts) and the settings of this process."""

    estimates: SessionEstimates | None
    settings: MonitorSettings


async def session_input(records: Sequence[MonitoredRecord]) -> SessionInput | None:
    """The session's estimates, computed in a worker thread (numpy: off the event loop);
    ``None`` when they cannot be folded (a bad setting, non-finite estimates): the mark
    stays and the next look rebuilds."""
    from llm_council.bias_audit.records.monitor_settings import monitor_settings

    try:
        settings = monitor_settings()
        estimates = await asyncio.to_thread(session_estimates, records)
    except Exception as error:  # the statistics must never fail an append
        log.warning("bias_monitor_not_folded", error=f"{type(error).__name__}: {error}")
        return None
    if estimates is not None and not finite_or_missing(estimates):
        log.warning("bias_monitor_not_folded", error="estimates not finite")
        return None
    return SessionInput(estimates, settings)


def _checked(
    row: Sequence[Any] | None,
    log_tail: Sequence[Any] | None,
    store_id: str,
    settings: MonitorSettings,
) -> CheckedState | str:
    if log_tail is None:
        return checked_state(row, False, None, None, store_id, settings)
    return checked_state(row, log_tail[0], log_tail[1], log_tail[2], store_id, settings)


def _folded(checked: CheckedState, given: SessionInput) -> MonitorState:
    state = checked.state
    if given.estimates is not None:
        state = fold_estimates(state, given.estimates)
    return replace(state, n_sessions=state.n_sessions + 1)


async def fold_monitor_session(
    connection: AsyncConnection[Any],
    url: str,
    given: SessionInput | None,
    session_id: str,
    store_id: str = "",
) -> str:
    """Fold one session into the state, inside its append transaction, after its records
    (see the module docstring); returns ``"folded"`` or why not. A failure rolls back to
    the savepoint only and is logged: the records are kept and the mark makes the next
    look rebuild."""
    if given is None:
        return "not computed"
    try:
        async with connection.transaction():  # a savepoint
            cursor = await connection.execute(_LOCK)
            row = await cursor.fetchone()
            log_tail = None if row is None else row[2:]
            checked = _checked(row, log_tail, store_id, given.settings)
            if checked in ("behind its log", "stale"):  # perhaps a lock waited for: again
                cursor = await connection.execute(_AFTER_LOCK)
                log_tail = await cursor.fetchone()
                checked = _checked(row, log_tail, store_id, given.settings)
            if checked == "absent" and row is not None and log_tail and not log_tail[0]:
                cursor = await connection.execute(_FIRST_SESSION, (session_id,))
                first = await cursor.fetchone()
                if first is not None and first[0]:
                    checked = CheckedState(MonitorState(settings=given.settings), 0)
            if isinstance(checked, str):
                return checked  # nothing folded; the mark stays
            # in the loop, not a worker thread: about 0.3 ms of numpy, and a thread hop
            # would hold the row lock while waiting for a core
            folded = _folded(checked, given)
            seq = checked.last_seq + 1
            body, seal = encoded_row(folded, seq, session_id, store_id)
            await connection.execute(
                _WRITE, {"session": session_id, "seq": seq, "body": body, "seal": seal}
            )
            return "folded"
    except (DriverError, *_DAMAGED) as error:
        log.warning(
            "bias_monitor_not_folded",
            store=redact_url(url),
            error=scrub_message(str(error), url) or type(error).__name__,
        )
        return "failed"


__all__ = [
    "LOOKUP",
    "MONITOR_SCHEMA_VERSION",
    "STATE_KIND",
    "CheckedState",
    "SessionInput",
    "checked_state",
    "encoded_row",
    "fold_monitor_session",
    "session_input",
    "state_row",
]
