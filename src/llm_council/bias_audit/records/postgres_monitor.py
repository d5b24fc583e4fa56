"""The anytime monitor of a PostgreSQL store: its saved state, or a rebuild from the records.

A look (:func:`postgres_monitor`) reads the state row of schema 8
(:mod:`.postgres_monitor_state`: folded by each writer in its session's transaction) in
one query and uses it when it checks: no mark of an unfolded change, the seal verifies,
it covers the fold log's last session, and it has the settings asked for. Otherwise the
state is rebuilt from the records, logged with the reason (``bias_monitor_state_rebuilt``),
and, with ``save``, written back in one ``REPEATABLE READ`` transaction under the state
row's lock (writers wait for it): the sessions in the fold log's order, then those it lacks
(imported, or written while the state could not be folded into) in ``written_at`` order,
which are logged at the next ``fold_seq`` values; the marks of that snapshot are deleted.
A role that may not write (``SELECT`` only, a read-only database, a hot standby) gets the
rebuilt state without saving it. A store before schema 8 is folded in ``written_at`` order,
as before, and nothing is saved.

A rebuild reads the whole store, so a store of more than ``max_records`` records is refused
with a :class:`~llm_council.errors.RecordError` instead of read inside a session.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

import structlog
from psycopg import Connection, IsolationLevel, OperationalError
from psycopg import Error as DriverError
from psycopg.errors import (
    InsufficientPrivilege,
    ReadOnlySqlTransaction,
    SerializationFailure,
    UndefinedTable,
)
from psycopg.pq import TransactionStatus

from llm_council.bias_audit.records.monitor_fold import MonitorState, SessionFolder
from llm_council.bias_audit.records.postgres_connect import connect_options
from llm_council.bias_audit.records.postgres_errors import check_url, store_error
from llm_council.bias_audit.records.postgres_monitor_state import (
    LOOKUP,
    MONITOR_SCHEMA_VERSION,
    CheckedState,
    checked_state,
    encoded_row,
)
from llm_council.bias_audit.records.postgres_schema import (
    SCHEMA_VERSION,
    stored_store_id,
    stored_version,
)
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

BATCH_SIZE = 10_000
#: above this many records a rebuild is refused (about 10 s of reading here)
MAX_RECORDS = 500_000
#: a rebuild that loses a race with a writer (the state row changed) tries again this often
REBUILD_ATTEMPTS = 4
_CANNOT_WRITE = (InsufficientPrivilege, ReadOnlySqlTransaction)

log = structlog.get_logger("llm_council.bias_audit")

_COLUMNS = (
    "SELECT r.session_id, r.reviewer_id, r.model_id, r.position, r.score_value, "
    "r.is_self_review, r.check_kind, r.session_n_records, r.score_scale, s.n_records"
)
#: before schema 8: sessions in written order
_QUERY_WRITTEN = (
    f"{_COLUMNS}, NULL FROM bias_records r JOIN bias_sessions s USING (session_id) "
    "ORDER BY s.written_at, s.session_id, r.record_index"
)
#: schema 8: the fold log's order, then the sessions it lacks in written order
_QUERY_FOLDED = (
    f"{_COLUMNS}, m.fold_seq FROM bias_records r JOIN bias_sessions s USING (session_id) "
    "LEFT JOIN bias_monitor_sessions m USING (session_id) "
    "ORDER BY m.fold_seq NULLS LAST, s.written_at, s.session_id, r.record_index"
)


class _Row(NamedTuple):
    """One record's monitored fields (a :class:`.monitor_sessions.MonitoredRecord`), its
    session's declared record count and fold position (``None``: not in the log)."""

    session_id: str
    reviewer_id: str
    model_id: str
    position: int
    score_value: float | None
    is_self_review: bool
    check_kind: str | None
    session_n_records: int | None
    score_scale: tuple[float, float]
    n_records: int
    fold_seq: int | None


class _Rebuilt(NamedTuple):
    """A state folded from the records, the sessions the fold log lacked (in the order
    they were folded) and the log's last ``fold_seq`` and session before them."""

    state: MonitorState
    unlogged: list[str]
    last_seq: int
    last_session: str | None


