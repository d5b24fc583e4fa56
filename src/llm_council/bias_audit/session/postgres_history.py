"""The middleware's reviewer history from a PostgreSQL store (ADR 0048).

The lookup is one query over the writer's pooled connection (the summary's base plus the
deltas since). A missing or stale summary is rebuilt inside the session (in a worker
thread) only for a store of up to :data:`REBUILD_IN_SESSION_MAX_SESSIONS` sessions; a
larger store is rebuilt once in a background thread per process while that session runs
without history (priors from the default; the log says ``reviewer_history_rebuilding``),
and later sessions read the rebuilt summary. :func:`postgres_session_profiles` reads one
stored session's contribution, so ``run_bias_audit(..., session_id=)`` can leave it out
(ADR 0051).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from llm_council.bias_audit.records.background_rebuild import rebuild_once_in_background
from llm_council.bias_audit.records.reviewer_profiles import Profiles, records_profiles
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.bias_audit.session.noise_priors import History
from llm_council.errors import RecordError

log = structlog.get_logger("llm_council.bias_audit")

#: a stale summary is rebuilt inside the session only up to this many stored sessions
#: (1.5-2.5 s here, benchmarks/postgres_history.py); a larger store is rebuilt in the background
REBUILD_IN_SESSION_MAX_SESSIONS = 2_000


async def postgres_history(url: str) -> History:
    """The store's reviewer profiles, read before this session's records are appended.
    A store that cannot be read gives no history and a log line, never a failed session."""
    try:
        from llm_council.bias_audit.records.postgres_profile_rebuild import rebuild_profiles
        from llm_council.bias_audit.records.postgres_store import PostgresWriter
    except ImportError:  # no psycopg: the write says so (MissingDependencyError)
        return {}
    writer = PostgresWriter.for_url(url)
    try:
        profiles = await writer.reviewer_profiles()
        if profiles is not None:
            return profiles
        sessions = await writer.session_count()
        if sessions > REBUILD_IN_SESSION_MAX_SESSIONS:
            _rebuild_in_background(url)
            log.warning("reviewer_history_rebuilding", store=redact_url(url), sessions=sessions)
            return {}
        return await asyncio.to_thread(rebuild_profiles, url)
    except RecordError as error:  # messages carry the redacted URL only
        log.warning("reviewer_history_not_read", error=str(error))
        return {}


def _rebuild_in_background(url: str) -> None:
    """Rebuild a large store's summary in a daemon thread, one per store per process."""
    from llm_council.bias_audit.records.postgres_errors import scrub_message
    from llm_council.bias_audit.records.postgres_profile_rebuild import rebuild_profiles

    rebuild_once_in_background(
        f"postgres-profiles:{url}",
        lambda: rebuild_profiles(url),
        # a driver error not wrapped in RecordError could quote the URL: scrubbed
        lambda error: log.warning(
            "reviewer_history_not_rebuilt", error=scrub_message(str(error), url)
        ),
        thread_name="reviewer-profiles",
    )


#: one stored session's rows, in its record order (``{check_kind}``: the column from
#: schema 3, else NULL); bias_sessions.session_id is the primary key, so a session is
#: stored once
_SESSION_ROWS = (
    "SELECT s.n_records, r.reviewer_id, r.model_id, r.score_value, r.is_self_review, "
    "r.position, {check_kind} FROM bias_records r JOIN bias_sessions s USING (session_id) "
    "WHERE r.session_id = %s ORDER BY r.record_index"
)


def postgres_session_profiles(url: str, session_id: str) -> Profiles:
    """Session ``session_id``'s contribution to a PostgreSQL store's profiles: its rows
    summed as the store sums a session (``records_profiles``), ``{}`` when the store does
    not hold it complete. One indexed query; errors are one-line :class:`RecordError` s
    naming the store without its password."""
    from psycopg import Connection
    from psycopg import Error as DriverError
    from psycopg.errors import UndefinedColumn, UndefinedTable

    from llm_council.bias_audit.records.postgres_errors import check_url, store_error
    from llm_council.bias_audit.records.postgres_store import CONNECT_TIMEOUT_S

    check_url(url)
    rows: list[tuple[Any, ...]] = []
    try:
        with Connection.connect(url, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            for check_kind in ("r.check_kind", "NULL"):  # the column is there from schema 3
                try:
                    query = _SESSION_ROWS.format(check_kind=check_kind)
                    rows = connection.execute(query, (session_id,)).fetchall()  # type: ignore[arg-type]
                    break
                except UndefinedColumn:
                    connection.rollback()
                except UndefinedTable:  # no store here yet: nothing stored
                    return {}
    except DriverError as error:
        raise store_error(url, "cannot read the audited session", error) from None
    if not rows or len(rows) != rows[0][0]:
        return {}
    return records_profiles(
        [
            {
                "score_value": score,
                "check_kind": kind,
                "is_self_review": is_self,
                "reviewer_id": reviewer,
                "model_id": model,
                "position": position,
            }
            for _, reviewer, model, score, is_self, position, kind in rows
        ]
    )
