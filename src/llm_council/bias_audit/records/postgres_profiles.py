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

**Rebuild** (:mod:`~llm_council.bias_audit.records.postgres_profile_rebuild`). One
``REPEATABLE READ`` transaction locks the state row, streams the records
of its snapshot (complete sessions, no live-check reviews, as the JSONL rebuild), writes the
base and deletes the deltas and markers *of that snapshot*. A delta commits with its
session, so those committed later belong to sessions the snapshot did not see and stay, to
be merged on top: appends never wait for a rebuild.

Messages name the store by its redacted URL and scrub the password from driver messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from psycopg import AsyncConnection, Connection
from psycopg import Error as DriverError
from psycopg.types.json import Jsonb

from llm_council.bias_audit.records.postgres_errors import scrub_message
from llm_council.bias_audit.records.postgres_profile_seals import (
    DELTA_KIND,
    delta_body,
    key_or_note,
    row_seal,
    sealed_base,
    sealing_key,
    verified_base,
    verified_delta,
)
from llm_council.bias_audit.records.postgres_schema import stored_store_id
from llm_council.bias_audit.records.reviewer_profiles import (
    PROFILE_FORMAT,
    Profiles,
    encode_profiles,
    merge_profiles,
    profile_fields,
    records_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.bias_audit.records.summary_seal import all_finite

log = structlog.get_logger("llm_council.bias_audit")

#: the store schema version whose profile tables this code reads and writes (5 added the
#: tables, 6 their seals and the delta's session id, ADR 0056)
PROFILE_SCHEMA_VERSION = 6
#: a writer whose delta makes this many pending folds them into the base
COMPACT_EVERY = 32

_DAMAGED = (ValueError, KeyError, TypeError, IndexError, AttributeError)

# one statement, one snapshot: the state, whether anything is unfolded, the base and the
# deltas; with the caller's cached state (generation and the state row's xmin) still
# current, the base and the deltas it already merged come back NULL (the lookup is then a
# few hundred bytes, however many deltas are pending). "LIMIT 1": the planner then knows
# the state is one row; without it a never-analysed table is costed at ~1,700 rows, past
# jit_above_cost, and JIT compilation alone took 14 ms of a 15 ms lookup
_CURRENT = "s.generation = %(generation)s AND s.xmin = %(xmin)s"
_LOOKUP = f"""SELECT s.format, s.generation, s.xmin,
    EXISTS (SELECT 1 FROM bias_profile_deltas d
            WHERE d.profiles IS NULL OR d.format IS DISTINCT FROM %(format)s),
    CASE WHEN {_CURRENT} THEN NULL
         ELSE (SELECT coalesce(jsonb_object_agg(reviewer_id, jsonb_build_array(profile, seal)),
                               '{{}}'::jsonb)
               FROM bias_reviewer_profiles) END,
    (SELECT coalesce(jsonb_agg(
                CASE WHEN {_CURRENT} AND d.id = ANY(%(known)s::bigint[])
                     THEN jsonb_build_array(d.id)
                     ELSE jsonb_build_array(d.id, d.profiles, d.session_id, d.seal) END
                ORDER BY d.id), '[]'::jsonb)
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


def _lookup_result(
    row: Sequence[Any] | None, cached: _Summary | None, store_id: str
) -> _Summary | None:
    """The profiles from :data:`_LOOKUP`'s row: the base (or the cached result) plus the
    new deltas in id order (the order the JSONL journal merges in), or ``None`` when
    missing, stale, damaged or (with a key) the base's seal does not verify. A delta whose
    seal does not verify is left out."""
    if row is None or row[0] != PROFILE_FORMAT or row[3]:
        return None
    generation, xmin, base, deltas = int(row[1]), str(row[2]), row[4], row[5]
    key = key_or_note()
    try:
        if base is None:  # the cached state is current: only new deltas come back
            if cached is None or not cached.delta_ids <= {int(d[0]) for d in deltas}:
                return None
            profiles: Profiles | None = cached.profiles
            known = cached.delta_ids
        else:
            profiles, known = verified_base(base, key, store_id), frozenset()
        if profiles is None:
            return None
        for delta in deltas:
            if int(delta[0]) not in known:
                found = verified_delta(delta, key, store_id)
                if found is not None:
                    profiles = merge_profiles(profiles, found)
    except _DAMAGED:
        return None
    return _Summary(generation, xmin, frozenset(int(d[0]) for d in deltas), profiles)


async def lookup_profiles(
    connection: AsyncConnection[Any], url: str | None = None, store_id: str = ""
) -> Profiles | None:
    """The store's profiles when fresh, else ``None`` (one query; schema 6). With ``url``,
    the result is kept for the next lookup of that store in this process, which then
    fetches only the deltas appended since."""
    cached = _SUMMARIES.get(url) if url is not None else None
    for attempt in (cached, None) if cached is not None else (None,):
        cursor = await connection.execute(_LOOKUP, _lookup_parameters(attempt))
        summary = _lookup_result(await cursor.fetchone(), attempt, store_id)
        if summary is not None or attempt is None:
            break
    if summary is None:
        return None
    if url is not None:
        _SUMMARIES[url] = summary
    return summary.profiles


def lookup_profiles_sync(
    connection: Connection[Any], url: str | None = None, store_id: str | None = None
) -> Profiles | None:
    """:func:`lookup_profiles` on a blocking connection (the store's id read if not given)."""
    if store_id is None:
        store_id = stored_store_id(connection)
    cached = _SUMMARIES.get(url) if url is not None else None
    for attempt in (cached, None) if cached is not None else (None,):
        row = connection.execute(_LOOKUP, _lookup_parameters(attempt)).fetchone()
        summary = _lookup_result(row, attempt, store_id)
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
    "INSERT INTO bias_profile_deltas (format, profiles, session_id, seal) "
    "VALUES (%s, %s, %s, %s) "
    "RETURNING (SELECT count(*) FROM bias_profile_deltas WHERE profiles IS NOT NULL) + 1"
)
_UPSERT_BASE = (
    "INSERT INTO bias_reviewer_profiles (reviewer_id, profile, seal) "
    "SELECT key, value -> 0, value ->> 1 FROM jsonb_each(%s) "
    "ON CONFLICT (reviewer_id) DO UPDATE SET profile = EXCLUDED.profile, seal = EXCLUDED.seal"
)


async def count_sessions(connection: AsyncConnection[Any]) -> int:
    """How many sessions the store holds (what a rebuild has to fold)."""
    cursor = await connection.execute("SELECT count(*) FROM bias_sessions")
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def session_contribution(records: Sequence[ReviewRecord]) -> Profiles | None:
    """One session's sums, computed in a worker thread (numpy: off the event loop);
    ``None`` if they cannot be computed or are not finite within the store's bound, so the
    append goes on and the marker stays (the rebuild then leaves the session out)."""
    try:
        contribution = await asyncio.to_thread(records_profiles, profile_fields(records))
        encoded = encode_profiles(contribution)
    except Exception as error:  # the statistics must never fail an append
        log.warning("reviewer_profiles_not_folded", error=f"{type(error).__name__}: {error}")
        return None
    if not all_finite(encoded):
        log.warning("reviewer_profiles_not_folded", error="sums not finite")
        return None
    return contribution


async def fold_session(
    connection: AsyncConnection[Any],
    url: str,
    contribution: Profiles | None,
    session_id: str | None = None,
    store_id: str = "",
) -> int | None:
    """Fold one session's sums into the store, inside its append transaction, after its
    records: insert its delta (sealed when a key is set) and delete the transaction's
    stale marker, in a savepoint.

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
            encoded = encode_profiles(contribution)
            key = sealing_key()
            body = delta_body(session_id, PROFILE_FORMAT, encoded)
            delta_seal = row_seal(key, DELTA_KIND, store_id, body) if key else None
            cursor = await connection.execute(
                _INSERT_DELTA, (PROFILE_FORMAT, Jsonb(encoded), session_id, delta_seal)
            )
            row = await cursor.fetchone()
            return int(row[0]) if row else None
    except (DriverError, *_DAMAGED) as error:
        log.warning(
            "reviewer_profiles_not_folded",
            store=redact_url(url),
            error=scrub_message(str(error), url) or type(error).__name__,
        )
        return None


async def compact_profiles(connection: AsyncConnection[Any], url: str, store_id: str = "") -> bool:
    """Fold the committed deltas into the base (its own transaction, after an append's
    commit). Skipped, never waited for, while a rebuild or another compaction holds the
    state row, while the sums are stale, and (with a key) while a base row's seal does
    not verify; a delta whose seal does not verify is dropped, with a warning. Failures
    are logged, never raised."""
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
                "RETURNING id, profiles, session_id, seal",
                (PROFILE_FORMAT,),
            )
            key = sealing_key()
            deltas = [
                found
                for delta in sorted(await cursor.fetchall())
                if (found := verified_delta(delta, key, store_id)) is not None
            ]
            names = sorted({name for delta in deltas for name in delta})
            cursor = await connection.execute(
                "SELECT coalesce(jsonb_object_agg(reviewer_id, jsonb_build_array(profile, seal)), "
                "'{}'::jsonb) FROM bias_reviewer_profiles WHERE reviewer_id = ANY(%s)",
                (names,),
            )
            base = await cursor.fetchone()
            merged = verified_base(base[0] if base else {}, key, store_id)
            if merged is None:
                raise _Unsealed  # rolled back: the deltas stay, the lookup rebuilds
            for delta in deltas:
                merged = merge_profiles(merged, delta)
            await connection.execute(_UPSERT_BASE, (sealed_base(merged, store_id),))
            await connection.execute("UPDATE bias_profile_state SET generation = generation + 1")
        return True
    except _Unsealed:
        return False
    except (DriverError, *_DAMAGED) as error:
        log.warning(
            "reviewer_profiles_not_compacted",
            store=redact_url(url),
            error=scrub_message(str(error), url) or type(error).__name__,
        )
        return False


class _Unsealed(Exception):
    """A base row's seal does not verify: the compaction rolls back."""


__all__ = [
    "COMPACT_EVERY",
    "PROFILE_SCHEMA_VERSION",
    "compact_profiles",
    "count_sessions",
    "fold_session",
    "lookup_profiles",
    "lookup_profiles_sync",
    "sealed_base",
    "session_contribution",
]
