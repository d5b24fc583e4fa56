"""Benchmark: several processes writing sessions to one PostgreSQL record store at once.

Each of ``--processes`` writer processes runs one event loop that writes ``--sessions``
audited sessions (``--members`` x ``--members`` records each) through
:class:`~llm_council.bias_audit.records.postgres_store.PostgresWriter`, ``--concurrency`` sessions
in flight at a time (concurrent councils sharing the pool); every ``--retry-every``-th
session is written twice, as a retried write would. Then the store is checked: every
session exactly once, each with all its records. Exits non-zero on any mismatch.

    .venv/bin/python benchmarks/postgres_writers.py [--url postgresql://...] \
        [--processes 8] [--sessions 1000] [--members 4]

Without ``--url`` it starts a throw-away server (tests/fakes/postgres_server.py).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHMARKS))

from concurrent_writers import session_records  # noqa: E402


async def write_sessions(
    url: str, writer: int, sessions: int, members: int, concurrency: int, retry_every: int
) -> int:
    """Write this writer's sessions, ``concurrency`` at a time; return records added."""
    from llm_council.bias_audit.records.postgres_store import PostgresWriter

    store = PostgresWriter.for_url(url)
    gate = asyncio.Semaphore(concurrency)

    async def one(session: int) -> int:
        async with gate:
            records = session_records(writer, session, members)
            added = await store.write_session(records)
            if retry_every and session % retry_every == 0:
                added += await store.write_session(records)  # a retry adds nothing
            return added

    added = await asyncio.gather(*(one(session) for session in range(sessions)))
    await store.aclose()
    return sum(added)


def _writer_main(argv: list[str]) -> None:
    url, writer, sessions, members, concurrency, retry_every = argv
    added = asyncio.run(
        write_sessions(
            url, int(writer), int(sessions), int(members), int(concurrency), int(retry_every)
        )
    )
    print(added)


def run(
    url: str,
    processes: int,
    sessions: int,
    members: int,
    concurrency: int = 8,
    retry_every: int = 10,
) -> tuple[float, int]:
    """Start the writer processes together; return (wall time, records they report adding)."""
    started = time.perf_counter()
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--writer",
                url,
                str(writer),
                str(sessions),
                str(members),
                str(concurrency),
                str(retry_every),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for writer in range(processes)
    ]
    outputs = [child.communicate()[0] for child in children]
    wall = time.perf_counter() - started
    if any(child.returncode != 0 for child in children):
        raise SystemExit(f"a writer failed: exit codes {[c.returncode for c in children]}")
    return wall, sum(int(output.strip()) for output in outputs)


def verify(url: str, processes: int, sessions: int, members: int) -> dict[str, int]:
    """Sessions expected, present, missing, unexpected, and sessions whose records != n."""
    import psycopg

    with psycopg.connect(url) as connection:
        rows: list[Any] = connection.execute(
            """SELECT s.session_id, s.n_records, count(r.session_id)
               FROM bias_sessions s LEFT JOIN bias_records r USING (session_id)
               GROUP BY s.session_id, s.n_records"""
        ).fetchall()
        total = connection.execute("SELECT count(*) FROM bias_records").fetchone()
    expected = {f"w{w}-s{s}" for w in range(processes) for s in range(sessions)}
    present = {row[0] for row in rows}
    return {
        "expected_sessions": len(expected),
        "sessions": len(rows),
        "missing": len(expected - present),
        "unexpected": len(present - expected),
        "wrong_record_count": sum(
            1 for _, n, found in rows if n != found or found != members * members
        ),
        "records": int(total[0]) if total else 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--url", help="postgresql://... (default: start a throw-away server)")
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per process")
    parser.add_argument("--members", type=int, default=4, help="records per session = members^2")
    parser.add_argument("--concurrency", type=int, default=8, help="sessions in flight per process")
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(BENCHMARKS.parent / "tests"))
        from fakes.postgres_server import PostgresServer

        server = PostgresServer.start()
        url = server.create_database("benchmark")
    from llm_council.bias_audit.records.postgres_schema import migrate_store

    migrate_store(url)  # what `llm-council store-migrate` does once (idempotent)
    try:
        wall, added = run(url, args.processes, args.sessions, args.members, args.concurrency)
        counts = verify(url, args.processes, args.sessions, args.members)
    finally:
        if server is not None:
            server.stop()
    sessions = args.processes * args.sessions
    print(
        f"processes={args.processes} sessions/process={args.sessions} "
        f"records/session={args.members**2} in flight/process={args.concurrency}"
    )
    print(
        f"wall time: {wall:.1f} s ({sessions / wall:.0f} sessions/s, {added / wall:.0f} records/s)"
    )
    print(", ".join(f"{name}={value}" for name, value in counts.items()))
    ok = (
        counts["sessions"] == counts["expected_sessions"]
        and counts["missing"] == counts["unexpected"] == counts["wrong_record_count"] == 0
        and counts["records"] == added == sessions * args.members**2
    )
    print("OK: every session exactly once, each complete" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        _writer_main(sys.argv[2:])
        sys.exit(0)
    sys.exit(main())
