"""Read a PostgreSQL record store as Arrow batches, for the report (ADR 0020).

A server-side cursor streams the records in batches of ``batch_size`` rows into Arrow
record batches with the JSONL record's columns (:data:`ARROW_SCHEMA`), so memory per batch
is bounded; the report scans the reader straight into DuckDB. :func:`fetch_arrow_table`
collects every batch into one table (tests and small stores only: its memory grows with
the store). A store at any known schema version reads (a column it does not have yet is
null); the schema is only checked, read-only, never created here.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime

import pyarrow as pa
from psycopg import Connection, sql
from psycopg import Error as DriverError

from llm_council.bias_audit.records.postgres_connect import connect_options
from llm_council.bias_audit.records.postgres_errors import check_url
from llm_council.bias_audit.records.postgres_errors import store_error as _store_error
from llm_council.bias_audit.records.postgres_schema import stored_version
from llm_council.bias_audit.records.store_urls import redact_url
from llm_council.errors import RecordError

BATCH_SIZE = 10_000

_CHECK_COLUMNS = ("check_kind", "check_of_position", "check_treated")
_FAMILY_COLUMNS = ("similarity_to_own", "rationale_chars", "review_status")
# the JSONL record columns bias-report reads (report/load/loading.py), plus session_n_records
ARROW_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("session_id", pa.string()),
        ("timestamp", pa.string()),
        ("reviewer_id", pa.string()),
        ("model_id", pa.string()),
        ("position", pa.int32()),
        ("n_candidates", pa.int32()),
        ("response_length_chars", pa.int64()),
        ("response_length_words", pa.int64()),
        ("score_value", pa.float64()),
        ("score_scale", pa.list_(pa.float64())),
        ("rank", pa.int32()),
        ("is_self_review", pa.bool_()),
        ("session_n_records", pa.int32()),
        ("check_kind", pa.string()),
        ("check_of_position", pa.int32()),
        ("check_treated", pa.bool_()),
        ("similarity_to_own", pa.float64()),
        ("rationale_chars", pa.int64()),
        ("review_status", pa.string()),
        ("reviewer_fingerprint", pa.string()),  # schema 7 (ADR 0062), as JSON text
    ]
)


def iter_arrow_batches(
    url: str, *, since: datetime | None = None, batch_size: int = BATCH_SIZE
) -> Iterator[pa.RecordBatch]:
    """The store's records (optionally those since ``since``) as Arrow batches.

    Streams through a server-side cursor, ``batch_size`` rows at a time, in
    ``(session_id, record_index)`` order; columns and types are :data:`ARROW_SCHEMA`.
    """
    check_url(url)
    names = ARROW_SCHEMA.names
    try:
        with Connection.connect(url, **connect_options(url)) as connection:
            version = stored_version(connection, url)
            if version is None:
                raise RecordError(
                    f"{redact_url(url)}: no bias-audit records here (no llm-council schema)"
                )
            added_in = {
                "session_n_records": 2,
                **dict.fromkeys(_CHECK_COLUMNS, 3),
                **dict.fromkeys(_FAMILY_COLUMNS, 4),
                "reviewer_fingerprint": 7,
            }
            columns = [
                sql.SQL("NULL")  # a column the stored schema does not have yet
                if version < added_in.get(name, 0)
                else sql.SQL("{}::text").format(sql.Identifier(name))
                if name == "reviewer_fingerprint"
                else sql.Identifier(name)
                for name in names
            ]
            query = sql.SQL(
                "SELECT {} FROM bias_records {} ORDER BY session_id, record_index"
            ).format(
                sql.SQL(", ").join(columns),
                sql.SQL("WHERE recorded_at >= %s" if since is not None else ""),
            )
            parameters = (since.astimezone(UTC),) if since is not None else None
            with connection.transaction(), connection.cursor(name="llm_council_records") as cursor:
                cursor.itersize = batch_size
                cursor.execute(query, parameters)
                while rows := cursor.fetchmany(batch_size):
                    yield pa.RecordBatch.from_arrays(
                        [
                            pa.array([row[i] for row in rows], type=field.type)
                            for i, field in enumerate(ARROW_SCHEMA)
                        ],
                        schema=ARROW_SCHEMA,
                    )
    except DriverError as error:
        raise _store_error(url, "cannot read the record store", error) from None


def arrow_batch_reader(
    url: str, *, since: datetime | None = None, batch_size: int = BATCH_SIZE
) -> pa.RecordBatchReader:
    """The records as a stream DuckDB can scan (one batch in memory at a time).

    The connection is opened and the schema checked before this returns, so a bad URL,
    a refused connection or an unknown schema raise here, not in the middle of a scan.
    """
    batches = iter_arrow_batches(url, since=since, batch_size=batch_size)
    first = next(batches, None)
    if first is None:
        return pa.RecordBatchReader.from_batches(ARROW_SCHEMA, iter(()))
    return pa.RecordBatchReader.from_batches(ARROW_SCHEMA, itertools.chain([first], batches))


def fetch_arrow_table(url: str, *, since: datetime | None = None) -> pa.Table:
    """All records (optionally since ``since``) as one Arrow table of :data:`ARROW_SCHEMA`."""
    return pa.Table.from_batches(list(iter_arrow_batches(url, since=since)), schema=ARROW_SCHEMA)


__all__ = [
    "ARROW_SCHEMA",
    "BATCH_SIZE",
    "arrow_batch_reader",
    "fetch_arrow_table",
    "iter_arrow_batches",
]
