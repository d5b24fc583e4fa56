"""Reading the store with DuckDB: torn lines, unknown versions, --since, clear errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from llm_council.bias_audit.record_schema import SCHEMA_VERSION
from llm_council.bias_audit.report.loading import load_store, parse_since
from llm_council.errors import InputError, RecordError

from .conftest import record_line

Writer = Callable[[Sequence[str]], Path]


def test_schema_records_load_with_every_field(write_lines: Writer) -> None:
    path = write_lines(
        [
            record_line(reviewer_id="a", model_id="b", score_value=None, rank=None),
            record_line(reviewer_id="b", model_id="b", is_self_review=True, score_value=8.5),
        ]
    )
    store = load_store(path)
    rows = store.connection.execute(
        "SELECT reviewer, model, score, rank, is_self, words, scale_low, scale_high FROM records ORDER BY reviewer"
    ).fetchall()
    assert rows == [
        ("a", "b", None, None, False, 100, 1.0, 10.0),
        ("b", "b", 8.5, 1, True, 100, 1.0, 10.0),
    ]
    assert store.warnings == ()
    assert (store.n_lines, store.n_records, store.n_sessions) == (2, 2, 1)


def test_torn_last_line_is_skipped_with_a_warning(write_lines: Writer) -> None:
    good = [record_line(reviewer_id=f"r{i}") for i in range(3)]
    path = write_lines([*good, record_line(reviewer_id="torn")[:57]])
    store = load_store(path)
    assert store.n_records == 3
    assert store.n_lines == 4
    assert len(store.warnings) == 1
    assert "last line is incomplete" in store.warnings[0]


def test_corrupt_and_wrong_type_lines_are_counted(write_lines: Writer) -> None:
    lines = [
        record_line(reviewer_id="r1"),
        "this is not json\n",
        record_line(reviewer_id="r2").replace('"position":0', '"position":"first"'),
        record_line(reviewer_id="r3"),
    ]
    store = load_store(write_lines(lines))
    assert store.n_records == 2
    assert store.n_unreadable == 2
    assert any("skipped 2 unreadable line(s)" in warning for warning in store.warnings)


def test_unknown_schema_version_is_skipped_with_a_warning(write_lines: Writer) -> None:
    future = record_line(reviewer_id="r9").replace(
        f'"schema_version":{SCHEMA_VERSION}', '"schema_version":99'
    )
    store = load_store(write_lines([record_line(), future, future]))
    assert store.n_records == 1
    assert store.n_unknown_version == 2
    assert any("schema_version" in warning and "2 line(s)" in warning for warning in store.warnings)


def test_since_keeps_only_recent_sessions(write_lines: Writer) -> None:
    now = datetime(2026, 3, 1, tzinfo=UTC)
    lines = [
        record_line(session_id="old", timestamp=(now - timedelta(days=30)).isoformat()),
        record_line(session_id="new", timestamp=(now - timedelta(hours=2)).isoformat()),
    ]
    store = load_store(write_lines(lines), since=parse_since("7d", now=now), since_label="7d")
    assert store.connection.execute("SELECT DISTINCT session_id FROM records").fetchall() == [
        ("new",)
    ]
    assert store.n_before_since == 2


def test_parse_since_forms() -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert parse_since("24h", now=now) == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert parse_since("2w", now=now) == datetime(2026, 2, 15, 12, tzinfo=UTC)
    assert parse_since("2026-01-01") == datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_since("2026-01-01T05:00:00Z") == datetime(2026, 1, 1, 5, tzinfo=UTC)
    with pytest.raises(InputError, match="--since 'yesterday'"):
        parse_since("yesterday")


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="no bias-audit store at .*nothing.jsonl"):
        load_store(tmp_path / "nothing.jsonl")


def test_blank_lines_are_neither_records_nor_warnings(write_lines: Writer) -> None:
    store = load_store(write_lines(["\n", record_line(), "\n\n", record_line(reviewer_id="r2")]))
    assert (store.n_lines, store.n_records, store.n_unreadable) == (2, 2, 0)
    assert store.warnings == ()
