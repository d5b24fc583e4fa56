"""Benchmark: reviewer history in a PostgreSQL store (ADR 0048): appends, lookups, rebuild.

In one run, on one server:

1. append throughput of ``--sessions`` five-member sessions (25 records each),
   ``--concurrency`` in flight over one pool, into two fresh databases: records only (schema
   4's write: the session row and a COPY, no trigger, no fold) and the current writer (the
   trigger's marker, the session's sums computed in a worker thread, the delta inserted in a
   savepoint, a compaction every 32 deltas); side by side, alternating in ``--rounds``;
2. the lookup a session pays over the writer's pool (one query: state, base, deltas),
   median and 95th percentile over ``--repeats`` appends: right after an append (the
   usual case: one new delta onto the process's cached result), again with nothing new,
   and without a cached result (a new process: the base and 0-31 pending deltas);
3. the same lookup from ``load_postgres_profiles`` (``run_bias_audit(history=url)``: a new
   connection each call);
4. a rebuild from the records after the store is marked stale (what the in-session
   threshold ``REBUILD_IN_SESSION_MAX_SESSIONS`` is set from).

    PYTHONPATH=src .venv/bin/python benchmarks/postgres_history.py [--url postgresql://...]
        [--sessions 2000] [--concurrency 8] [--repeats 300] [--rounds 2]

Without ``--url`` it starts a throw-away server (tests/fakes/postgres_server.py); with one,
it creates and drops databases ``bench_history_*`` there. Not part of pytest.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql

from llm_council.bias_audit.records import postgres_profiles, postgres_store
from llm_council.bias_audit.records.postgres_profile_rebuild import (
    load_postgres_profiles,
    rebuild_profiles,
)
from llm_council.bias_audit.records.postgres_store import PostgresWriter
from llm_council.bias_audit.records.schema import ReviewRecord

BENCHMARKS = Path(__file__).resolve().parent


def session(index: int, members: int = 5, seed: int = 1) -> list[ReviewRecord]:
    """One five-member session: every reviewer scores every answer in its own order."""
    rng = np.random.default_rng([seed, index])
    quality = rng.normal(6.0, 1.5, members)
    records = []
    for reviewer in range(members):
        order = rng.permutation(members)
        for slot, candidate in enumerate(order):
            score = float(np.clip(np.round(quality[candidate] + rng.normal(0, 1.0)), 1, 10))
            records.append(
                ReviewRecord(
                    session_id=f"bench-{seed}-{index}",
                    timestamp="2026-11-27T00:00:00+00:00",
                    reviewer_id=f"judge-{reviewer}",
                    model_id=f"judge-{candidate}",
                    position=slot,
                    n_candidates=members,
                    response_length_chars=400,
                    response_length_words=80,
                    score_value=score,
                    rank=slot + 1,
                    is_self_review=reviewer == int(candidate),
                    council_config_hash="sha256:bench",
                    session_n_records=members * members,
                )
            )
    return records


async def _records_only(pool: Any, records: list[ReviewRecord]) -> None:
    """Schema 4's write: what an append cost before the profiles (no trigger, no fold)."""
    n_records = len(records)
    async with pool.connection() as connection, connection.transaction():
        await connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, %s) "
            "ON CONFLICT (session_id) DO NOTHING",
            (records[0].session_id, n_records),
        )
        copy_sql = sql.SQL("COPY bias_records ({}) FROM STDIN").format(
            sql.SQL(", ").join(sql.Identifier(name) for name in postgres_store._WRITTEN_COLUMNS)
        )
        async with connection.cursor().copy(copy_sql) as copy:
            for index, record in enumerate(records):
                await copy.write_row(postgres_store._row(index, record, n_records))


