"""Rebuild a PostgreSQL store's reviewer profiles from its records, and read them for
``history=`` (ADR 0048; the tables and the append side: :mod:`.postgres_profiles`).

One ``REPEATABLE READ`` transaction locks the state row, streams the records of its
snapshot (complete sessions, no live-check reviews, in the order they were written, as the
JSONL rebuild reads them), writes the base and deletes the deltas and markers of that
snapshot. A delta commits with its session, so those committed later belong to sessions
the snapshot did not see and stay, to be merged on top: appends never wait for a rebuild.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg import Connection, IsolationLevel
from psycopg import Error as DriverError
from psycopg.errors import InsufficientPrivilege, SerializationFailure
from psycopg.types.json import Jsonb

from llm_council.bias_audit.records.postgres_errors import check_url, store_error
from llm_council.bias_audit.records.postgres_profiles import (
    _UPSERT_BASE,
    PROFILE_SCHEMA_VERSION,
    lookup_profiles_sync,
)
from llm_council.bias_audit.records.postgres_store import (
    BATCH_SIZE,
    CONNECT_TIMEOUT_S,
    _schema_version,
)
from llm_council.bias_audit.records.reviewer_profiles import (
    PROFILE_FORMAT,
    Profiles,
    encode_profiles,
    merge_profiles,
    records_profiles,
)

#: a rebuild that loses a race with another rebuild or compaction tries again this often
REBUILD_ATTEMPTS = 4


def _records_query(version: int) -> str:
    check_kind = "r.check_kind" if version >= 3 else "NULL"  # live checks: schema 3
    # sessions in the order they were written, records in their session's order: the
    # order a JSONL store holds them in, so the sums add up in the same order
    return (
        "SELECT r.session_id, s.n_records, r.reviewer_id, r.model_id, r.score_value, "
        f"r.is_self_review, r.position, {check_kind} "
        "FROM bias_records r JOIN bias_sessions s USING (session_id) "
        "ORDER BY s.written_at, r.session_id, r.record_index"
    )


def profiles_of_records(connection: Connection[Any], version: int) -> Profiles:
    """Profiles from every complete session of the store (streamed in batches; memory
    bounded by one batch and one session). A session with fewer or more records than its
    ``n_records`` is left out, as the readers leave it out."""
    profiles: Profiles = {}
    current: str | None = None
    expected = 0
    records: list[Mapping[str, Any]] = []

    def finish() -> None:
        nonlocal profiles
        if current is not None and len(records) == expected:
            profiles = merge_profiles(profiles, records_profiles(records))

    with connection.cursor(name="llm_council_profiles") as cursor:
        cursor.itersize = BATCH_SIZE
        cursor.execute(_records_query(version))
        while rows := cursor.fetchmany(BATCH_SIZE):
            for session_id, n_records, reviewer, model, score, is_self, position, kind in rows:
                if session_id != current:
                    finish()
                    current, expected, records = session_id, n_records, []
                records.append(
                    {
                        "score_value": score,
                        "check_kind": kind,
                        "is_self_review": is_self,
                        "reviewer_id": reviewer,
                        "model_id": model,
                        "position": position,
                    }
                )
    finish()
    return profiles


def _computed(connection: Connection[Any], version: int) -> Profiles:
    with connection.transaction():
        return profiles_of_records(connection, version)


def _rebuild(connection: Connection[Any], url: str, version: int) -> Profiles:
    """Rebuild the sums from the records and save them (see the module docstring); a role
    that may read the records but not write the sums gets them computed, not saved."""
    if version < PROFILE_SCHEMA_VERSION:  # an older store, not migrated yet: nothing to save in
        return _computed(connection, version)
    try:
        return _rebuild_and_save(connection, url, version)
    except InsufficientPrivilege:
        connection.rollback()
        connection.isolation_level = None
        return _computed(connection, version)


def _rebuild_and_save(connection: Connection[Any], url: str, version: int) -> Profiles:
    connection.execute("INSERT INTO bias_profile_state (format) VALUES (0) ON CONFLICT DO NOTHING")
    connection.commit()
    for _ in range(REBUILD_ATTEMPTS):
        connection.isolation_level = IsolationLevel.REPEATABLE_READ
        try:
            with connection.transaction():
                connection.execute("SELECT 1 FROM bias_profile_state FOR UPDATE")
                profiles = profiles_of_records(connection, version)
                connection.execute("DELETE FROM bias_profile_deltas")  # this snapshot's only
                connection.execute("DELETE FROM bias_reviewer_profiles")
                connection.execute(_UPSERT_BASE, (Jsonb(encode_profiles(profiles)),))
                connection.execute(
                    "UPDATE bias_profile_state SET format = %s, "
                    "generation = generation + 1, rebuilt_at = now()",
                    (PROFILE_FORMAT,),
                )
            return profiles
        except SerializationFailure:
            # another rebuild or a compaction committed first: that may have done the work
            connection.isolation_level = None
            fresh = lookup_profiles_sync(connection, url)
            connection.commit()
            if fresh is not None:
                return fresh
        finally:
            connection.isolation_level = None
    raise SerializationFailure(f"the rebuild lost {REBUILD_ATTEMPTS} races in a row")


def _store_version(connection: Connection[Any], url: str) -> int | None:
    """The store's schema version, ``None`` for a database without any (no history)."""
    row = connection.execute("SELECT to_regclass('llm_council_schema') IS NULL").fetchone()
    if row is None or row[0]:
        connection.commit()
        return None
    version = _schema_version(connection, url)
    connection.commit()
    return version


def rebuild_profiles(url: str) -> Profiles:
    """Rebuild the store's profiles from its records now (a stale or missing summary)."""
    check_url(url)
    try:
        with Connection.connect(url, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            version = _store_version(connection, url)
            return {} if version is None else _rebuild(connection, url, version)
    except DriverError as error:
        raise store_error(url, "cannot rebuild the reviewer profiles", error) from None


def load_postgres_profiles(url: str) -> Profiles:
    """The store's reviewer profiles: the summary when fresh, else rebuilt from the
    records (in this call, whatever the store's size). A database without the store's
    schema has no history (``{}``); one at schema 1-4 (not yet written by this version) is
    read from its records without saving. Errors are one-line :class:`RecordError` s that
    name the store without its password."""
    check_url(url)
    try:
        with Connection.connect(url, connect_timeout=CONNECT_TIMEOUT_S) as connection:
            version = _store_version(connection, url)
            if version is None:
                return {}
            if version >= PROFILE_SCHEMA_VERSION:
                fresh = lookup_profiles_sync(connection, url)
                connection.commit()
                if fresh is not None:
                    return fresh
            return _rebuild(connection, url, version)
    except DriverError as error:
        raise store_error(url, "cannot read the reviewer profiles", error) from None
