"""`bias-report --store postgresql://...` against a real PostgreSQL server, end to end.

The loader's own tests (test_postgres_source.py) use a stand-in for the driver module; this
one writes through the real PostgreSQL writer and reads through the real reader.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bias_audit.report.report_numbers import assert_same_numbers
from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.stores import open_store
from llm_council.bias_audit.report import build_report, render_json

pytest.importorskip("psycopg")


def test_the_report_from_the_server_equals_the_report_from_the_jsonl_file(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = CouncilSpec(n_members=4, leniency=[-1.5, 0, 0, 0], missing_score_rate=0.05)
    sessions = [
        [ReviewRecord.model_validate(record) for record in session.records()]
        for session in generate_sessions(spec, 40, seed=12)
    ]
    jsonl = tmp_path / "records.jsonl"
    for records in sessions:
        append_records(jsonl, records)

    async def write_all() -> list[int]:
        store = open_store(store_url)
        return [await store.write_session(records) for records in sessions]

    assert sum(asyncio.run(write_all())) == sum(len(records) for records in sessions)

    from_postgres = json.loads(render_json(build_report(store_url, since="2000-01-01")))
    from_file = json.loads(render_json(build_report(jsonl, since="2000-01-01")))
    assert assert_same_numbers(from_file, from_postgres) > 50
    assert from_postgres["store"].startswith("postgresql://")
    password = urlsplit(store_url).password
    assert password and password not in json.dumps(from_postgres)
    # a large store's sections in session blocks (ADR 0092): the same numbers
    from llm_council.bias_audit.report.analyses import session_chunks

    monkeypatch.setattr(session_chunks, "CHUNKED_ABOVE_RECORDS", 0)
    monkeypatch.setattr(session_chunks, "CHUNK_RECORDS", 150)
    in_blocks = json.loads(render_json(build_report(store_url, since="2000-01-01")))
    assert assert_same_numbers(in_blocks, from_postgres) > 50


def test_check_reviews_round_trip_and_stay_out_of_the_observational_tables(
    store_url: str, tmp_path: Path
) -> None:
    """A live bias check's records (ADR 0024) keep their ``check_kind`` through PostgreSQL,
    count toward their session's completeness, and never reach ``records``."""
    spec = CouncilSpec(n_members=4)
    sessions = []
    for session in generate_sessions(spec, 12, seed=13):
        records = session.records()
        repeats = [
            {**record, "check_kind": "repeat", "check_of_position": record["position"]}
            for record in records
            if record["reviewer_id"] == "judge-0"
        ]
        sessions.append([ReviewRecord.model_validate(r) for r in [*records, *repeats]])
    jsonl = tmp_path / "records.jsonl"
    for records in sessions:
        append_records(jsonl, records)

    async def write_all() -> list[int]:
        store = open_store(store_url)
        return [await store.write_session(records) for records in sessions]

    asyncio.run(write_all())
    for source in (store_url, jsonl):
        report = json.loads(render_json(build_report(source, since="2000-01-01")))
        assert report["n_records"] == 12 * 16  # the check lines are not observations
        assert report["n_sessions"] == 12 and report["n_incomplete_sessions"] == 0
        assert report["causal_checks"] is not None
