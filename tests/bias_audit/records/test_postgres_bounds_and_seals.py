"""A PostgreSQL store against hostile rows, forged summaries and silent hosts, on a real
server (ADR 0056; issue 37 part B, items 4, 6, 7 and 8).

Before: one session with a score of 1e300 made every rebuild fail (``Token "Infinity" is
invalid``) and switched history off for every replica; ``position = 2147483647`` crashed
``bias-report``; ``?connect_timeout=2`` was overridden by a fixed 10 s; one ``INSERT`` of
made-up sums into ``bias_profile_deltas`` changed every replica's history, silently.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from fakes.postgres_sessions import count as _count
from fakes.postgres_sessions import write
from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import RecordError

psycopg = pytest.importorskip("psycopg")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
postgres_schema = pytest.importorskip("llm_council.bias_audit.records.postgres_schema")
postgres_connect = pytest.importorskip("llm_council.bias_audit.records.postgres_connect")
postgres_profiles = pytest.importorskip("llm_council.bias_audit.records.postgres_profiles")
profile_seals = pytest.importorskip("llm_council.bias_audit.records.postgres_profile_seals")
profile_rebuild = pytest.importorskip("llm_council.bias_audit.records.postgres_profile_rebuild")


def _session(index: int, members: int = 4, harsh: int = 0) -> list[ReviewRecord]:
    """One session; judge ``harsh`` scores 3 points low, the others by candidate."""
    return [
        ReviewRecord(
            session_id=f"b{index:03d}",
            timestamp="2026-11-27T10:00:00+00:00",
            reviewer_id=f"judge-{reviewer}",
            model_id=f"judge-{candidate}",
            position=(candidate + reviewer + index) % members,
            n_candidates=members,
            response_length_chars=100,
            response_length_words=20,
            score_value=float(5 + candidate - 3 * (reviewer == harsh))
            + 0.5 * ((reviewer + candidate + index) % 3),
            is_self_review=reviewer == candidate,
            council_config_hash="sha256:bounds",
            session_n_records=members * members,
        )
        for reviewer in range(members)
        for candidate in range(members)
    ]


def _raw_record(url: str, session_id: str, **values: Any) -> None:
    """One record in its own session, by plain SQL (another program, or an attacker)."""
    row = {"position": 0, "n_candidates": 2, "score_value": 5.0, **values}
    with psycopg.connect(url) as connection:
        connection.execute(
            "INSERT INTO bias_sessions (session_id, n_records) VALUES (%s, 1)", (session_id,)
        )
        connection.execute(
            """INSERT INTO bias_records (session_id, record_index, schema_version, "timestamp",
                   reviewer_id, model_id, position, n_candidates, response_length_chars,
                   response_length_words, score_value, score_scale, is_self_review,
                   council_config_hash, session_n_records)
               VALUES (%s, 0, 2, '2026-11-27T10:00:00+00:00', 'judge-0', 'judge-1', %s, %s,
                       1, 1, %s, '{1,10}', false, 'x', 1)""",
            (session_id, row["position"], row["n_candidates"], row["score_value"]),
        )


# -- item 6: positions ----------------------------------------------------------------


@pytest.mark.parametrize("position", [2_147_483_647, 4])
def test_a_position_outside_n_candidates_is_refused_at_write(store_url: str, position: int) -> None:
    records = _session(0)
    records[5] = records[5].model_copy(update={"position": position})
    with pytest.raises(RecordError) as raised:
        write(store_url, records)
    message = str(raised.value)
    assert "session 'b000' record 5: position" in message and "outside 0..3" in message
    assert "\n" not in message
    assert _count(store_url, "SELECT count(*) FROM bias_sessions") == 0
    # the schema refuses it too, whoever writes
    with pytest.raises(psycopg.errors.CheckViolation, match="position_in_range"):
        _raw_record(store_url, "raw", position=position, n_candidates=4)
    _raw_record(store_url, "raw-ok", position=3, n_candidates=4)  # the last slot is fine


# -- item 4: scores beyond the report's bound -------------------------------------------


def test_the_bound_is_the_reports() -> None:
    from llm_council.bias_audit.report.load.raw_records import MAX_ABS_SCORE

    assert postgres_schema.MAX_ABS_SCORE == MAX_ABS_SCORE == 1e6


@pytest.mark.parametrize("score", [1e300, -1e300, 1_000_000.5])
def test_a_score_beyond_the_bound_is_refused_at_write(store_url: str, score: float) -> None:
    records = _session(0)
    records[2] = records[2].model_copy(update={"score_value": score})
    with pytest.raises(RecordError, match=r"session 'b000' record 2: score_value .* beyond"):
        write(store_url, records)
    assert _count(store_url, "SELECT count(*) FROM bias_sessions") == 0
    for bad in (score, float("nan"), float("inf")):
        with pytest.raises(psycopg.errors.CheckViolation, match="score_in_range"):
            _raw_record(store_url, f"raw-{bad}", score_value=bad)
    write(store_url, _session(1))
    _raw_record(store_url, "edge", score_value=-1e6)  # the bound itself is kept


def test_a_stored_session_beyond_the_bound_is_left_out_of_history_not_fatal(
    empty_database_url: str,
) -> None:
    url = empty_database_url
    with psycopg.connect(url) as connection:  # a store written before schema 6
        for statement in postgres_schema._LOCK_AND_VERSION:
            connection.execute(statement)
        for statement in postgres_schema.migration_statements(0, target=5):
            connection.execute(statement)
    _raw_record(url, "huge", score_value=1e300, position=1)
    postgres_schema.migrate_store(url)  # NOT VALID: the old row stays
    write(url, *(_session(index) for index in range(3)))
    with capture_logs() as logs:
        profiles = profile_rebuild.load_postgres_profiles(url)
    assert profiles["judge-0"].sessions == 3  # the three good sessions; "huge" left out
    assert all(json.dumps(str(p)) for p in profiles.values())
    left_out = [e for e in logs if e["event"] == "reviewer_profiles_sessions_left_out"]
    assert left_out and left_out[0]["sessions"] == 1
    with psycopg.connect(url) as connection:  # saved: every replica reads it again
        assert postgres_profiles.lookup_profiles_sync(connection) == profiles


# -- item 7: connect_timeout -----------------------------------------------------------


@pytest.fixture
def silent_host() -> Iterator[int]:
    """A loopback port that accepts TCP connections (the kernel's backlog) and never
    answers; closed at the end of the test."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield int(listener.getsockname()[1])
    finally:
        listener.close()


def test_the_urls_connect_timeout_is_honoured(silent_host: int) -> None:
    url = f"postgresql://u:Silent-Pa55@127.0.0.1:{silent_host}/db?connect_timeout=2"
    for attempt in (
        lambda: write(url, _session(0)),
        lambda: profile_rebuild.load_postgres_profiles(url),
        lambda: postgres_store.fetch_arrow_table(url),  # bias-report's reader
    ):
        started = time.monotonic()
        with pytest.raises(RecordError) as raised:
            attempt()
        elapsed = time.monotonic() - started
        assert 1.5 <= elapsed < 9, elapsed  # 2 s, not the 10 s default (7 s for load)
        assert "Silent-Pa55" not in str(raised.value)


def test_the_default_timeout_applies_only_when_none_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    options = postgres_connect.connect_options
    assert options("postgresql://h/db") == {"connect_timeout": 10}
    assert options("postgresql://h/db?connect_timeout=2") == {}
    assert options("postgresql://h/db?sslmode=disable&connect_timeout=30") == {}
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "3")
    assert options("postgresql://h/db") == {}


