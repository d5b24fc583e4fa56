"""The PostgreSQL record store against a real server (issue 12, section 2).

The server is Debian's ``postgresql``, started by ``tests/fakes/postgres_server.py`` in a
temp dir as an unprivileged user. With ``CI=true`` a missing server fails these tests; a
local run without it skips them with the reason.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from fakes.postgres_server import PostgresServer
from fakes.postgres_sessions import write
from llm_council.bias_audit.records.stores import open_store, redact_url
from llm_council.errors import RecordError

psycopg = pytest.importorskip("psycopg")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
postgres_schema = pytest.importorskip("llm_council.bias_audit.records.postgres_schema")

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "postgres_writers.py"


def _load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("postgres_writers", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


writers = _load_benchmark()
session_records = writers.session_records


def stored_sessions(url: str) -> dict[str, tuple[int, int]]:
    """session_id -> (declared n_records, records present)."""
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            """SELECT s.session_id, s.n_records, count(r.session_id)
               FROM bias_sessions s LEFT JOIN bias_records r USING (session_id)
               GROUP BY 1, 2"""
        ).fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def test_records_round_trip_to_arrow_with_the_report_columns(store_url: str) -> None:
    from llm_council.bias_audit.report.load.raw_records import REPORT_COLUMNS

    first, second = session_records(0, 0, 3), session_records(0, 1, 2)
    assert write(store_url, first, second) == [9, 4]
    table = postgres_store.fetch_arrow_table(store_url)
    # exactly the JSONL columns the report reads (session_n_records included), same types
    duckdb_to_arrow = {
        "INTEGER": "int32",
        "VARCHAR": "string",
        "BIGINT": "int64",
        "DOUBLE": "double",
        "DOUBLE[]": "list<item: double>",
        "BOOLEAN": "bool",
        "JSON": "string",  # the reviewer's fingerprint as JSON text (ADR 0062)
    }
    assert [(f.name, str(f.type)) for f in table.schema] == [
        *((name, duckdb_to_arrow[kind]) for name, kind in REPORT_COLUMNS.items()),
    ]
    expected = [
        {
            name: (list(value) if name == "score_scale" else value)
            for name, value in record.model_dump().items()
            if name in table.schema.names
        }
        | {"session_n_records": len(records)}
        for records in (first, second)
        for record in records
    ]
    assert table.to_pylist() == expected


def test_duckdb_reads_the_arrow_table_locally(store_url: str) -> None:
    import duckdb

    write(store_url, *(session_records(1, s, 3) for s in range(4)))
    records = postgres_store.fetch_arrow_table(store_url)
    connection = duckdb.connect()
    connection.register("records", records)
    row = connection.execute(
        "SELECT count(*), count(DISTINCT session_id), min(session_n_records) FROM records"
    ).fetchone()
    assert row == (36, 4, 9)


def test_batches_are_streamed_with_bounded_size(store_url: str) -> None:
    write(store_url, *(session_records(2, s, 4) for s in range(5)))  # 80 records
    batches = list(postgres_store.iter_arrow_batches(store_url, batch_size=16))
    assert [batch.num_rows for batch in batches] == [16] * 5


def test_since_keeps_records_at_or_after_the_cutoff(store_url: str) -> None:
    old = [
        r.model_copy(update={"timestamp": "2026-01-01T00:00:00+00:00"})
        for r in session_records(3, 0, 2)
    ]
    new = [
        r.model_copy(update={"timestamp": "2026-06-01T12:00:00+02:00"})
        for r in session_records(3, 1, 2)
    ]
    write(store_url, old, new)
    table = postgres_store.fetch_arrow_table(store_url, since=datetime(2026, 6, 1, 10, tzinfo=UTC))
    assert set(table.column("session_id").to_pylist()) == {"w3-s1"}


def test_a_retried_session_is_not_duplicated_even_when_retries_race(store_url: str) -> None:
    records = session_records(4, 0, 5)
    assert write(store_url, records, records) == [25, 0]

    async def racing_retries() -> list[int]:
        store = open_store(store_url)
        other = session_records(4, 1, 5)
        return list(await asyncio.gather(*(store.write_session(other) for _ in range(10))))

    added = asyncio.run(racing_retries())
    assert sorted(added) == [0] * 9 + [25]
    assert stored_sessions(store_url) == {"w4-s0": (25, 25), "w4-s1": (25, 25)}


def test_schema_is_migrated_from_version_1(empty_database_url: str) -> None:
    store_url = empty_database_url
    # a store created by an llm-council that knew only schema version 1
    with psycopg.connect(store_url) as connection:
        for statement in postgres_schema._LOCK_AND_VERSION:
            connection.execute(statement)
        for statement in postgres_store.migration_statements(0, target=1):
            connection.execute(statement)
        connection.execute("INSERT INTO bias_sessions (session_id, n_records) VALUES ('v1', 1)")
        connection.execute(
            """INSERT INTO bias_records (session_id, record_index, schema_version, "timestamp",
                   reviewer_id, model_id, position, n_candidates, response_length_chars,
                   response_length_words, score_value, score_scale, rank, is_self_review,
                   council_config_hash)
               VALUES ('v1', 0, 1, '2026-01-01T00:00:00+00:00', 'r', 'm', 0, 1, 10, 2, 5.0,
                       '{1,10}', 1, false, 'sha256:x')"""
        )
    with pytest.raises(psycopg.errors.UndefinedColumn), psycopg.connect(store_url) as connection:
        connection.execute("SELECT session_n_records FROM bias_records")
    # the v1 store reads (session_n_records null) before any migration...
    before = postgres_store.fetch_arrow_table(store_url)
    assert before.column("session_n_records").to_pylist() == [None]
    assert before.column("check_kind").to_pylist() == [None]
    assert before.column("review_status").to_pylist() == [None]
    # ...a writer refuses it, read-only, and says what to run (ADR 0056)...
    with pytest.raises(RecordError, match=r"schema is version 1, .* run `llm-council store-mig"):
        write(store_url, session_records(5, 0, 2))
    with psycopg.connect(store_url) as connection:
        versions = connection.execute("SELECT version FROM llm_council_schema").fetchall()
    assert versions == [(1,)]
    # ...and the migration brings it to the current version, keeping the old row
    postgres_store.PostgresWriter._by_url.clear()
    assert postgres_schema.migrate_store(store_url) == 1
    assert postgres_schema.migrate_store(store_url) == 8  # idempotent
    assert write(store_url, session_records(5, 0, 2)) == [4]
    with psycopg.connect(store_url) as connection:
        versions = connection.execute("SELECT version FROM llm_council_schema").fetchall()
    assert versions == [(postgres_store.SCHEMA_VERSION,)] and postgres_store.SCHEMA_VERSION == 8
    table = postgres_store.fetch_arrow_table(store_url)
    assert table.column("session_id").to_pylist() == ["v1"] + ["w5-s0"] * 4
    assert table.column("session_n_records").to_pylist() == [None, 4, 4, 4, 4]


def test_a_newer_schema_is_refused_not_guessed(store_url: str) -> None:
    write(store_url, session_records(6, 0, 1))
    with psycopg.connect(store_url) as connection:
        connection.execute("UPDATE llm_council_schema SET version = 99")
    with pytest.raises(RecordError, match=r"schema is version 99; this llm-council knows 1\.\.8"):
        postgres_store.fetch_arrow_table(store_url)
    postgres_store.PostgresWriter._by_url.clear()  # a fresh process would migrate again
    with pytest.raises(RecordError, match="schema is version 99"):
        write(store_url, session_records(6, 1, 1))


@pytest.mark.parametrize(
    ("make_url", "expected"),
    [
        (lambda s: s.url.replace(s.password, "Wr0ng-Pa55word"), "password authentication failed"),
        (
            lambda s: s.url.replace(s.password, "Wr0ng-Pa55word") + "?bogus=1",
            "not a valid PostgreSQL URL",
        ),
        (
            lambda s: s.url.replace(s.password, "Wr0ng-Pa55word").replace(str(s.port), "1"),
            "cannot open the record store",
        ),
    ],
)
def test_a_bad_url_is_a_one_line_error_without_the_password(
    postgres_server: PostgresServer, make_url: Any, expected: str
) -> None:
    url = make_url(postgres_server)
    with pytest.raises(RecordError) as raised:
        write(url, session_records(7, 0, 1))
    message = str(raised.value)
    assert expected in message and "\n" not in message
    assert "Wr0ng-Pa55word" not in message and postgres_server.password not in message
    assert message.startswith(redact_url(url) + ": ")
    assert ":***@" in message
    with pytest.raises(RecordError) as raised:
        postgres_store.fetch_arrow_table(url)
    assert "Wr0ng-Pa55word" not in str(raised.value)


def test_redact_url_hides_passwords_in_userinfo_and_query() -> None:
    assert redact_url("postgresql://u:p%40ss@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact_url("postgres://h/db?password=s3&sslmode=require") == (
        "postgres://h/db?password=***&sslmode=require"
    )
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


def test_the_middleware_writes_a_council_session_to_postgres(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", store_url)
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(5)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    result = asyncio.run(run_full_council("q?", config=config, seed=1))
    audit = result.metadata["bias_audit"]
    assert audit["records_written"] == 25 and "record_store_error" not in audit
    assert list(stored_sessions(store_url).values()) == [(25, 25)]
    assert store_url not in json.dumps(result.metadata)  # the URL (with its password) stays out


def test_a_bad_password_in_the_store_url_keeps_the_statistics_and_hides_it(
    postgres_server: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    url = postgres_server.url.replace(postgres_server.password, "Wr0ng-Pa55word")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", url)
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(3)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    result = asyncio.run(run_full_council("q?", config=config, seed=1))
    audit = result.metadata["bias_audit"]
    assert audit["records_written"] == 0
    assert "password authentication failed" in audit["record_store_error"]
    assert "Wr0ng-Pa55word" not in json.dumps(result.metadata)


KILLABLE_WRITER = """
import asyncio, sys
sys.path.insert(0, {benchmarks!r})
from concurrent_writers import session_records
from llm_council.bias_audit.records.postgres_store import PostgresWriter

