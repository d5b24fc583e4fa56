"""A shared bias record store in PostgreSQL (psycopg 3), for many replicas (ADR 0020).

Writing (:class:`PostgresWriter`): one transaction per session. The session's row goes
into ``bias_sessions`` (``session_id`` primary key) with ``INSERT ... ON CONFLICT DO
NOTHING``; only if that inserted a row are its records copied into ``bias_records``, so a
retried write never duplicates and a writer killed mid-transaction leaves nothing (the
server rolls the transaction back when the connection drops). Connections come from one
``psycopg_pool.AsyncConnectionPool`` per event loop, so concurrent councils share them
and the loop never blocks on the database. The schema is created and migrated by
``llm-council store-migrate`` (:mod:`.postgres_schema`); opening a pool only checks
its version, read-only. Each session is checked before its transaction
(:func:`check_session`: positions within ``n_candidates``, scores within the report's
bound), as the schema's CHECK constraints and a trigger check each row. The same
transaction folds the session into the reviewer profiles' sums, in a savepoint
(:mod:`~llm_council.bias_audit.records.postgres_profiles`, ADR 0048), and then into the
anytime monitor's state, in another (:mod:`.postgres_monitor_state`, ADR 0053).

Reading (:func:`iter_arrow_batches`, :func:`arrow_batch_reader`,
:func:`fetch_arrow_table`): :mod:`.postgres_reader`, re-exported here.

The URL may carry a password: messages name the store by :func:`redact_url` and scrub
the password from any driver message they quote.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

import structlog
from psycopg import AsyncConnection, Rollback, sql
from psycopg import Error as DriverError
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from llm_council.bias_audit.records.postgres_connect import CONNECT_TIMEOUT_S, connect_options
from llm_council.bias_audit.records.postgres_errors import check_url
from llm_council.bias_audit.records.postgres_errors import store_error as _store_error
from llm_council.bias_audit.records.postgres_reader import (
    ARROW_SCHEMA,
    BATCH_SIZE,
    arrow_batch_reader,
    fetch_arrow_table,
    iter_arrow_batches,
)
from llm_council.bias_audit.records.postgres_schema import (
    MAX_ABS_SCORE,
    MIGRATIONS,
    SCHEMA_VERSION,
    migrate,
    migration_statements,
    require_current_schema,
)
from llm_council.bias_audit.records.schema import ReviewRecord, lone_surrogate_field
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError

if TYPE_CHECKING:
    from llm_council.bias_audit.records.reviewer_profiles import Profiles

POOL_WAIT_S = 60.0  # a session waits this long for a free pooled connection
POOL_MAX_SIZE = 8
#: what rebuilds a stale summary for good (logged once per process and store)
STORE_REBUILD_HINT = (
    "run `llm-council store-rebuild --store URL` (a large store's summary is rebuilt only "
    "by it or by a long-lived process; a small one in the session)"
)
_STALE_NOTED: set[str] = set()
log = structlog.get_logger("llm_council.bias_audit")

_WRITTEN_COLUMNS = (
    "session_id",
    "record_index",
    "schema_version",
    "timestamp",
    "recorded_at",
    "reviewer_id",
    "model_id",
    "position",
    "n_candidates",
    "response_length_chars",
    "response_length_words",
    "score_value",
    "score_scale",
    "rank",
    "is_self_review",
    "council_config_hash",
    "query_hash",
    "session_n_records",
    "check_kind",
    "check_of_position",
    "check_treated",
    "similarity_to_own",
    "rationale_chars",
    "review_status",
    "reviewer_fingerprint",  # schema 7 (ADR 0062)
)


def _recorded_at(timestamp: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _row(index: int, record: ReviewRecord, n_records: int) -> tuple[Any, ...]:
    return (
        record.session_id,
        index,
        record.schema_version,
        record.timestamp,
        _recorded_at(record.timestamp),
        record.reviewer_id,
        record.model_id,
        record.position,
        record.n_candidates,
        record.response_length_chars,
        record.response_length_words,
        record.score_value,
        list(record.score_scale),
        record.rank,
        record.is_self_review,
        record.council_config_hash,
        record.query_hash,
        n_records,
        record.check_kind,
        record.check_of_position,
        record.check_treated,
        record.similarity_to_own,
        record.rationale_chars,
        record.review_status,
        (
            None
            if record.reviewer_fingerprint is None
            else record.reviewer_fingerprint.model_dump_json()
        ),
    )


def check_session(url: str, records: Sequence[ReviewRecord]) -> None:
    """Refuse, in one line naming the session, record and field, what the schema's CHECK
    constraints would refuse (ADR 0056): a position outside ``[0, n_candidates)`` (a
    report letters positions, ``chr(65 + i)``) or a score beyond :data:`MAX_ABS_SCORE`
    (its squares would make the reviewer profiles' sums infinite); and a text field that
    holds a lone UTF-16 surrogate, which the UTF-8 connection cannot send."""
    for index, record in enumerate(records):
        where = f"{redact_url(url)}: session {ascii(record.session_id)} record {index}"
        unstorable = lone_surrogate_field(record)
        if unstorable is not None:
            raise RecordError(
                f"{where}: field {unstorable[0]!r} holds a lone UTF-16 surrogate at character "
                f"{unstorable[1]}, which UTF-8 cannot store"
            )
        if not 0 <= record.position < record.n_candidates:
            raise RecordError(
                f"{where}: position {record.position} is outside 0..{record.n_candidates - 1} "
                f"(n_candidates {record.n_candidates})"
            )
        score = record.score_value
        if score is not None and not abs(score) <= MAX_ABS_SCORE:
            raise RecordError(f"{where}: score_value {score!r} is beyond +/-{MAX_ABS_SCORE:.0e}")


async def _close_when_cancelled(pool: AsyncConnectionPool[Any]) -> None:
    """Park until cancelled, then close the pool: ``asyncio.run`` cancels every task at
    loop end, so the pool is closed inside its own loop instead of leaking past it."""
    try:
        await asyncio.Event().wait()
    finally:
        await pool.close(timeout=1.0)


class PostgresWriter:
    """Writes sessions to the PostgreSQL store at ``url``; one instance per URL per process."""

    _by_url: ClassVar[dict[str, PostgresWriter]] = {}

    def __init__(self, url: str) -> None:
        self._url = url
        self._pools: dict[
            int, tuple[asyncio.AbstractEventLoop, asyncio.Task[AsyncConnectionPool[Any]]]
        ] = {}
        self._keepers: set[asyncio.Task[None]] = set()
        #: the store's id (schema 6), read when the pool opens; bound into the seals
        self.store_id = ""

    @classmethod
    def for_url(cls, url: str) -> PostgresWriter:
        writer = cls._by_url.get(url)
        if writer is None:
            writer = cls._by_url[url] = cls(url)
        return writer

    @property
    def description(self) -> str:
        return redact_url(self._url)

    def check(self) -> None:
        check_url(self._url)

    async def _pool(self) -> AsyncConnectionPool[Any]:
        """This event loop's pool, opened (and the schema migrated) by the first caller."""
        loop = asyncio.get_running_loop()
        entry = self._pools.get(id(loop))
        if entry is None or entry[0] is not loop:
            self._pools = {
                key: value for key, value in self._pools.items() if not value[0].is_closed()
            }
            # a task, so concurrent first sessions share one opening instead of racing
            entry = (loop, loop.create_task(self._open_pool()))
            self._pools[id(loop)] = entry
        try:
            return await asyncio.shield(entry[1])
        except RecordError:
            self._pools.pop(id(loop), None)  # let a later session retry the connection
            raise

    async def _open_pool(self) -> AsyncConnectionPool[Any]:
        self.check()
        options = connect_options(self._url)
        try:  # one direct connection first: a bad server fails fast and clearly
            async with await AsyncConnection.connect(self._url, **options) as connection:
                # read-only: the schema is created by `llm-council store-migrate`, never here
                self.store_id = await require_current_schema(connection, self._url)
        except DriverError as error:
            raise _store_error(self._url, "cannot open the record store", error) from None
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            self._url,
            kwargs=options,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            timeout=POOL_WAIT_S,
            open=False,
            name="llm-council-records",
        )
        await pool.open()
        keeper = asyncio.get_running_loop().create_task(_close_when_cancelled(pool))
        self._keepers.add(keeper)
        keeper.add_done_callback(self._keepers.discard)
        return pool

    async def aclose(self) -> None:
        """Close this event loop's pool (``asyncio.run`` also does it, at loop end)."""
        loop = asyncio.get_running_loop()
        entry = self._pools.pop(id(loop), None)
        if entry is not None and entry[0] is loop:
            await (await entry[1]).close()

    async def write_session(self, records: Sequence[ReviewRecord]) -> int:
        """Write each session in ``records`` in its own transaction; return records added.

        A session already in the store (a retried write) adds nothing and counts 0.
        """
        sessions: dict[str, list[ReviewRecord]] = {}
        for record in records:
            sessions.setdefault(record.session_id, []).append(record)
        for session_records in sessions.values():
            check_session(self._url, session_records)
        pool = await self._pool()
        written = 0
        try:
            for session_id, session_records in sessions.items():
                written += await self._write_one(pool, session_id, session_records)
        except (DriverError, PoolTimeout) as error:
            raise _store_error(self._url, "cannot write records", error) from None
        return written

    async def _write_one(
        self, pool: AsyncConnectionPool[Any], session_id: str, records: list[ReviewRecord]
    ) -> int:
        # imported here: the profiles pull numpy and scipy, which reading a store does not need
        from llm_council.bias_audit.records import postgres_monitor_state as monitor
        from llm_council.bias_audit.records import postgres_profiles as profiles

        n_records = len(records)
        contribution = await profiles.session_contribution(records)
        monitored = await monitor.session_input(records)
        pending: int | None = None
        written = 0
        async with pool.connection() as connection:
            async with connection.transaction() as transaction:
                cursor = await connection.execute(
                    "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, %s) "
                    "ON CONFLICT (session_id) DO NOTHING",
                    (session_id, n_records),
                )
                if cursor.rowcount == 0:
                    # already stored by an earlier attempt: roll back the trigger's marker too
                    raise Rollback(transaction)
                copy_sql = sql.SQL("COPY bias_records ({}) FROM STDIN").format(
                    sql.SQL(", ").join(sql.Identifier(name) for name in _WRITTEN_COLUMNS)
                )
                async with connection.cursor().copy(copy_sql) as copy:
                    for index, record in enumerate(records):
                        await copy.write_row(_row(index, record, n_records))
                # in the same transaction, in a savepoint: a failed fold keeps the records
                pending = await profiles.fold_session(
                    connection, self._url, contribution, session_id, self.store_id
                )
                # last: the monitor's row lock is held from here to the commit
                await monitor.fold_monitor_session(
                    connection, self._url, monitored, session_id, self.store_id
                )
                written = n_records
            if pending is not None and pending >= profiles.COMPACT_EVERY:
                await profiles.compact_profiles(connection, self._url, self.store_id)
        return written

    async def reviewer_profiles(self) -> Profiles | None:
        """The store's reviewer profiles (ADR 0048) over a pooled connection; ``None`` when
        the summary is missing or stale (the caller rebuilds it)."""
        from llm_council.bias_audit.records.postgres_profiles import lookup_profiles

        pool = await self._pool()
        try:
            async with pool.connection() as connection:
                profiles = await lookup_profiles(connection, self._url, self.store_id)
        except (DriverError, PoolTimeout) as error:
            raise _store_error(self._url, "cannot read the reviewer profiles", error) from None
        if profiles is None and self._url not in _STALE_NOTED:
            # a short-lived process (a CLI `ask`) cannot finish a large rebuild in the
            # background: say once what does (ADR 0056)
            _STALE_NOTED.add(self._url)
            log.warning(
                "reviewer_history_stale",
                store=redact_url(self._url),
                fix=STORE_REBUILD_HINT,
            )
        return profiles

    async def stored_sessions(self, session_ids: Sequence[str]) -> set[str]:
        """Which of ``session_ids`` the store already holds (a copy skips them before
        computing their sums)."""
        pool = await self._pool()
        try:
            async with pool.connection() as connection:
                cursor = await connection.execute(
                    "SELECT session_id FROM bias_sessions WHERE session_id = ANY(%s)",
                    (list(session_ids),),
                )
                return {row[0] for row in await cursor.fetchall()}
        except (DriverError, PoolTimeout) as error:
            raise _store_error(self._url, "cannot read the sessions", error) from None

    async def session_count(self) -> int:
        """How many sessions the store holds."""
        from llm_council.bias_audit.records.postgres_profiles import count_sessions

        pool = await self._pool()
        try:
            async with pool.connection() as connection:
                return await count_sessions(connection)
        except (DriverError, PoolTimeout) as error:
            raise _store_error(self._url, "cannot count the sessions", error) from None


__all__ = [
    "ARROW_SCHEMA",
    "BATCH_SIZE",
    "CONNECT_TIMEOUT_S",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "STORE_REBUILD_HINT",
    "PostgresWriter",
    "arrow_batch_reader",
    "check_session",
    "fetch_arrow_table",
    "iter_arrow_batches",
    "migrate",
    "migration_statements",
]
