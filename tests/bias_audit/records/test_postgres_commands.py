"""``llm-council store-migrate``, ``store-rebuild`` and ``store-copy`` on a real server
(ADR 0056; issue 37 part B, items 2, 5 and 9), through the CLI's own entry point.

Before: the schema was created by every pool open; a large stale store was rebuilt only
in a daemon thread that died with the 1.7 s ``ask`` process, so history stayed off for
good; and ``bias-import`` refused ``postgresql://``, so moving a JSONL store to a shared
one needed code.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.reviewer_profiles import load_profiles
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.stores import open_store
from llm_council.cli.app import main

psycopg = pytest.importorskip("psycopg")
postgres_store = pytest.importorskip("llm_council.bias_audit.records.postgres_store")
postgres_profiles = pytest.importorskip("llm_council.bias_audit.records.postgres_profiles")
postgres_copy = pytest.importorskip("llm_council.bias_audit.records.postgres_copy")


def _session(index: int, members: int = 3, prefix: str = "c") -> list[ReviewRecord]:
    return [
        ReviewRecord(
            session_id=f"{prefix}{index:04d}",
            timestamp="2026-11-27T10:00:00+00:00",
            reviewer_id=f"judge-{reviewer}",
            model_id=f"judge-{candidate}",
            position=(candidate + reviewer + index) % members,
            n_candidates=members,
            response_length_chars=100,
            response_length_words=20,
            score_value=None
            if (reviewer + candidate + index) % 7 == 0
            else float(1 + (reviewer * 5 + candidate * 3 + index) % 10),
            is_self_review=reviewer == candidate,
            council_config_hash="sha256:commands",
            session_n_records=members * members,
        )
        for reviewer in range(members)
        for candidate in range(members)
    ]


def run_cli(*argv: str) -> int:
    try:
        main(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return 0


def _lookup(url: str) -> Any:
    with psycopg.connect(url) as connection:
        return postgres_profiles.lookup_profiles_sync(connection)


def _sessions(url: str) -> dict[str, int]:
    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT s.session_id, count(r.session_id) FROM bias_sessions s "
            "LEFT JOIN bias_records r USING (session_id) GROUP BY 1"
        ).fetchall()
    return {session: count for session, count in rows}


def test_store_migrate_creates_the_schema_once(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = empty_database_url
    with pytest.raises(Exception, match=r"no llm-council schema .* store-migrate"):
        asyncio.run(open_store(url).write_session(_session(0)))
    postgres_store.PostgresWriter._by_url.clear()
    assert run_cli("store-migrate", "--store", url) == 0
    err = capsys.readouterr().err
    assert "migrated from no schema to version 8" in err and ":***@" in err
    assert run_cli("store-migrate", "--store", url) == 0
    assert "already at version 8" in capsys.readouterr().err
    assert asyncio.run(open_store(url).write_session(_session(0))) == 9


def test_store_commands_refuse_a_jsonl_store_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("store-rebuild", "--store", str(tmp_path / "r.jsonl")) != 0
    err = capsys.readouterr().err.strip()
    assert "store-rebuild works on a PostgreSQL store" in err and "\n" not in err


def test_store_rebuild_of_an_unmigrated_database_says_to_migrate(
    empty_database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli("store-rebuild", "--store", empty_database_url) != 0
    err = capsys.readouterr().err.strip()
    assert "no llm-council schema" in err and "store-migrate" in err and "\n" not in err
    assert ":***@" in err


def test_store_rebuild_makes_a_stale_history_fresh_and_ask_says_how(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = [_session(index) for index in range(5)]
    asyncio.run(_write(store_url, sessions))
    with psycopg.connect(store_url) as connection:  # an importer's statement: stale
        connection.execute("UPDATE bias_sessions SET n_records = n_records WHERE false")
    assert _lookup(store_url) is None

    async def twice() -> list[Any]:
        writer = postgres_store.PostgresWriter.for_url(store_url)
        return [await writer.reviewer_profiles(), await writer.reviewer_profiles()]

    postgres_store._STALE_NOTED.clear()
    with capture_logs() as logs:
        assert asyncio.run(twice()) == [None, None]
    stale = [e for e in logs if e["event"] == "reviewer_history_stale"]
    assert len(stale) == 1 and "llm-council store-rebuild --store URL" in stale[0]["fix"]
    assert ":***@" in stale[0]["store"]
    assert run_cli("store-rebuild", "--store", store_url) == 0
    err = capsys.readouterr().err
    assert "from 5 session(s), saved" in err
    # the JSONL store's sums for the same sessions, to the last bit
    assert _lookup(store_url) == load_profiles(_jsonl_store(tmp_path / "r.jsonl", sessions))


async def _write(url: str, sessions: list[list[ReviewRecord]]) -> None:
    store = open_store(url)
    for records in sessions:
        await store.write_session(records)


def _jsonl_store(path: Path, sessions: list[list[ReviewRecord]]) -> Path:
    for records in sessions:
        append_records(path, records)
    return path


def _assert_same_sums(found: Any, expected: Any) -> None:
    assert found is not None and found.keys() == expected.keys()
    for name, profile in expected.items():
        assert found[name].sessions == profile.sessions
        assert found[name].residual_sum_of_squares == pytest.approx(
            profile.residual_sum_of_squares, rel=1e-12
        )
        assert found[name].residual_df == pytest.approx(profile.residual_df, rel=1e-12)
        assert dict(found[name].expectation) == pytest.approx(dict(profile.expectation))


def test_store_copy_moves_a_jsonl_store_once_with_progress(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = [_session(index) for index in range(20)]
    source = _jsonl_store(tmp_path / "records.jsonl", sessions)
    with source.open("a") as handle:  # a torn session: 2 of its 9 lines, then garbage
        for record in _session(99)[:2]:
            handle.write(record.model_dump_json() + "\n")
        handle.write("{not json\n")
    seen: list[int] = []
    summary = postgres_copy.copy_jsonl_to_postgres(
        source, store_url, progress=lambda s: seen.append(s.sessions_read)
    )
    assert seen == [8, 16]  # after every 8 sessions in flight
    assert summary.sessions_written == 20 and summary.records_written == 180
    assert summary.lines_left_out == 3  # 2 lines of the incomplete session, 1 malformed
    assert _sessions(store_url) == {f"c{index:04d}": 9 for index in range(20)}
    # the history equals the JSONL store's own (8 sessions in flight fold in any order:
    # the same sums to rounding)
    _assert_same_sums(
        _lookup(store_url), load_profiles(_jsonl_store(tmp_path / "c.jsonl", sessions))
    )
    # idempotent: a second run (the CLI) writes nothing and says so
    assert run_cli("store-copy", "--from", str(source), "--store", store_url) == 0
    err = capsys.readouterr().err
    assert "copied 0 session(s) (0 records)" in err and "20 already there" in err
    assert "left out 3 line(s)" in err and ":***@" in err
    assert len(_sessions(store_url)) == 20


def test_store_copy_leaves_out_a_session_the_store_refuses(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = [_session(index) for index in range(3)]
    sessions[1] = [r.model_copy(update={"score_value": 1e300}) for r in sessions[1]]
    source = _jsonl_store(tmp_path / "records.jsonl", sessions)
    assert run_cli("store-copy", "--from", str(source), "--store", store_url) == 0
    err = capsys.readouterr().err
    assert "copied 2 session(s)" in err and "refused:" in err and "c0001" in err
    assert set(_sessions(store_url)) == {"c0000", "c0002"}


def test_store_copy_of_a_missing_file_is_one_line(
    store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    assert run_cli("store-copy", "--from", str(missing), "--store", store_url) != 0
    err = capsys.readouterr().err.strip()
    assert "no such JSONL store" in err and "\n" not in err
    assert json.dumps(_sessions(store_url)) == "{}"
