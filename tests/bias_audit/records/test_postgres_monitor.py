"""The monitor of a PostgreSQL store (records/postgres_monitor.py), against a real server:
folded by the writers (or rebuilt from the records), it equals the JSONL store's monitor."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_state import current_monitor, state_body
from llm_council.bias_audit.records.monitor_status import monitor_status
from llm_council.bias_audit.records.monitor_update import monitor_after_session
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.bias_audit.records.stores import open_store
from llm_council.cli.app import main
from llm_council.errors import RecordError

postgres_monitor = pytest.importorskip("llm_council.bias_audit.records.postgres_monitor")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402

#: where the two stores may differ: which bytes of which file were read, and where the
#: folded sessions are listed (a JSONL state holds their digests; PostgreSQL, a table)
_STORE_POSITION = ("inode", "offset", "fingerprint", "lines_read", "session_digests_sha256")


def _sessions(n: int) -> list[list[ReviewRecord]]:
    spec = CouncilSpec(
        n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], leniency=[-2.0, 0, 0, 0],
        missing_score_rate=0.1,
    )  # fmt: skip
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(spec, n, seed=5)
    ]


def _write(url: str, sessions: list[list[ReviewRecord]]) -> None:
    async def run() -> None:
        store = open_store(url)
        for records in sessions:
            await store.write_session(records)
        await store.aclose()  # type: ignore[attr-defined]

    asyncio.run(run())


def _comparable(body: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in body.items() if key not in _STORE_POSITION}


def test_equals_the_jsonl_monitor_of_the_same_sessions(store_url: str, tmp_path: Path) -> None:
    sessions = _sessions(30)
    _write(store_url, sessions)
    jsonl = tmp_path / "records.jsonl"
    for records in sessions:
        append_records(jsonl, records)
    from_postgres = postgres_monitor.postgres_monitor(store_url)
    assert _comparable(state_body(from_postgres)) == _comparable(state_body(current_monitor(jsonl)))
    assert monitor_status(from_postgres)["confirmed"] == ["judge-0"]
    answer = monitor_after_session(store_url)
    assert answer["status"] == "ok" and answer["sessions"] == 30


def _forget_state(url: str) -> None:
    """The state row emptied, as a store migrated with sessions in it leaves it."""
    import psycopg

    with psycopg.connect(url) as connection:
        connection.execute("UPDATE bias_monitor_state SET body = NULL")


def test_an_empty_database_and_a_size_limit_on_rebuilds(store_url: str) -> None:
    assert postgres_monitor.postgres_monitor(store_url).n_sessions == 0
    _write(store_url, _sessions(2))
    # the saved state is read whatever the store's size; only a rebuild reads the records
    assert postgres_monitor.postgres_monitor(store_url, max_records=10).n_sessions == 2
    _forget_state(store_url)
    with pytest.raises(RecordError, match="stops at 10"):
        postgres_monitor.postgres_monitor(store_url, max_records=10)


def test_bias_watch_reads_a_postgres_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(store_url, _sessions(30))
    with pytest.raises(SystemExit) as caught:
        main(["bias-watch", "--store", store_url, "--json"])
    assert caught.value.code == 1
    assert json.loads(capsys.readouterr().out)["confirmed"] == ["judge-0"]


def test_a_large_store_is_left_to_bias_watch_in_the_session(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each session re-reads a PostgreSQL store, so a session stops at a small size
    from llm_council.bias_audit.records import monitor_update

    _write(store_url, _sessions(2))
    _forget_state(store_url)
    monkeypatch.setattr(monitor_update, "SESSION_POSTGRES_MAX_RECORDS", 10)
    answer = monitor_after_session(store_url)
    assert answer["status"] == "unavailable"
    assert "bias-watch" in answer["reason"] and "secret" not in answer["reason"]
    assert postgres_monitor.postgres_monitor(store_url).n_sessions == 2
