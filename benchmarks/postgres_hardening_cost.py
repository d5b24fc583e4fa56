"""Benchmark: what schema 6's checks and the profile seals cost (ADR 0056).

1. The server side of one append, records only (the session row and a COPY of its 25
   records, one transaction, one connection, sequential): into a store at schema 5 and one
   at schema 6 (CHECK constraints and the row trigger that reads the session's
   ``n_records``), alternating session by session so that the machine's load hits both.
2. The client side of a seal: HMAC-SHA256 over one five-member session's delta, and its
   verification, per call.

    PYTHONPATH=src .venv/bin/python benchmarks/postgres_hardening_cost.py [--sessions 400]

Starts a throw-away server (tests/fakes/postgres_server.py). Not part of pytest.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg
from psycopg import sql

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))
sys.path.insert(0, str(BENCHMARKS.parent / "tests"))

from postgres_history import session  # noqa: E402

from llm_council.bias_audit.records import postgres_schema, postgres_store  # noqa: E402
from llm_council.bias_audit.records.postgres_profile_seals import (  # noqa: E402
    DELTA_KIND,
    delta_body,
    row_seal,
    seal_verifies,
)
from llm_council.bias_audit.records.reviewer_profiles import (  # noqa: E402
    PROFILE_FORMAT,
    encode_profiles,
    profile_fields,
    records_profiles,
)


def _store_at(url: str, version: int) -> None:
    with psycopg.connect(url) as connection:
        for statement in postgres_schema._LOCK_AND_VERSION:
            connection.execute(statement)
        for statement in postgres_schema.migration_statements(0, target=version):
            connection.execute(statement)


def _append(connection: psycopg.Connection, records: list) -> float:
    """Seconds for one session's row and records, in one transaction."""
    copy_sql = sql.SQL("COPY bias_records ({}) FROM STDIN").format(
        sql.SQL(", ").join(sql.Identifier(name) for name in postgres_store._WRITTEN_COLUMNS)
    )
    started = time.perf_counter()
    with connection.transaction():
        connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, %s)",
            (records[0].session_id, len(records)),
        )
        with connection.cursor().copy(copy_sql) as copy:
            for index, record in enumerate(records):
                copy.write_row(postgres_store._row(index, record, len(records)))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=400)
    args = parser.parse_args()
    from fakes.postgres_server import PostgresServer

    server = PostgresServer.start()
    try:
        urls = {version: server.create_database(f"cost_v{version}") for version in (5, 6)}
        for version, url in urls.items():
            _store_at(url, version)
        times: dict[int, list[float]] = {5: [], 6: []}
        connections = {version: psycopg.connect(url) for version, url in urls.items()}
        for index in range(args.sessions):
            records = session(index)
            for version in (5, 6) if index % 2 else (6, 5):
                times[version].append(_append(connections[version], records))
        for connection in connections.values():
            connection.close()
        for version, samples in times.items():
            print(
                f"append, records only, schema {version}: median "
                f"{statistics.median(samples) * 1e3:.3f} ms, mean "
                f"{statistics.fmean(samples) * 1e3:.3f} ms ({len(samples)} sessions)"
            )
        ratio = statistics.median(times[6]) / statistics.median(times[5])
        print(f"schema 6 / schema 5 (medians): {ratio:.2f}")
    finally:
        server.stop()
    encoded = encode_profiles(records_profiles(profile_fields(session(0))))
    body = delta_body("s0", PROFILE_FORMAT, encoded)
    key = b"k" * 32
    seal = row_seal(key, DELTA_KIND, "store", body)
    for label, call in (
        ("seal one delta", lambda: row_seal(key, DELTA_KIND, "store", body)),
        ("verify one delta", lambda: seal_verifies(key, DELTA_KIND, "store", body, seal)),
    ):
        samples = []
        for _ in range(2000):
            started = time.perf_counter()
            call()
            samples.append(time.perf_counter() - started)
        print(f"{label} (5 members): median {statistics.median(samples) * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