async def main():
    store = PostgresWriter.for_url({url!r})
    session = 0
    while True:  # 20-member sessions: 400 records per transaction
        await store.write_session(session_records({writer}, session, 20))
        session += 1

asyncio.run(main())
"""


def _open_transactions(url: str, application: str) -> int:
    with psycopg.connect(url) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
            "AND xact_start IS NOT NULL AND state <> 'idle'",
            (application,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_writer_killed_mid_transaction_loses_only_that_session(store_url: str) -> None:
    write(store_url, session_records(8, 0, 1))  # schema in place before the writers start
    committed: dict[int, int] = {}
    for writer in range(100, 102):
        application = f"killme{writer}"
        url = f"{store_url}?application_name={application}"
        code = KILLABLE_WRITER.format(benchmarks=str(BENCHMARK.parent), url=url, writer=writer)
        process = subprocess.Popen([sys.executable, "-c", code])
        try:
            deadline = time.monotonic() + 60
            # let it commit a few sessions, then catch it inside a transaction
            while time.monotonic() < deadline:
                done = sum(1 for s in stored_sessions(store_url) if s.startswith(f"w{writer}-"))
                if done >= 2 and _open_transactions(store_url, application):
                    break
                time.sleep(0.005)
            else:
                pytest.fail(f"writer {writer} never reached a transaction")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
        assert process.returncode == -signal.SIGKILL
        committed[writer] = sum(
            1 for s in stored_sessions(store_url) if s.startswith(f"w{writer}-")
        )
    sessions = stored_sessions(store_url)
    # every stored session is complete, and each writer's are exactly its first k
    assert all(declared == present for declared, present in sessions.values())
    for writer, k in committed.items():
        mine = {s for s in sessions if s.startswith(f"w{writer}-")}
        assert mine == {f"w{writer}-s{s}" for s in range(k)}


def _check_concurrent_writers(url: str, processes: int, sessions: int) -> None:
    _, added = writers.run(url, processes, sessions, members=4)
    counts = writers.verify(url, processes, sessions, members=4)
    assert counts == {
        "expected_sessions": processes * sessions,
        "sessions": processes * sessions,
        "missing": 0,
        "unexpected": 0,
        "wrong_record_count": 0,
        "records": processes * sessions * 16,
    }
    assert added == processes * sessions * 16  # retries added nothing


def test_eight_processes_write_concurrently_each_session_exactly_once(store_url: str) -> None:
    _check_concurrent_writers(store_url, processes=8, sessions=60)


@pytest.mark.slow
def test_eight_processes_by_a_thousand_sessions(store_url: str) -> None:
    _check_concurrent_writers(store_url, processes=8, sessions=1000)


HOSTILE_IDS = [
    "tab\there",
    "new\nline",
    "back\\slash\\N",
    "quote'\"; DROP TABLE bias_records; --",
    "\\.",
    "emoji 🧑‍⚖️ and RTL \u202e",
    "x" * 5000,
]


def test_hostile_ids_round_trip_unchanged(store_url: str) -> None:
    records = [
        r.model_copy(update={"reviewer_id": hostile, "model_id": hostile[::-1]})
        for r, hostile in zip(session_records(9, 0, 3), HOSTILE_IDS, strict=False)
    ]
    assert write(store_url, records) == [len(records)]
    table = postgres_store.fetch_arrow_table(store_url)
    assert table.column("reviewer_id").to_pylist() == HOSTILE_IDS
    assert table.column("model_id").to_pylist() == [h[::-1] for h in HOSTILE_IDS]


def test_a_nul_character_fails_the_whole_session_with_one_line(store_url: str) -> None:
    records = session_records(9, 1, 2)
    records[1] = records[1].model_copy(update={"reviewer_id": "nul\x00byte"})
    with pytest.raises(RecordError) as raised:
        write(store_url, records)
    assert "cannot write records" in str(raised.value) and "\n" not in str(raised.value)
    with psycopg.connect(store_url) as connection:  # nothing of that session was kept
        assert connection.execute("SELECT count(*) FROM bias_records").fetchone() == (0,)
        assert connection.execute("SELECT count(*) FROM bias_sessions").fetchone() == (0,)
