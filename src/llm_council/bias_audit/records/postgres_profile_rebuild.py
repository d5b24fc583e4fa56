"""Rebuild a PostgreSQL store's reviewer profiles from its records, and read them for
``history=`` (ADR 0048; the tables and the append side: :mod:`.postgres_profiles`).

One ``REPEATABLE READ`` transaction locks the state row, streams the records of its
snapshot (complete sessions, no live-check reviews, in the order they were written, as the
JSONL rebuild reads them), writes the base and deletes the deltas and markers of that
snapshot. A delta commits with its session, so those committed later belong to sessions
the snapshot did not see and stay, to be merged on top: appends never wait for a rebuild.

A session with a score beyond :data:`~.postgres_schema.MAX_ABS_SCORE` (or not finite),
stored before schema 6 bounded them, is left out with a warning (ADR 0056): one score of
1e300 made every rebuild fail (``Token "Infinity" is invalid``) and switched history off
for every replica. A role that may not write the sums (``SELECT`` only, a read-only
database, a hot standby) gets them computed from the records and not saved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from psycopg import Connection, IsolationLevel
from psycopg import Error as DriverError
from psycopg.errors import InsufficientPrivilege, ReadOnlySqlTransaction, SerializationFailure

from llm_council.bias_audit.records.postgres_connect import connect_options
from llm_council.bias_audit.records.postgres_errors import check_url, store_error
from llm_council.bias_audit.records.postgres_profiles import (
    _UPSERT_BASE,
    PROFILE_SCHEMA_VERSION,
    lookup_profiles_sync,
    sealed_base,
)
from llm_council.bias_audit.records.postgres_schema import (
    MAX_ABS_SCORE,
    require_current,
    stored_store_id,
    stored_version,
)
from llm_council.bias_audit.records.postgres_store import BATCH_SIZE
from llm_council.bias_audit.records.reviewer_profiles import (
    PROFILE_FORMAT,
    Profiles,
    merge_profiles,
    records_profiles,
)
from llm_council.bias_audit.records.store_urls import redact_url

log = structlog.get_logger("llm_council.bias_audit")

#: a rebuild that loses a race with another rebuild or compaction tries again this often
REBUILD_ATTEMPTS = 4
#: a role that may not write the sums: computed from the records instead
_CANNOT_WRITE = (InsufficientPrivilege, ReadOnlySqlTransaction)


@dataclass
class RebuildCounts:
    """What a rebuild folded and left out."""

    sessions_folded: int = 0
    sessions_incomplete: int = 0
    sessions_out_of_bound: int = 0
    saved: bool = False


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


def _in_bound(score: float | None) -> bool:
    return score is None or (math.isfinite(score) and abs(score) <= MAX_ABS_SCORE)


def profiles_of_records(
    connection: Connection[Any], version: int, counts: RebuildCounts | None = None
) -> Profiles:
    """Profiles from every complete session of the store (streamed in batches; memory
    bounded by one batch and one session). A session with fewer or more records than its
    ``n_records`` is left out, as the readers leave it out; so is one with a score beyond
    :data:`MAX_ABS_SCORE` (logged once per rebuild, with the count)."""
    counts = RebuildCounts() if counts is None else counts
    profiles: Profiles = {}
    current: str | None = None
    expected = 0
    records: list[Mapping[str, Any]] = []

    def finish() -> None:
        nonlocal profiles
        if current is None:
            return
        if len(records) != expected:
            counts.sessions_incomplete += 1
        elif not all(_in_bound(record["score_value"]) for record in records):
            counts.sessions_out_of_bound += 1
        else:
            profiles = merge_profiles(profiles, records_profiles(records))
            counts.sessions_folded += 1

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
    if counts.sessions_out_of_bound:
        log.warning(
            "reviewer_profiles_sessions_left_out",
            sessions=counts.sessions_out_of_bound,
            reason=f"a score beyond +/-{MAX_ABS_SCORE:.0e} or not finite",
        )
    return profiles


def _computed(connection: Connection[Any], version: int, counts: RebuildCounts) -> Profiles:
    with connection.transaction():
        return profiles_of_records(connection, version, counts)


def _rebuild(
    connection: Connection[Any], url: str, version: int, counts: RebuildCounts | None = None
) -> Profiles:
    """Rebuild the sums from the records and save them (see the module docstring); a role
    that may read the records but not write the sums gets them computed, not saved."""
    counts = RebuildCounts() if counts is None else counts
    if version < PROFILE_SCHEMA_VERSION:  # an older store, not migrated yet: nothing to save in
        return _computed(connection, version, counts)
    try:
        profiles = _rebuild_and_save(connection, url, version, counts)
        counts.saved = True
        return profiles
    except _CANNOT_WRITE:
        connection.rollback()
        connection.isolation_level = None
        fresh = RebuildCounts()
        profiles = _computed(connection, version, fresh)
        counts.__dict__.update(fresh.__dict__)
        return profiles


def _rebuild_and_save(
    connection: Connection[Any], url: str, version: int, counts: RebuildCounts
) -> Profiles:
    connection.execute("INSERT INTO bias_profile_state (format) VALUES (0) ON CONFLICT DO NOTHING")
    connection.commit()
    store_id = stored_store_id(connection)
    connection.commit()
    for _ in range(REBUILD_ATTEMPTS):
        connection.isolation_level = IsolationLevel.REPEATABLE_READ
        attempt = RebuildCounts()
        try:
            with connection.transaction():
                connection.execute("SELECT 1 FROM bias_profile_state FOR UPDATE")
                profiles = profiles_of_records(connection, version, attempt)
                connection.execute("DELETE FROM bias_profile_deltas")  # this snapshot's only
                connection.execute("DELETE FROM bias_reviewer_profiles")
                connection.execute(_UPSERT_BASE, (sealed_base(profiles, store_id),))
                connection.execute(
                    "UPDATE bias_profile_state SET format = %s, "
                    "generation = generation + 1, rebuilt_at = now()",
                    (PROFILE_FORMAT,),
                )
            counts.__dict__.update(attempt.__dict__)
            return profiles
        except SerializationFailure:
            # another rebuild or a compaction committed first: that may have done the work
            connection.isolation_level = None
            fresh = lookup_profiles_sync(connection, url, store_id)
            connection.commit()
            if fresh is not None:
                return fresh
        finally:
            connection.isolation_level = None
    raise SerializationFailure(f"the rebuild lost {REBUILD_ATTEMPTS} races in a row")


def _store_version(connection: Connection[Any], url: str) -> int | None:
    """The store's schema version, ``None`` for a database without any (no history)."""
    version = stored_version(connection, url)
    connection.commit()
    return version


