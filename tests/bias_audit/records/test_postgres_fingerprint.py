"""Schema 7: the reviewer's fingerprint in the PostgreSQL store (ADR 0062), against a real
server (skipped locally without one, like the other PostgreSQL tests)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llm_council.bias_audit.records.schema import ReviewerFingerprint, ReviewRecord
from llm_council.bias_audit.records.stores import open_store
from llm_council.errors import RecordError

psycopg = pytest.importorskip("psycopg")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
postgres_schema = pytest.importorskip("llm_council.bias_audit.records.postgres_schema")

FINGERPRINT = {
    "provider": "openai",
    "model": "gpt-4o-2024-08-06",
    "prompt_sha256": "a" * 64,
    "rubric_sha256": "b" * 64,
    "temperature": 0.5,
    "scale": [1.0, 10.0],
    "options_sha256": "c" * 64,
}


def _session(session_id: str, fingerprint: dict[str, Any] | None) -> list[ReviewRecord]:
    members = ("a", "b", "c")
    records = []
    for reviewer in members:
        for position, candidate in enumerate(members):
            records.append(
                ReviewRecord(
                    session_id=session_id,
                    timestamp="2026-01-05T00:00:00+00:00",
                    reviewer_id=reviewer,
                    model_id=candidate,
                    position=position,
                    n_candidates=3,
                    response_length_chars=100,
                    response_length_words=20,
                    score_value=float(5 + position),
                    is_self_review=reviewer == candidate,
                    council_config_hash="h",
                    session_n_records=9,
                    reviewer_fingerprint=None
                    if fingerprint is None
                    else ReviewerFingerprint(**fingerprint),
                )
            )
    return records


def _write(url: str, records: list[ReviewRecord]) -> int:
    async def main() -> int:
        return await open_store(url).write_session(records)

    postgres_store.PostgresWriter._by_url.clear()
    return asyncio.run(main())


def test_the_fingerprint_round_trips_as_json_text(store_url: str) -> None:
    assert _write(store_url, _session("s1", FINGERPRINT)) == 9
    assert _write(store_url, _session("s0", None)) == 9
    table = postgres_store.fetch_arrow_table(store_url)
    texts = table.column("reviewer_fingerprint").to_pylist()
    assert texts[:9] == [None] * 9  # s0 first: ordered by session_id
    assert all(json.loads(text) == FINGERPRINT for text in texts[9:])


def test_a_schema_6_store_reads_without_fingerprints_and_migrates(empty_database_url: str) -> None:
    url = empty_database_url

    async def to_six() -> None:
        async with await psycopg.AsyncConnection.connect(url) as connection:
            await postgres_schema.migrate(connection, target=6)

    asyncio.run(to_six())
    with pytest.raises(RecordError, match=r"schema is version 6, .* store-migrate"):
        _write(url, _session("s1", FINGERPRINT))
    with psycopg.connect(url, autocommit=True) as connection:  # a row a schema-6 writer left
        connection.execute("INSERT INTO bias_sessions VALUES ('old', 1)")
        connection.execute(
            'INSERT INTO bias_records (session_id, record_index, schema_version, "timestamp",'
            " reviewer_id, model_id, position, n_candidates, response_length_chars,"
            " response_length_words, score_value, score_scale, is_self_review,"
            " council_config_hash, session_n_records) VALUES ('old', 0, 2,"
            " '2026-01-01T00:00:00+00:00', 'a', 'b', 0, 2, 10, 2, 5, '{1,10}', false, 'h', 1)"
        )
    old = postgres_store.fetch_arrow_table(url)
    assert old.column("reviewer_fingerprint").to_pylist() == [None]  # no column yet: NULL
    assert postgres_schema.migrate_store(url) == 6
    assert _write(url, _session("s1", FINGERPRINT)) == 9
    table = postgres_store.fetch_arrow_table(url)
    assert table.column("reviewer_fingerprint").to_pylist()[0] is None  # the old row


def test_the_schema_refuses_an_oversize_or_non_object_fingerprint(store_url: str) -> None:
    assert _write(store_url, _session("s1", FINGERPRINT)) == 9
    with psycopg.connect(store_url, autocommit=True) as connection:
        for value in (json.dumps({"model": "x" * 3000}), json.dumps("a string")):
            with pytest.raises(psycopg.errors.CheckViolation):
                connection.execute(
                    "UPDATE bias_records SET reviewer_fingerprint = %s::jsonb "
                    "WHERE session_id = 's1' AND record_index = 0",
                    (value,),
                )


def test_bias_report_splits_a_postgres_store_by_fingerprint(store_url: str) -> None:
    from llm_council.bias_audit.report.build import build_report

    newer = {**FINGERPRINT, "model": "gpt-4o-2024-11-20"}
    for index in range(8):
        fingerprint = FINGERPRINT if index < 4 else newer
        records = [
            record.model_copy(update={"timestamp": f"2026-01-0{index + 1}T00:00:00+00:00"})
            for record in _session(f"s{index}", fingerprint)
        ]
        assert _write(store_url, records) == 9
    section = build_report(store_url, n_resamples=20).fingerprints
    assert section is not None and len(section.reviewers) == 3
    change = section.reviewers[0].changes[0]
    assert [(c.component, c.after) for c in change.components] == [("model", "gpt-4o-2024-11-20")]