def _folded_records(connection: Connection[Any], query: str, settings: MonitorSettings) -> _Rebuilt:
    """Fold every complete session in the query's order (streamed in batches: memory
    bounded by one batch and one session). A session with fewer or more records than its
    ``n_records`` is left out, as the readers leave it out (it is still logged)."""
    folder = SessionFolder(MonitorState(settings=settings))
    unlogged: list[str] = []
    last_seq, last_session = 0, None
    group: list[_Row] = []

    def finish() -> None:
        nonlocal last_seq, last_session
        first = group[0]
        if first.fold_seq is None:
            unlogged.append(first.session_id)
        elif first.fold_seq > last_seq:
            last_seq, last_session = first.fold_seq, first.session_id
        if len(group) == first.n_records:
            folder.add(group)

    with connection.cursor(name="llm_council_monitor") as cursor:
        cursor.itersize = BATCH_SIZE
        cursor.execute(query)
        while rows := cursor.fetchmany(BATCH_SIZE):
            for row in rows:
                record = _Row(*row)
                if group and record.session_id != group[0].session_id:
                    finish()
                    group = []
                group.append(record)
    if group:
        finish()
    return _Rebuilt(folder.result(), unlogged, last_seq, last_session)


def _check_size(connection: Connection[Any], url: str, max_records: int) -> None:
    row = connection.execute("SELECT count(*) FROM bias_records").fetchone()
    n_records = int(row[0]) if row else 0
    if n_records > max_records:
        raise RecordError(
            f"{redact_url(url)}: {n_records} records; rebuilding the monitor of a PostgreSQL "
            f"store reads them all and stops at {max_records}"
        )


def _rebuild_and_save(connection: Connection[Any], settings: MonitorSettings) -> MonitorState:
    """The rebuild, saved (see the module docstring); raises what the driver raises."""
    connection.execute("INSERT INTO bias_monitor_state DEFAULT VALUES ON CONFLICT DO NOTHING")
    connection.commit()
    for attempt in range(REBUILD_ATTEMPTS):
        connection.isolation_level = IsolationLevel.REPEATABLE_READ
        try:
            with connection.transaction():
                connection.execute("SELECT 1 FROM bias_monitor_state FOR UPDATE")
                rebuilt = _folded_records(connection, _QUERY_FOLDED, settings)
                seqs = list(
                    range(rebuilt.last_seq + 1, rebuilt.last_seq + 1 + len(rebuilt.unlogged))
                )
                if rebuilt.unlogged:
                    connection.execute(
                        "INSERT INTO bias_monitor_sessions (session_id, fold_seq) "
                        "SELECT * FROM unnest(%s::text[], %s::bigint[])",
                        (rebuilt.unlogged, seqs),
                    )
                last_seq = seqs[-1] if seqs else rebuilt.last_seq
                last = rebuilt.unlogged[-1] if seqs else rebuilt.last_session
                body, seal = encoded_row(rebuilt.state, last_seq, last, stored_store_id(connection))
                connection.execute(
                    "UPDATE bias_monitor_state SET body = %s, seal = %s, updated_at = now()",
                    (body, seal),
                )
                connection.execute("DELETE FROM bias_monitor_marks")  # this snapshot's only
            return rebuilt.state
        except SerializationFailure:
            if attempt == REBUILD_ATTEMPTS - 1:
                raise
        finally:
            connection.isolation_level = None
    raise AssertionError("unreachable")  # pragma: no cover


def _rebuilt(
    connection: Connection[Any], url: str, settings: MonitorSettings, version: int, save: bool
) -> tuple[MonitorState, bool]:
    """The state rebuilt from the records, and whether it was saved."""
    if save and version >= MONITOR_SCHEMA_VERSION:
        try:
            return _rebuild_and_save(connection, settings), True
        except _CANNOT_WRITE:
            connection.rollback()
            connection.isolation_level = None
        except ValueError:  # sums not finite: computed, never written
            connection.rollback()
            connection.isolation_level = None
    query = _QUERY_FOLDED if version >= MONITOR_SCHEMA_VERSION else _QUERY_WRITTEN
    with connection.transaction():
        return _folded_records(connection, query, settings).state, False


#: per process and store: one connection kept open between looks, so a session's answer
#: does not pay for a new connection and its authentication (most of a look's time)
_IDLE: dict[tuple[int, str], Connection[Any]] = {}


