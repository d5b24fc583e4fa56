"""The PostgreSQL store's schema: numbered migrations, run by one command, never on open.

``llm-council store-migrate --store URL`` (:func:`migrate`) creates or migrates the schema
in one transaction under an advisory lock, as a role that may create tables; its version
is kept in ``llm_council_schema``. Writers and readers only *check* the version, with a
read-only query (:func:`require_current_schema`, :func:`stored_version`), so a writer
needs no ``CREATE`` right and a read-only database or a hot standby still gives history
(ADR 0056; before, every pool open ran ``CREATE TABLE IF NOT EXISTS``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from psycopg import AsyncConnection, Connection
from psycopg import Error as DriverError

from llm_council.bias_audit.records.postgres_connect import connect_options
from llm_council.bias_audit.records.postgres_errors import check_url, store_error
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError

#: the largest score magnitude a store accepts: the report's bound
#: (report/load/raw_records.MAX_ABS_SCORE; a test keeps the two equal). Squares and sums
#: of such scores stay finite, where one score of 1e300 made the profiles' sums infinite
MAX_ABS_SCORE = 1e6
MIGRATE_COMMAND = "llm-council store-migrate --store URL"
#: the longest fingerprint a store accepts, as JSON text (the report never reads a longer one)
MAX_FINGERPRINT_BYTES = 2048

_MIGRATION_LOCK = 0x6C6C6D63  # pg_advisory_xact_lock key: "llmc"

# MIGRATIONS[i] brings the schema from version i to version i + 1 (numbered, append-only).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: a session row (the unit of all-or-nothing) and the record schema 1 columns
        """CREATE TABLE bias_sessions (
               session_id text PRIMARY KEY,
               n_records integer NOT NULL CHECK (n_records >= 1),
               written_at timestamptz NOT NULL DEFAULT now())""",
        """CREATE TABLE bias_records (
               session_id text NOT NULL REFERENCES bias_sessions ON DELETE CASCADE,
               record_index integer NOT NULL,
               schema_version integer NOT NULL,
               "timestamp" text NOT NULL,
               recorded_at timestamptz,
               reviewer_id text NOT NULL,
               model_id text NOT NULL,
               position integer NOT NULL,
               n_candidates integer NOT NULL,
               response_length_chars bigint NOT NULL,
               response_length_words bigint NOT NULL,
               score_value double precision,
               score_scale double precision[] NOT NULL,
               rank integer,
               is_self_review boolean NOT NULL,
               council_config_hash text NOT NULL,
               query_hash text,
               PRIMARY KEY (session_id, record_index))""",
    ),
    (  # 2: record schema 2's session_n_records, and an index for --since
        "ALTER TABLE bias_records ADD COLUMN session_n_records integer",
        "CREATE INDEX bias_records_recorded_at ON bias_records (recorded_at)",
    ),
    (  # 3: live bias checks (ADR 0024): a check review's kind and what it repeats
        "ALTER TABLE bias_records ADD COLUMN check_kind text",
        "ALTER TABLE bias_records ADD COLUMN check_of_position integer",
        "ALTER TABLE bias_records ADD COLUMN check_treated boolean",
    ),
    (  # 4: style mimicry, reasoning-chain bias and parse outcomes (issue 11 section 2)
        "ALTER TABLE bias_records ADD COLUMN similarity_to_own double precision",
        "ALTER TABLE bias_records ADD COLUMN rationale_chars bigint",
        "ALTER TABLE bias_records ADD COLUMN review_status text",
    ),
    (  # 5: the reviewer profiles' mergeable sums (ADR 0048, records/postgres_profiles.py)
        """CREATE TABLE bias_profile_state (
               singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
               format integer NOT NULL,
               generation bigint NOT NULL DEFAULT 0,
               rebuilt_at timestamptz)""",
        # 0: never built (stale); an empty store's sums are complete at the format of the
        # time (2, reviewer_profiles.PROFILE_FORMAT; a later format rebuilds the empty sums)
        "INSERT INTO bias_profile_state (format) "
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM bias_sessions) THEN 0 ELSE 2 END",
        """CREATE TABLE bias_reviewer_profiles (
               reviewer_id text PRIMARY KEY,
               profile jsonb NOT NULL)""",
        """CREATE TABLE bias_profile_deltas (
               id bigserial PRIMARY KEY,
               format integer,
               xact_id xid8,
               profiles jsonb)""",
        "CREATE INDEX bias_profile_deltas_markers ON bias_profile_deltas (xact_id) "
        "WHERE profiles IS NULL",
        # any change to the records marks the sums stale (a row with profiles NULL) unless
        # the same transaction folds them; SECURITY DEFINER, so a role that may only write
        # records (an importer) still leaves its mark
        """CREATE FUNCTION bias_profiles_mark_stale() RETURNS trigger
               LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
           BEGIN
               EXECUTE format(
                   'INSERT INTO %I.bias_profile_deltas (xact_id) SELECT pg_current_xact_id() '
                   'WHERE NOT EXISTS (SELECT 1 FROM %I.bias_profile_deltas '
                   'WHERE profiles IS NULL AND xact_id = pg_current_xact_id())',
                   TG_TABLE_SCHEMA, TG_TABLE_SCHEMA);
               RETURN NULL;
           END $$""",
        "CREATE TRIGGER bias_sessions_profiles AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        "ON bias_sessions FOR EACH STATEMENT EXECUTE FUNCTION bias_profiles_mark_stale()",
        "CREATE TRIGGER bias_records_profiles AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        "ON bias_records FOR EACH STATEMENT EXECUTE FUNCTION bias_profiles_mark_stale()",
    ),
    (  # 6: bounds a writer cannot pass, the store's id, sealed summaries (ADR 0056)
        # NOT VALID: rows already stored are not checked (the readers bound them), new ones are
        "ALTER TABLE bias_records ADD CONSTRAINT bias_records_position_in_range "
        "CHECK (n_candidates >= 1 AND position >= 0 AND position < n_candidates) NOT VALID",
        "ALTER TABLE bias_records ADD CONSTRAINT bias_records_score_in_range "
        f"CHECK (score_value BETWEEN {-MAX_ABS_SCORE:.0f} AND {MAX_ABS_SCORE:.0f}) NOT VALID",
        "ALTER TABLE bias_records ADD CONSTRAINT bias_records_index_in_range "
        "CHECK (record_index >= 0 AND (session_n_records IS NULL "
        "OR record_index < session_n_records)) NOT VALID",
        # a record's index must be below its session's n_records (whatever the row says of
        # itself): with the primary key, a complete session can take no extra row, so an
        # insert-only importer cannot make a reader drop it as incomplete. A statement
        # trigger over the transition table: one query per COPY, not one per row
        """CREATE FUNCTION bias_records_within_session() RETURNS trigger
               LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
           DECLARE
               bad_index integer;
               declared integer;
           BEGIN
               EXECUTE format(
                   'SELECT r.record_index, s.n_records FROM new_records r '
                   'JOIN %I.bias_sessions s USING (session_id) '
                   'WHERE r.record_index >= s.n_records '
                   'OR r.session_n_records IS DISTINCT FROM s.n_records '
                   'AND r.session_n_records IS NOT NULL LIMIT 1', TG_TABLE_SCHEMA)
                   INTO bad_index, declared;
               IF declared IS NOT NULL THEN
                   RAISE EXCEPTION 'bias_records: record_index % is outside its session of % '
                       'records (bias_sessions.n_records)', bad_index, declared
                       USING ERRCODE = 'check_violation';
               END IF;
               RETURN NULL;
           END $$""",
        "CREATE TRIGGER bias_records_within_session_insert AFTER INSERT ON bias_records "
        "REFERENCING NEW TABLE AS new_records "
        "FOR EACH STATEMENT EXECUTE FUNCTION bias_records_within_session()",
        "CREATE TRIGGER bias_records_within_session_update AFTER UPDATE ON bias_records "
        "REFERENCING NEW TABLE AS new_records "
        "FOR EACH STATEMENT EXECUTE FUNCTION bias_records_within_session()",
        # the store's identity, bound into every seal (a sealed row copied from another
        # store does not verify here)
        "CREATE TABLE llm_council_store (store_id text NOT NULL)",
        "INSERT INTO llm_council_store VALUES (gen_random_uuid()::text)",
        "ALTER TABLE bias_profile_deltas ADD COLUMN session_id text",
        "ALTER TABLE bias_profile_deltas ADD COLUMN seal text",
        "ALTER TABLE bias_reviewer_profiles ADD COLUMN seal text",
        # one delta per session: a sealed delta copied while it is pending is refused
        "CREATE UNIQUE INDEX bias_profile_deltas_session ON bias_profile_deltas (session_id)",
    ),
    (  # 7: the reviewer's fingerprint (ADR 0062): an object of hashes and settings, bounded
        "ALTER TABLE bias_records ADD COLUMN reviewer_fingerprint jsonb",
        "ALTER TABLE bias_records ADD CONSTRAINT bias_records_fingerprint_bounded "
        "CHECK (reviewer_fingerprint IS NULL OR (jsonb_typeof(reviewer_fingerprint) = 'object' "
        f"AND octet_length(reviewer_fingerprint::text) <= {MAX_FINGERPRINT_BYTES})) NOT VALID",
    ),
    (  # 8: the anytime monitor's state, folded in each session's transaction (ADR 0053)
        # one row: the sealed state (NULL: never built, rebuilt from the records on a look)
        """CREATE TABLE bias_monitor_state (
               singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
               body text,
               seal text,
               updated_at timestamptz)""",
        "INSERT INTO bias_monitor_state DEFAULT VALUES",
        # the fold order: which sessions the state holds, and in which order (written_at
        # is not commit order; the fold is serialised by the state row's lock)
        """CREATE TABLE bias_monitor_sessions (
               session_id text PRIMARY KEY REFERENCES bias_sessions ON DELETE CASCADE,
               fold_seq bigint NOT NULL UNIQUE CHECK (fold_seq >= 1))""",
        # any change to the records marks the state stale unless the same transaction
        # folds it (as bias_profile_deltas' markers; SECURITY DEFINER: an importer too)
        "CREATE TABLE bias_monitor_marks (xact_id xid8 PRIMARY KEY)",
        """CREATE FUNCTION bias_monitor_mark_stale() RETURNS trigger
               LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
           BEGIN
               EXECUTE format(
                   'INSERT INTO %I.bias_monitor_marks (xact_id) VALUES (pg_current_xact_id()) '
                   'ON CONFLICT DO NOTHING', TG_TABLE_SCHEMA);
               RETURN NULL;
           END $$""",
        "CREATE TRIGGER bias_sessions_monitor AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        "ON bias_sessions FOR EACH STATEMENT EXECUTE FUNCTION bias_monitor_mark_stale()",
        "CREATE TRIGGER bias_records_monitor AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
        "ON bias_records FOR EACH STATEMENT EXECUTE FUNCTION bias_monitor_mark_stale()",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


def migration_statements(current: int, target: int = SCHEMA_VERSION) -> list[str]:
    """The SQL that brings a schema at version ``current`` to ``target``."""
    if current > SCHEMA_VERSION:
        raise RecordError(
            f"the store's schema is version {current}; this llm-council knows "
            f"1..{SCHEMA_VERSION} (upgrade llm-council)"
        )
    statements = [step for version in range(current, target) for step in MIGRATIONS[version]]
    if statements:
        statements += [
            "DELETE FROM llm_council_schema",
            f"INSERT INTO llm_council_schema VALUES ({target})",
        ]
    return statements


_LOCK_AND_VERSION = (
    f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})",
    "CREATE TABLE IF NOT EXISTS llm_council_schema (version integer NOT NULL)",
)


async def migrate(connection: AsyncConnection[Any], target: int = SCHEMA_VERSION) -> int:
    """Create or migrate the schema to ``target`` in one transaction; return the old version."""
    async with connection.transaction():
        for statement in _LOCK_AND_VERSION:
            await connection.execute(statement)
        cursor = await connection.execute("SELECT max(version) FROM llm_council_schema")
        row = await cursor.fetchone()
        current = int(row[0]) if row and row[0] is not None else 0
        for statement in migration_statements(current, max(target, current)):
            await connection.execute(statement)
    return current


def migrate_store(url: str) -> int:
    """Create or migrate the store at ``url`` to :data:`SCHEMA_VERSION` (the
    ``store-migrate`` command); return the version it had (0: none). Idempotent."""
    check_url(url)

    async def run() -> int:
        async with await AsyncConnection.connect(url, **connect_options(url)) as connection:
            return await migrate(connection)

    try:
        return asyncio.run(run())
    except DriverError as error:
        raise store_error(url, "cannot migrate the record store", error) from None


# read-only, in two statements: a query naming a table that does not exist fails when
# parsed, even in a CASE branch never taken
_HAS_SCHEMA = "SELECT to_regclass('llm_council_schema') IS NOT NULL"
_VERSION = "SELECT max(version) FROM llm_council_schema"
_STORE_ID = "SELECT min(store_id) FROM llm_council_store"


def _too_new(url: str, version: int) -> RecordError:
    return RecordError(
        f"{redact_url(url)}: the store's schema is version {version}; this llm-council "
        f"knows 1..{SCHEMA_VERSION} (upgrade llm-council)"
    )


def require_current(url: str, version: int | None) -> None:
    """Raise a one-line :class:`RecordError` saying to run the migration unless
    ``version`` (``None``: no schema) is the one this llm-council writes."""
    if version is None:
        raise RecordError(
            f"{redact_url(url)}: no llm-council schema in this database: run "
            f"`{MIGRATE_COMMAND}` once, as a role that may create tables"
        )
    if version > SCHEMA_VERSION:
        raise _too_new(url, version)
    if version < SCHEMA_VERSION:
        raise RecordError(
            f"{redact_url(url)}: the store's schema is version {version}, this "
            f"llm-council writes version {SCHEMA_VERSION}: run `{MIGRATE_COMMAND}` "
            "(every replica upgraded first)"
        )


async def require_current_schema(connection: AsyncConnection[Any], url: str) -> str:
    """The store's id, after checking (read-only) that its schema is the one this version
    writes; else a one-line :class:`RecordError` that says to run the migration."""
    async with connection.transaction():
        cursor = await connection.execute(_HAS_SCHEMA)
        row = await cursor.fetchone()
        if row is not None and row[0]:
            cursor = await connection.execute(_VERSION)
            row = await cursor.fetchone()
        else:
            row = None
        version = None if row is None or row[0] is None else int(row[0])
        require_current(url, version)
        cursor = await connection.execute(_STORE_ID)
        row = await cursor.fetchone()
    return str(row[0]) if row and row[0] is not None else ""


def stored_version(connection: Connection[Any], url: str) -> int | None:
    """The store's schema version (read-only), ``None`` for a database without one; a
    version newer than this llm-council knows is a one-line :class:`RecordError`."""
    row = connection.execute(_HAS_SCHEMA).fetchone()
    if row is None or not row[0]:
        return None
    row = connection.execute(_VERSION).fetchone()
    if row is None or row[0] is None:
        return None
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise _too_new(url, version)
    return version


def stored_store_id(connection: Connection[Any]) -> str:
    """The store's id (schema 6), bound into every seal of its summaries."""
    row = connection.execute(_STORE_ID).fetchone()
    return str(row[0]) if row and row[0] is not None else ""
