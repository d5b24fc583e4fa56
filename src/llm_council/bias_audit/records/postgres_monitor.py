"""The anytime monitor of a PostgreSQL store, rebuilt from its records on every read.

There is no state table: the tables are created by the store's migrations, owned
elsewhere. Rebuilding is valid: the monitor is a function of the sessions in the order
they were written, and a PostgreSQL session is written whole in one transaction (ADR
0020), so folding every session again, ordered by ``bias_sessions.written_at`` (then
``session_id``), gives the state a running fold would have held. It costs a read of the
store per look, so a store of more than ``max_records`` records is refused with a
:class:`~llm_council.errors.RecordError` instead of read inside a session.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from psycopg import Connection
from psycopg import Error as DriverError

from llm_council.bias_audit.records.monitor_fold import MonitorState, SessionFolder
from llm_council.bias_audit.records.postgres_errors import check_url, store_error
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

CONNECT_TIMEOUT_S = 10
BATCH_SIZE = 10_000
#: above this many records a look is refused (about 10 s of reading here)
MAX_RECORDS = 500_000

_QUERY = (
    "SELECT r.session_id, r.reviewer_id, r.model_id, r.position, r.score_value, "
    "r.is_self_review, r.check_kind, r.session_n_records, r.score_scale "
    "FROM bias_records r JOIN bias_sessions s USING (session_id) "
    "ORDER BY s.written_at, s.session_id, r.record_index"
)


class _Row(NamedTuple):
    """One record's monitored fields (a :class:`.monitor_sessions.MonitoredRecord`)."""

    session_id: str
    reviewer_id: str
    model_id: str
    position: int
    score_value: float | None
    is_self_review: bool
    check_kind: str | None
    session_n_records: int | None
    score_scale: tuple[float, float]


def _has_tables(connection: Connection[Any]) -> bool:
    row = connection.execute(
        "SELECT to_regclass('bias_records') IS NOT NULL AND to_regclass('bias_sessions') "
        "IS NOT NULL AND EXISTS (SELECT 1 FROM information_schema.columns WHERE "
        "table_name = 'bias_records' AND column_name = 'check_kind')"
    ).fetchone()
    return bool(row and row[0])


def postgres_monitor(
    url: str, settings: MonitorSettings | None = None, *, max_records: int = MAX_RECORDS
) -> MonitorState:
    """The monitor of the store at ``url``, folded from its records in written order."""
    check_url(url)
    state = MonitorState(settings=settings or MonitorSettings())
    try:
        with Connection.connect(url, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            if not _has_tables(connection):
                return state  # no session written yet (or a schema before check_kind)
            count_row = connection.execute("SELECT count(*) FROM bias_records").fetchone()
            n_records = int(count_row[0]) if count_row else 0
            if n_records > max_records:
                raise RecordError(
                    f"{redact_url(url)}: {n_records} records; the monitor of a PostgreSQL "
                    f"store reads them all on each look and stops at {max_records}"
                )
            folder = SessionFolder(state)
            group: list[_Row] = []
            with connection.transaction(), connection.cursor(name="llm_council_monitor") as cursor:
                cursor.itersize = BATCH_SIZE
                cursor.execute(_QUERY)
                while rows := cursor.fetchmany(BATCH_SIZE):
                    for row in rows:
                        record = _Row(*row)
                        if group and record.session_id != group[0].session_id:
                            folder.add(group)
                            group = []
                        group.append(record)
            if group:
                folder.add(group)
            state = folder.result()
    except DriverError as error:
        raise store_error(url, "cannot read the record store", error) from None
    return state