@contextmanager
def _look_connection(url: str, fresh: bool = False) -> Iterator[Connection[Any]]:
    """A connection to ``url``: the one this process kept, or a new one; kept again when the
    look ends cleanly outside a transaction (one per store; a concurrent look opens its own
    and closes it), closed on any error."""
    key = (os.getpid(), url)  # a forked child never shares its parent's connection
    connection = None if fresh else _IDLE.pop(key, None)
    if connection is None or connection.closed or connection.broken:
        connection = Connection.connect(url, **connect_options(url))
    try:
        yield connection
    except BaseException:
        connection.close()
        raise
    idle = connection.info.transaction_status == TransactionStatus.IDLE
    if not idle or _IDLE.setdefault(key, connection) is not connection:
        connection.close()  # mid-transaction, or another look kept its own first


def _saved(
    connection: Connection[Any], url: str, settings: MonitorSettings
) -> tuple[int | None, CheckedState | str]:
    """The store's schema version and its saved state, or why the state cannot be used."""
    try:
        row = connection.execute(LOOKUP).fetchone()
        connection.commit()
    except UndefinedTable:  # a schema before 8, or none
        connection.rollback()
        version = stored_version(connection, url)
        connection.commit()
        return version, "before schema 8"
    except InsufficientPrivilege:  # grants from before schema 8
        connection.rollback()
        raise RecordError(
            f"{redact_url(url)}: this role may not read the monitor's tables (schema 8): "
            "GRANT SELECT ON bias_monitor_state, bias_monitor_sessions, bias_monitor_marks "
            "(docs/production.md, Roles and grants)"
        ) from None
    assert row is not None
    if row[0] is None or row[0] > SCHEMA_VERSION:
        version = stored_version(connection, url)  # raises for a newer schema
        connection.commit()
        return version, "before schema 8"
    return int(row[0]), checked_state(row[1:3], row[3], row[4], row[5], row[6] or "", settings)


def _look(
    connection: Connection[Any], url: str, wanted: MonitorSettings, max_records: int, save: bool
) -> tuple[MonitorState, str, bool]:
    """The state, why it was rebuilt (``""``: it was not) and whether that was saved."""
    version, found = _saved(connection, url, wanted)
    if isinstance(found, CheckedState):
        return found.state, "", False
    if version is None or version < 3:
        return MonitorState(settings=wanted), "", False  # no session yet, or before check_kind
    _check_size(connection, url, max_records)
    connection.commit()
    state, saved = _rebuilt(connection, url, wanted, version, save)
    return state, found, saved


def postgres_monitor(
    url: str,
    settings: MonitorSettings | None = None,
    *,
    max_records: int = MAX_RECORDS,
    save: bool = False,
) -> MonitorState:
    """The monitor of the store at ``url``: its saved state when that checks, else rebuilt
    from the records (and, with ``save``, written back when the role may)."""
    check_url(url)
    wanted = settings or MonitorSettings()
    try:
        try:
            with _look_connection(url) as connection:
                state, reason, saved = _look(connection, url, wanted, max_records, save)
        except OperationalError:  # perhaps a kept connection the server has closed since
            with _look_connection(url, fresh=True) as connection:
                state, reason, saved = _look(connection, url, wanted, max_records, save)
    except DriverError as error:
        raise store_error(url, "cannot read the record store", error) from None
    if reason and reason != "other settings" and (state.n_sessions or reason != "absent"):
        log.warning(
            "bias_monitor_state_rebuilt",
            store=redact_url(url),
            reason=reason,
            sessions=state.n_sessions,
            saved=saved,
        )
    return state


def rebuild_postgres_monitor(
    url: str, settings: MonitorSettings | None = None
) -> tuple[MonitorState, bool]:
    """Rebuild the store's monitor state from its records now, whether or not the saved one
    checks (``llm-council store-rebuild``, after an import), and save it when the role may;
    the state and whether it was saved. A store before schema 8 is computed, not saved."""
    check_url(url)
    wanted = settings or MonitorSettings()
    try:
        with Connection.connect(url, **connect_options(url)) as connection:
            version = stored_version(connection, url)
            connection.commit()
            if version is None or version < 3:
                return MonitorState(settings=wanted), False
            return _rebuilt(connection, url, wanted, version, save=True)
    except DriverError as error:
        raise store_error(url, "cannot rebuild the monitor", error) from None


__all__ = ["MAX_RECORDS", "REBUILD_ATTEMPTS", "postgres_monitor", "rebuild_postgres_monitor"]