async def _append_all(
    url: str, sessions: list[list[ReviewRecord]], concurrency: int, fold: bool
) -> float:
    """Seconds to append ``sessions``, ``concurrency`` at a time over one pool."""
    from psycopg_pool import AsyncConnectionPool

    gate = asyncio.Semaphore(concurrency)
    if fold:
        async with await psycopg.AsyncConnection.connect(url) as connection:
            await postgres_store.migrate(connection)  # what `llm-council store-migrate` does
        writer = PostgresWriter(url)

        async def one(records: list[ReviewRecord]) -> None:
            async with gate:
                await writer.write_session(records)

        await writer.write_session(sessions[0])  # open the pool before timing
        started = time.perf_counter()
        await asyncio.gather(*(one(records) for records in sessions[1:]))
        elapsed = time.perf_counter() - started
        await writer.aclose()
        return elapsed
    async with await psycopg.AsyncConnection.connect(url) as connection:
        await postgres_store.migrate(connection, target=4)
    async with AsyncConnectionPool(
        url, min_size=1, max_size=postgres_store.POOL_MAX_SIZE, open=False
    ) as pool:
        await _records_only(pool, sessions[0])

        async def plain(records: list[ReviewRecord]) -> None:
            async with gate:
                await _records_only(pool, records)

        started = time.perf_counter()
        await asyncio.gather(*(plain(records) for records in sessions[1:]))
        return time.perf_counter() - started


def _quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"median {statistics.median(ordered) * 1e3:.3f} ms, p95 {p95 * 1e3:.3f} ms"


async def _lookups(url: str, sessions: int, repeats: int) -> dict[str, list[float]]:
    """Pooled lookup times: right after an append (the usual case: a new delta to fetch
    and merge onto the cached result), again with nothing new, and with no cached result
    (a new process: the base and every pending delta)."""
    writer = PostgresWriter.for_url(url)
    await writer.write_session(session(sessions, seed=9))  # open the pool
    pool = await writer._pool()
    labels = ("after an append", "nothing new", "no cache", "floor: SELECT 1 over the pool")
    times: dict[str, list[float]] = {label: [] for label in labels}
    for extra in range(repeats):
        await writer.write_session(session(sessions + 1 + extra, seed=9))
        for label in labels:
            if label == "no cache":
                postgres_profiles._SUMMARIES.clear()
            started = time.perf_counter()
            if label.startswith("floor"):
                async with pool.connection() as connection:
                    await (await connection.execute("SELECT 1")).fetchone()
            else:
                profiles = await writer.reviewer_profiles()
                assert profiles is not None, "the summary went stale during the benchmark"
            times[label].append(time.perf_counter() - started)
    await writer.aclose()
    return times


def _fresh_database(server_url: str, name: str) -> str:
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    parts = server_url.rsplit("/", 1)
    return f"{parts[0]}/{name}"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="postgresql://... (default: start a throw-away server)")
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=320)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(BENCHMARKS.parent / "tests"))
        from fakes.postgres_server import PostgresServer

        server = PostgresServer.start()
        url = server.url
    try:
        sessions = [session(index) for index in range(args.sessions)]
        print(f"{args.sessions} sessions of 25 records, {args.concurrency} in flight over one pool")
        rates: dict[str, list[float]] = {"records only": [], "records + profiles": []}
        for round_ in range(args.rounds):
            for fold, label in ((False, "records only"), (True, "records + profiles")):
                database = _fresh_database(url, f"bench_history_{int(fold)}_{round_}")
                elapsed = asyncio.run(_append_all(database, sessions, args.concurrency, fold))
                rates[label].append((len(sessions) - 1) / elapsed)
        for label, values in rates.items():
            print(
                f"append, {label}: {statistics.median(values):.0f} sessions/s "
                f"({1e3 / statistics.median(values):.2f} ms a session; rounds: "
                f"{', '.join(f'{v:.0f}' for v in values)})"
            )
        store = _fresh_database(url, "bench_history_1_0")
        asyncio.run(_append_all(store, sessions, args.concurrency, True))
        times = asyncio.run(_lookups(store, args.sessions, args.repeats))
        for label, samples in times.items():
            print(f"lookup over the pool, {label}: {_quantiles(samples)}")
        samples = []
        for _ in range(20):
            started = time.perf_counter()
            load_postgres_profiles(store)
            samples.append(time.perf_counter() - started)
        print(f"load_postgres_profiles (new connection each call): {_quantiles(samples)}")
        with psycopg.connect(store) as connection:  # a statement on the records: a marker
            connection.execute("UPDATE bias_sessions SET n_records = n_records WHERE false")
        started = time.perf_counter()
        profiles = rebuild_profiles(store)
        elapsed = time.perf_counter() - started
        stored = len(sessions) + 1 + args.repeats
        print(
            f"rebuild from the records: {elapsed:.2f} s for {stored} sessions "
            f"({elapsed / stored * 1e3:.2f} ms a session, {len(profiles)} reviewers)"
        )
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
