"""Records with null score AND null rank (refused, failed reviews) and the ADR 0027 fields
through every store: JSONL, Parquet (compaction) and PostgreSQL give the same report.

The Spark engine reads the same Parquet store; it does not carry ``rationale_chars`` or
``review_status`` (its sections are empty), which test_spark_engine.py covers when pyspark
is installed.
"""

from __future__ import annotations

import asyncio
import json
from itertools import groupby
from pathlib import Path

import pytest

from bias_audit.report.report_numbers import assert_same_numbers
from generators.independent_council import CouncilSpec
from generators.reasoning_council import ReasoningSpec, reasoning_records
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.stores import open_store
from llm_council.bias_audit.report import build_report, render_json
from llm_council.bias_audit.report.load.parquet_compaction import compact_store

SPEC = ReasoningSpec(
    council=CouncilSpec(n_members=4, missing_score_rate=0.05, missing_review_rate=0.2),
    reasoning_bias=[0.0, 0.7, 0.0, 0.0],
    mismatch_probability=[0.0, 0.0, 0.5, 0.0],
    abstention_probability=[0.3, 0.0, 0.0, 0.0],
)


def _sessions(n_sessions: int, seed: int) -> list[list[ReviewRecord]]:
    records, _truth = reasoning_records(SPEC, n_sessions, seed)
    return [
        [ReviewRecord.model_validate(record) for record in group]
        for _, group in groupby(records, key=lambda record: record["session_id"])
    ]


def _jsonl(tmp_path: Path, sessions: list[list[ReviewRecord]]) -> Path:
    path = tmp_path / "records.jsonl"
    for records in sessions:
        append_records(path, records)
    return path


def test_null_score_and_rank_records_read_alike_from_jsonl_and_parquet(tmp_path: Path) -> None:
    sessions = _sessions(80, seed=31)
    nulls = [r for s in sessions for r in s if r.score_value is None and r.rank is None]
    assert {r.review_status for r in nulls} >= {"refused", "error"}
    jsonl = _jsonl(tmp_path, sessions)
    compact_store(jsonl, tmp_path / "pq")
    from_jsonl = json.loads(render_json(build_report(jsonl, n_resamples=20)))
    from_parquet = json.loads(render_json(build_report(tmp_path / "pq", n_resamples=20)))
    assert assert_same_numbers(from_jsonl, from_parquet) > 100
    outcomes = {item["reviewer"]: item for item in from_jsonl["families"]["parse_outcomes"]}
    assert outcomes["judge-0"]["status_counts"]["refused"] > 0
    assert outcomes["judge-2"]["n_discordant_pairs"] > 0
    assert {item["reviewer"] for item in from_jsonl["families"]["reasoning"]} == {
        f"judge-{i}" for i in range(4)
    }


def test_null_score_and_rank_records_round_trip_through_postgresql(
    store_url: str, tmp_path: Path
) -> None:
    pytest.importorskip("psycopg")
    sessions = _sessions(30, seed=32)
    jsonl = _jsonl(tmp_path, sessions)

    async def write_all() -> list[int]:
        store = open_store(store_url)
        return [await store.write_session(records) for records in sessions]

    assert sum(asyncio.run(write_all())) == sum(len(records) for records in sessions)
    from_postgres = json.loads(
        render_json(build_report(store_url, since="2000-01-01", n_resamples=20))
    )
    from_file = json.loads(render_json(build_report(jsonl, since="2000-01-01", n_resamples=20)))
    assert assert_same_numbers(from_file, from_postgres) > 50
    assert from_postgres["families"]["parse_outcomes"][0]["n_reviews"] == 30