# -- item 8: sealed profile rows ---------------------------------------------------------


@pytest.fixture
def summary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_SUMMARY_KEY", "one-key-for-every-replica")
    monkeypatch.delenv("LLM_COUNCIL_HASH_SECRET", raising=False)


def _lookup(url: str) -> Any:
    with psycopg.connect(url) as connection:
        return postgres_profiles.lookup_profiles_sync(connection)


def _audit(url: str) -> dict[str, Any]:
    names = [f"judge-{i}" for i in range(4)]
    scores = {
        reviewer: {
            candidate: float(5 + c - 3 * (reviewer == "judge-0")) + 0.3 * ((r + c) % 2)
            for c, candidate in enumerate(names)
        }
        for r, reviewer in enumerate(names)
    }
    return run_bias_audit({n: "w " * 50 for n in names}, scores, history=url).model_dump()


def test_a_forged_delta_is_left_out_with_a_warning(
    store_url: str, summary_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(store_url, *(_session(index) for index in range(6)))
    genuine = _lookup(store_url)
    audit_before = _audit(store_url)
    assert genuine is not None and genuine["judge-0"].sessions == 6
    with psycopg.connect(store_url) as connection:
        # made-up sums: a genuine delta's body with every number scaled, its seal kept
        profiles, seal = connection.execute(
            "SELECT profiles, seal FROM bias_profile_deltas ORDER BY id LIMIT 1"
        ).fetchone()
        forged = json.loads(
            json.dumps(profiles), parse_float=lambda text: float(text) * 40, parse_int=int
        )
        connection.execute(
            "INSERT INTO bias_profile_deltas (format, profiles, session_id, seal) "
            "VALUES (2, %s, 'made-up', %s)",
            (json.dumps(forged), seal),
        )
        connection.execute(  # and one with no seal at all
            "INSERT INTO bias_profile_deltas (format, profiles) VALUES (2, %s)",
            (json.dumps(forged),),
        )
    # a sealed delta copied while pending: refused (one delta per session)
    with pytest.raises(psycopg.errors.UniqueViolation), psycopg.connect(store_url) as connection:
        connection.execute(
            "INSERT INTO bias_profile_deltas (format, profiles, session_id, seal) "
            "SELECT format, profiles, session_id, seal FROM bias_profile_deltas "
            "WHERE session_id = 'b001'"
        )
    postgres_profiles._SUMMARIES.clear()
    with capture_logs() as logs:
        assert _lookup(store_url) == genuine
        assert _audit(store_url) == audit_before
    skipped = [e for e in logs if e["event"] == "reviewer_profiles_unsealed_delta_skipped"]
    assert len(skipped) >= 2
    # what a replica without the key reads: the forged sums (ADR 0048 trusted every row)
    with monkeypatch.context() as unkeyed:
        unkeyed.delenv("LLM_COUNCIL_SUMMARY_KEY")
        postgres_profiles._SUMMARIES.clear()
        assert _lookup(store_url) != genuine
        assert _audit(store_url) != audit_before
    postgres_profiles._SUMMARIES.clear()
    # compaction (at 32 pending) drops the forged rows and keeps the genuine sums
    write(store_url, *(_session(index) for index in range(6, 40)))
    assert _count(store_url, "SELECT count(*) FROM bias_profile_deltas WHERE seal IS NULL") == 0
    found = _lookup(store_url)
    assert found is not None and found["judge-0"].sessions == 40


def test_an_edited_base_is_rebuilt_from_the_records(store_url: str, summary_key: None) -> None:
    write(store_url, *(_session(index) for index in range(34)))  # compacted into the base
    genuine = _lookup(store_url)
    assert genuine is not None
    with psycopg.connect(store_url) as connection:
        connection.execute(
            "UPDATE bias_reviewer_profiles SET profile = (SELECT profile FROM "
            "bias_reviewer_profiles WHERE reviewer_id = 'judge-1') WHERE reviewer_id = 'judge-0'"
        )
    postgres_profiles._SUMMARIES.clear()
    with capture_logs() as logs:
        assert _lookup(store_url) is None  # not trusted: stale
    assert any(e["event"] == "reviewer_profiles_unsealed_base" for e in logs)
    assert profile_rebuild.load_postgres_profiles(store_url) == genuine
    assert _lookup(store_url) == genuine  # rebuilt and sealed again


def test_without_a_key_nothing_is_sealed_and_the_log_says_so(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LLM_COUNCIL_SUMMARY_KEY", raising=False)
    monkeypatch.delenv("LLM_COUNCIL_HASH_SECRET", raising=False)
    monkeypatch.setattr(profile_seals, "_NOTED_UNSEALED", set())
    write(store_url, *(_session(index) for index in range(2)))
    with capture_logs() as logs:
        assert _lookup(store_url) is not None
        assert _lookup(store_url) is not None
    assert [e["event"] for e in logs].count("reviewer_profiles_not_sealed") == 1
    assert _count(store_url, "SELECT count(*) FROM bias_profile_deltas WHERE seal IS NULL") == 2