def rebuild_profiles(url: str, counts: RebuildCounts | None = None) -> Profiles:
    """Rebuild the store's profiles from its records now (a stale or missing summary);
    ``counts`` (when given) is filled with what was folded and left out."""
    check_url(url)
    try:
        with Connection.connect(url, **connect_options(url)) as connection:
            version = _store_version(connection, url)
            return {} if version is None else _rebuild(connection, url, version, counts)
    except DriverError as error:
        raise store_error(url, "cannot rebuild the reviewer profiles", error) from None


def rebuild_current_store(url: str, counts: RebuildCounts | None = None) -> Profiles:
    """:func:`rebuild_profiles` for ``llm-council store-rebuild``: a store without the
    current schema is refused in one line that says to run the migration (there is no
    summary to save in it)."""
    check_url(url)
    try:
        with Connection.connect(url, **connect_options(url)) as connection:
            version = _store_version(connection, url)
            require_current(url, version)
            assert version is not None
            return _rebuild(connection, url, version, counts)
    except DriverError as error:
        raise store_error(url, "cannot rebuild the reviewer profiles", error) from None


def load_postgres_profiles(url: str) -> Profiles:
    """The store's reviewer profiles: the summary when fresh, else rebuilt from the
    records (in this call, whatever the store's size). A database without the store's
    schema has no history (``{}``); one at schema 1-5 (not yet migrated for this version)
    is read from its records without saving. Errors are one-line :class:`RecordError` s
    that name the store without its password."""
    check_url(url)
    try:
        with Connection.connect(url, **connect_options(url)) as connection:
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


__all__ = [
    "REBUILD_ATTEMPTS",
    "RebuildCounts",
    "load_postgres_profiles",
    "profiles_of_records",
    "rebuild_current_store",
    "rebuild_profiles",
    "redact_url",
]
