"""The roles and grants docs/production.md gives, run as written against a real server
(ADR 0056; issue 37 part B, items 2 and 3).

Before: every pool open ran ``CREATE TABLE IF NOT EXISTS llm_council_schema``, so a writer
with exactly the documented grants wrote no records and read no history (it worked only
with ``CREATE ON SCHEMA public``), and a read-only database lost its history too.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from fakes.postgres_sessions import fresh_profiles as _fresh
from fakes.postgres_sessions import write
from llm_council.bias_audit.records.schema import ReviewRecord

psycopg = pytest.importorskip("psycopg")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
profile_rebuild = pytest.importorskip("llm_council.bias_audit.records.postgres_profile_rebuild")
postgres_profiles = pytest.importorskip("llm_council.bias_audit.records.postgres_profiles")

PRODUCTION = Path(__file__).resolve().parents[3] / "docs" / "production.md"


def documented_grants() -> str:
    """The ```sql block under "### Roles and grants" in docs/production.md."""
    text = PRODUCTION.read_text(encoding="utf-8")
    section = text.split("### Roles and grants", 1)[1]
    match = re.search(r"```sql\n(.*?)```", section, re.DOTALL)
    assert match is not None, "docs/production.md lost its grants block"
    return match.group(1)


def _session(index: int, members: int = 4) -> list[ReviewRecord]:
    return [
        ReviewRecord(
            session_id=f"g{index:03d}",
            timestamp="2026-11-27T10:00:00+00:00",
            reviewer_id=f"judge-{reviewer}",
            model_id=f"judge-{candidate}",
            position=(candidate + reviewer + index) % members,
            n_candidates=members,
            response_length_chars=100,
            response_length_words=20,
            score_value=float(3 + (reviewer * 7 + candidate * 3 + index) % 6),
            is_self_review=reviewer == candidate,
            council_config_hash="sha256:roles",
            session_n_records=members * members,
        )
        for reviewer in range(members)
        for candidate in range(members)
    ]


def _roles(store_url: str) -> dict[str, str]:
    """Create the documented roles (with unique names) and run the documented grants as
    written; return each role's URL."""
    suffix = uuid.uuid4().hex[:8]
    database = store_url.rsplit("/", 1)[1]
    names = {role: f"{role}_{suffix}" for role in ("writer", "reader", "importer")}
    block = documented_grants().replace("DATABASE council ", f'DATABASE "{database}" ')
    for role, name in names.items():
        block = block.replace(f"council_{role}", name)
    statements = [
        statement.strip()
        for statement in re.sub(r"--[^\n]*", "", block).split(";")
        if statement.strip()
    ]
    with psycopg.connect(store_url, autocommit=True) as connection:
        for name in names.values():
            connection.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'pw-{name}'")
        for statement in statements:
            connection.execute(statement)
    prefix, rest = store_url.split("://", 1)
    host = rest.split("@", 1)[1]
    return {role: f"{prefix}://{name}:pw-{name}@{host}" for role, name in names.items()}


def _insert_as_importer(url: str, records: list[ReviewRecord], index: int | None = None) -> None:
    """Rows another program writes with INSERT only: the session row (unless ``index``
    is given: then one record at that index, into a session already stored)."""
    with psycopg.connect(url) as connection:
        if index is None:
            connection.execute(
                "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, %s)",
                (records[0].session_id, len(records)),
            )
        for offset, record in enumerate(records):
            connection.execute(
                """INSERT INTO bias_records (session_id, record_index, schema_version,
                       "timestamp", reviewer_id, model_id, position, n_candidates,
                       response_length_chars, response_length_words, score_value,
                       score_scale, is_self_review, council_config_hash, session_n_records)
                   VALUES (%s, %s, 2, %s, %s, %s, %s, %s, 1, 1, %s, %s, %s, 'x', %s)""",
                (
                    record.session_id,
                    offset if index is None else index,
                    record.timestamp,
                    record.reviewer_id,
                    record.model_id,
                    record.position,
                    record.n_candidates,
                    record.score_value,
                    list(record.score_scale),
                    record.is_self_review,
                    record.session_n_records if index is None else index + 1,
                ),
            )


def test_a_writer_with_the_documented_grants_writes_and_reads_history(store_url: str) -> None:
    urls = _roles(store_url)
    no_create = pytest.raises(psycopg.errors.InsufficientPrivilege)  # no CREATE anywhere
    with no_create, psycopg.connect(urls["writer"]) as connection:
        connection.execute("CREATE TABLE IF NOT EXISTS llm_council_schema (v integer)")
    sessions = [_session(index) for index in range(40)]
    assert write(urls["writer"], *sessions) == [16] * 40
    # 40 > COMPACT_EVERY: the writer compacted the deltas into the base once
    with psycopg.connect(store_url) as connection:
        assert connection.execute("SELECT generation FROM bias_profile_state").fetchone() == (1,)
    found = _fresh(urls["writer"])
    assert found is not None and found["judge-0"].sessions == 40

    async def pooled() -> Any:
        return await postgres_store.PostgresWriter.for_url(urls["writer"]).reviewer_profiles()

    assert asyncio.run(pooled()) == found
    # the reader reads the records (bias-report's path) and the history
    assert postgres_store.fetch_arrow_table(urls["reader"]).num_rows == 40 * 16
    assert profile_rebuild.load_postgres_profiles(urls["reader"]) == found


def test_an_importer_marks_history_stale_and_the_writer_rebuilds_it(store_url: str) -> None:
    urls = _roles(store_url)
    write(urls["writer"], *(_session(index) for index in range(3)))
    _insert_as_importer(urls["importer"], _session(3))
    assert _fresh(store_url) is None  # the marker the importer's insert left
    counts = profile_rebuild.RebuildCounts()
    rebuilt = profile_rebuild.rebuild_profiles(urls["writer"], counts)
    assert counts.saved and counts.sessions_folded == 4
    assert rebuilt["judge-0"].sessions == 4 and _fresh(store_url) == rebuilt


def test_an_insert_only_importer_cannot_hide_a_complete_session(store_url: str) -> None:
    urls = _roles(store_url)
    sessions = [_session(index) for index in range(3)]
    write(urls["writer"], *sessions)
    stray = [sessions[1][0]]
    # one extra record of the committed session g001, at 999 or just past its 16
    for index in (999, 16, -1):
        with pytest.raises(psycopg.errors.CheckViolation, match="record_index|index_in_range"):
            _insert_as_importer(urls["importer"], stray, index=index)
    # an update past the session's size is refused too, even with the row's own count gone
    moved = pytest.raises(psycopg.errors.CheckViolation, match="record_index 999 is outside")
    with moved, psycopg.connect(store_url) as connection:
        connection.execute(
            "UPDATE bias_records SET record_index = 999, session_n_records = NULL "
            "WHERE session_id = 'g001' AND record_index = 0"
        )
    table = postgres_store.fetch_arrow_table(store_url)
    assert table.column("session_id").to_pylist().count("g001") == 16
    assert profile_rebuild.load_postgres_profiles(store_url)["judge-0"].sessions == 3


def test_a_read_only_database_still_gives_history(store_url: str) -> None:
    from llm_council.bias_audit.session.postgres_history import postgres_history

    urls = _roles(store_url)
    write(urls["writer"], *(_session(index) for index in range(3)))
    _insert_as_importer(urls["importer"], _session(3))  # stale: the lookup must rebuild
    database = store_url.rsplit("/", 1)[1]
    with psycopg.connect(store_url, autocommit=True) as connection:
        connection.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    postgres_store.PostgresWriter._by_url.clear()
    found = asyncio.run(postgres_history(urls["writer"]))
    assert found["judge-0"].sessions == 4  # computed from the records, not saved
    assert _fresh(store_url) is None
    assert profile_rebuild.load_postgres_profiles(urls["reader"])["judge-0"].sessions == 4
