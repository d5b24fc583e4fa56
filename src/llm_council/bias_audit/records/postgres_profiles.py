"""Reviewer profiles of a PostgreSQL store: the JSONL sidecar's mergeable sums, in tables.

The sums and their encoding are :mod:`~llm_council.bias_audit.records.reviewer_profiles`'
(ADR 0045); schema 5 of :mod:`~llm_council.bias_audit.records.postgres_store` keeps them in

- ``bias_reviewer_profiles``: the base, one row per reviewer (its encoded sums, ``jsonb``);
- ``bias_profile_deltas``: one row per session appended since, inserted by the writer in the
  append's own transaction (:func:`fold_session`). Insert-only, so concurrent appenders on
  any number of replicas neither wait for each other nor lose an update. A row whose
  ``profiles`` is NULL is a *marker*: records changed and were not folded;
- ``bias_profile_state``: one row, the format of the sums (0: never built) and a generation.

**Staleness.** A statement trigger on ``bias_sessions`` and ``bias_records`` inserts one
marker per transaction that changes them (``xact_id``: that transaction). The writer's fold,
in a savepoint after the records, deletes its own transaction's marker as it inserts the
session's delta. A marker therefore survives exactly when records changed without a fold:
rows written by another program or imported, a compaction (``DELETE``), a fold that failed
(rolled back to its savepoint; the records stay). The sums are stale while a marker exists
or the state's format is not :data:`PROFILE_FORMAT` (a store migrated from schema 4 starts
at 0); a lookup then returns ``None`` and the caller rebuilds (:func:`rebuild_profiles`).

**Compaction.** A writer whose delta makes :data:`COMPACT_EVERY` pending folds them into
the base after its commit, under the state row's lock taken with ``SKIP LOCKED`` (it never
waits), so a lookup merges at most a few dozen deltas.

**Rebuild.** One ``REPEATABLE READ`` transaction locks the state row, streams the records
of its snapshot (complete sessions, no live-check reviews, as the JSONL rebuild), writes the
base and deletes the deltas and markers *of that snapshot*. A delta commits with its
session, so those committed later belong to sessions the snapshot did not see and stay, to
be merged on top: appends never wait for a rebuild.

Messages name the store by its redacted URL and scrub the password from driver messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from psycopg import AsyncConnection, Connection, IsolationLevel
from psycopg import Error as DriverError
from psycopg.errors import InsufficientPrivilege, SerializationFailure
from psycopg.types.json import Jsonb

from llm_council.bias_audit.records.postgres_store import (
    BATCH_SIZE,
    CONNECT_TIMEOUT_S,
    _schema_version,
    _scrub,
    _store_error,
    check_url,
)
from llm_council.bias_audit.records.reviewer_profiles import (
    PROFILE_FORMAT,
    Profiles,
    decode_profiles,
    encode_profiles,
    merge_profiles,
    records_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_urls import redact_url

log = structlog.get_logger("llm_council.bias_audit")

#: the store schema version that holds the profile tables
PROFILE_SCHEMA_VERSION = 5
#: a writer whose delta makes this many pending folds them into the base
COMPACT_EVERY = 32
#: a rebuild that loses a race with another rebuild or compaction tries again this often
REBUILD_ATTEMPTS = 4

_DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError)

# one statement, one snapshot: the state, whether anything is unfolded, the base and the
# deltas; with the caller's cached state (generation and the state row's xmin) still
# current, the base and the deltas it already merged come back NULL (the lookup is then a
# few hundred bytes, however many deltas are pending). "LIMIT 1": the planner then knows
# the state is one row; without it a never-analysed table is costed at ~1,700 rows, past
# jit_above_cost, and JIT compilation alone took 14 ms of a 15 ms lookup
_LOOKUP = """SELECT s.format, s.generation, s.xmin,
    EXISTS (SELECT 1 FROM bias_profile_deltas d
            WHERE d.profiles IS NULL OR d.format IS DISTINCT FROM %(format)s),
    CASE WHEN s.generation = %(generation)s AND s.xmin = %(xmin)s THEN NULL
         ELSE (SELECT coalesce(jsonb_object_agg(reviewer_id, profile), '{}'::jsonb)
               FROM bias_reviewer_profiles) END,
    (SELECT coalesce(jsonb_agg(jsonb_build_array(d.id,
                CASE WHEN s.generation = %(generation)s AND s.xmin = %(xmin)s
                          AND d.id = ANY(%(known)s::bigint[]) THEN NULL
                     ELSE d.profiles END) ORDER BY d.id), '[]'::jsonb)
     FROM bias_profile_deltas d WHERE d.profiles IS NOT NULL)
  FROM (SELECT format, generation, xmin::text AS xmin FROM bias_profile_state LIMIT 1) s"""


@dataclass(frozen=True)
class _Summary:
    """What one process last read of one store: the state it was read at, the deltas
    merged, and the profiles (so the next lookup fetches and merges only new deltas)."""

    generation: int
    xmin: str
    delta_ids: frozenset[int]
    profiles: Profiles


#: per store URL: the last lookup's result
_SUMMARIES: dict[str, _Summary] = {}


def _lookup_parameters(cached: _Summary | None) -> dict[str, Any]:
    return {
        "format": PROFILE_FORMAT,
        "generation": -1 if cached is None else cached.generation,
        "xmin": "" if cached is None else cached.xmin,
        "known": [] if cached is None else sorted(cached.delta_ids),
    }


def _lookup_result(row: Sequence[Any] | None, cached: _Summary | None) -> _Summary | None:
    """The profiles from :data:`_LOOKUP`'s row: the base (or the cached result) plus the
    new deltas in id order (the order the JSONL journal merges in), or ``None`` when
    missing, stale or damaged."""
    if row is None or row[0] != PROFILE_FORMAT or row[3]:
        return None
    generation, xmin, base, deltas = int(row[1]), str(row[2]), row[4], row[5]
    try:
        if base is None:  # the cached state is current: only new deltas come back
            if cached is None or not cached.delta_ids <= {int(d[0]) for d in deltas}:
                return None
            profiles, known = cached.profiles, cached.delta_ids
        else:
            profiles, known = decode_profiles(base), frozenset()
        for delta_id, encoded in deltas:
            if int(delta_id) not in known:
                profiles = merge_profiles(profiles, decode_profiles(encoded))
    except _DAMAGED:
        return None
    return _Summary(generation, xmin, frozenset(int(d[0]) for d in deltas), profiles)


async def lookup_profiles(
    connection: AsyncConnection[Any], url: str | None = None
) -> Profiles | None:
    """The store's profiles when fresh, else ``None`` (one query; schema 5). With ``url``,
    the result is kept for the next lookup of that store in this process, which then
    fetches only the deltas appended since."""
    cached = _SUMMARIES.get(url) if url is not None else None
    for attempt in (cached, None) if cached is not None else (None,):
        cursor = await connection.execute(_LOOKUP, _lookup_parameters(attempt))
        summary = _lookup_result(await cursor.fetchone(), attempt)
        if summary is not None or attempt is None:
            break
    if summary is None:
        return None
    if url is not None:
        _SUMMARIES[url] = summary
    return summary.profiles


def lookup_profiles_sync(connection: Connection[Any], url: str | None = None) -> Profiles | None:
    """:func:`lookup_profiles` on a blocking connection."""
    cached = _SUMMARIES.get(url) if url is not None else None
    for attempt in (cached, None) if cached is not None else (None,):
        row = connection.execute(_LOOKUP, _lookup_parameters(attempt)).fetchone()
        summary = _lookup_result(row, attempt)
        if summary is not None or attempt is None:
            break
    if summary is None:
        return None
    if url is not None:
        _SUMMARIES[url] = summary
    return summary.profiles


_DROP_OWN_MARKER = (
    "DELETE FROM bias_profile_deltas WHERE profiles IS NULL AND xact_id = pg_current_xact_id()"
)
_INSERT_DELTA = (
    f"WITH own_marker AS ({_DROP_OWN_MARKER}) "
    "INSERT INTO bias_profile_deltas (format, profiles) VALUES (%s, %s) "
    "RETURNING (SELECT count(*) FROM bias_profile_deltas WHERE profiles IS NOT NULL) + 1"
)
_UPSERT_BASE = (
    "INSERT INTO bias_reviewer_profiles (reviewer_id, profile) "
    "SELECT key, value FROM jsonb_each(%s) "
    "ON CONFLICT (reviewer_id) DO UPDATE SET profile = EXCLUDED.profile"
)


async def count_sessions(connection: AsyncConnection[Any]) -> int:
    """How many sessions the store holds (what a rebuild has to fold)."""
    cursor = await connection.execute("SELECT count(*) FROM bias_sessions")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


def _cells(records: Sequence[ReviewRecord]) -> list[dict[str, Any]]:
    """The record fields the profiles read (as the JSONL store hands them over)."""
    return [
        {
            "score_value": record.score_value,
            "check_kind": record.check_kind,
            "is_self_review": record.is_self_review,
            "reviewer_id": record.reviewer_id,
            "model_id": record.model_id,
            "position": record.position,
        }
        for record in records
    ]


async def session_contribution(records: Sequence[ReviewRecord]) -> Profiles | None:
    """One session's sums, computed in a worker thread (numpy: off the event loop);
    ``None`` if they cannot be computed, so the append goes on and the marker stays."""
    try:
        return await asyncio.to_thread(records_profiles, _cells(records))
    except Exception as error:  # the statistics must never fail an append
        log.warning("reviewer_profiles_not_folded", error=f"{type(error).__name__}: {error}")
        return None


async def fold_session(
    connection: AsyncConnection[Any], url: str, contribution: Profiles | None
) -> int | None:
    """Fold one session's sums into the store, inside its append transaction, after its
    records: insert its delta and delete the transaction's stale marker, in a savepoint.

    Returns how many deltas are pending with this one (``None`` when nothing was
    inserted), for the writer to compact at :data:`COMPACT_EVERY`. A failure rolls back to
    the savepoint only and is logged: the records are kept, and the surviving marker
    marks the profiles stale for the next lookup to rebuild.
    """
    if contribution is None:
        return None  # the trigger's marker stays
    try:
        async with connection.transaction():  # a savepoint
            if not contribution:  # nothing to add (one reviewer, no scores): not stale
                await connection.execute(_DROP_OWN_MARKER)
                return None
            cursor = await connection.execute(
                _INSERT_DELTA, (PROFILE_FORMAT, Jsonb(encode_profiles(contribution)))
            )
            row = await cursor.fetchone()
            return int(row[0]) if row else None
    except (DriverError, *_DAMAGED) as error:
        log.warning(
            "reviewer_profiles_not_folded",
            store=redact_url(url),
            error=_scrub(str(error), url) or type(error).__name__,
        )
        return None


async def compact_profiles(connection: AsyncConnection[Any], url: str) -> bool:
    """Fold the committed deltas into the base (its own transaction, after an append's
    commit). Skipped, never waited for, while a rebuild or another compaction holds the
    state row, and while the sums are stale. Failures are logged, never raised."""
    try:
        async with connection.transaction():
            cursor = await connection.execute(
                "SELECT format FROM bias_profile_state FOR UPDATE SKIP LOCKED"
            )
            state = await cursor.fetchone()
            if state is None or state[0] != PROFILE_FORMAT:
                return False
            cursor = await connection.execute(
                "SELECT EXISTS (SELECT 1 FROM bias_profile_deltas WHERE profiles IS NULL)"
            )
            stale = await cursor.fetchone()
            if stale is None or stale[0]:
                return False  # only a rebuild clears a marker
            cursor = await connection.execute(
                "DELETE FROM bias_profile_deltas WHERE profiles IS NOT NULL AND format = %s "
                "RETURNING id, profiles",
                (PROFILE_FORMAT,),
            )
            deltas = [decode_profiles(profiles) for _, profiles in sorted(await cursor.fetchall())]
            names = sorted({name for delta in deltas for name in delta})
            cursor = await connection.execute(
                "SELECT coalesce(jsonb_object_agg(reviewer_id, profile), '{}'::jsonb) "
                "FROM bias_reviewer_profiles WHERE reviewer_id = ANY(%s)",
                (names,),
            )
            base = await cursor.fetchone()
            merged = decode_profiles(base[0] if base else {})
            for delta in deltas:
                merged = merge_profiles(merged, delta)
            await connection.execute(_UPSERT_BASE, (Jsonb(encode_profiles(merged)),))
            await connection.execute("UPDATE bias_profile_state SET generation = generation + 1")
        return True
    except (DriverError, *_DAMAGED) as error:
        log.warning(
            "reviewer_profiles_not_compacted",
            store=redact_url(url),
            error=_scrub(str(error), url) or type(error).__name__,
        )
        return False


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
        raise _store_error(url, "cannot rebuild the reviewer profiles", error) from None


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
        raise _store_error(url, "cannot read the reviewer profiles", error) from None


__all__ = [
    "COMPACT_EVERY",
    "PROFILE_SCHEMA_VERSION",
    "compact_profiles",
    "count_sessions",
    "fold_session",
    "load_postgres_profiles",
    "lookup_profiles",
    "lookup_profiles_sync",
    "profiles_of_records",
    "rebuild_profiles",
    "session_contribution",
]
