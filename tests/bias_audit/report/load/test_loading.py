"""Reading the store with DuckDB: torn lines, unknown versions, incomplete sessions, --since."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bias_audit.report.conftest import record_line
from llm_council.bias_audit.records.schema import SCHEMA_VERSION
from llm_council.bias_audit.report import build_report, render_json
from llm_council.bias_audit.report.load.loading import load_store, parse_since
from llm_council.errors import ConfigError, InputError, RecordError

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
    assert (store.n_lines, store.n_records, store.n_sessions) == (2, 1, 1)


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


def v2_line(session_n_records: int, **fields: Any) -> str:
    """A schema-version-2 line (``session_n_records``), written by hand until the writer has it."""
    record = json.loads(record_line(**fields))
    record.update(schema_version=2, session_n_records=session_n_records)
    return json.dumps(record) + "\n"


def test_v2_sessions_with_every_line_are_kept_alongside_v1(write_lines: Writer) -> None:
    lines = [
        record_line(session_id="legacy", reviewer_id="a"),  # v1: no count, taken as is
        *(v2_line(3, session_id="whole", reviewer_id=f"r{i}") for i in range(3)),
    ]
    store = load_store(write_lines(lines))
    assert (store.n_records, store.n_sessions, store.n_incomplete_sessions) == (4, 2, 0)
    assert store.warnings == ()


def test_incomplete_v2_session_is_dropped_whole_and_reported(write_lines: Writer) -> None:
    # a writer killed after 2 of 5 lines of session "cut", and a session with 1 line too many
    lines = [
        *(v2_line(3, session_id="whole", reviewer_id=f"r{i}") for i in range(3)),
        *(v2_line(5, session_id="cut", reviewer_id=f"r{i}") for i in range(2)),
        *(v2_line(2, session_id="doubled", reviewer_id=f"r{i}") for i in range(3)),
    ]
    store = load_store(write_lines(lines))
    sessions = store.connection.execute("SELECT DISTINCT session_id FROM records").fetchall()
    assert sessions == [("whole",)]
    assert (store.n_incomplete_sessions, store.n_incomplete_records) == (2, 5)
    assert store.n_unreadable == 0
    assert any("2 incomplete session(s) (5 records) dropped" in w for w in store.warnings)


def test_session_whose_lines_disagree_on_the_count_is_incomplete(write_lines: Writer) -> None:
    lines = [
        v2_line(2, session_id="s", reviewer_id="a"),
        v2_line(3, session_id="s", reviewer_id="b"),
    ]
    store = load_store(write_lines([*lines, record_line(session_id="other")]))
    assert (store.n_records, store.n_incomplete_sessions) == (1, 1)


def test_incomplete_sessions_are_counted_in_the_json_report(write_lines: Writer) -> None:
    lines = [
        *(
            v2_line(3, session_id=f"s{s}", reviewer_id=f"r{r}", model_id=f"m{m}", position=m)
            for s in range(4)
            for r in range(3)
            for m in range(1)
        ),
        v2_line(3, session_id="cut", reviewer_id="r0"),
    ]
    report = json.loads(render_json(build_report(write_lines(lines))))
    assert (report["n_incomplete_sessions"], report["n_incomplete_records"]) == (1, 1)
    assert report["n_sessions"] == 4
    assert any("1 incomplete session(s) (1 records) dropped" in w for w in report["warnings"])


def test_parquet_directory_without_partitions_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RecordError, match="holds no Parquet partitions"):
        load_store(tmp_path)


def test_unknown_engine_is_a_clear_error(write_lines: Writer) -> None:
    with pytest.raises(ConfigError, match="unknown engine 'presto'"):
        load_store(write_lines([record_line()]), engine="presto")


def test_spark_engine_refuses_a_jsonl_file(write_lines: Writer) -> None:
    with pytest.raises(ConfigError, match="--engine spark reads a Parquet directory"):
        load_store(write_lines([record_line()]), engine="spark")


def test_array_and_scalar_lines_do_not_wipe_out_the_other_records(write_lines: Writer) -> None:
    # without records=true DuckDB switched the whole file to non-record mode: every row NULL
    hostile = ["[1,2]\n", "42\n", '"text"\n', "null\n", "{}\n", "   \n"]
    store = load_store(write_lines([record_line(), *hostile, record_line(reviewer_id="r2")]))
    assert (store.n_records, store.n_unreadable) == (2, 5)  # the blank line is not a line


def test_a_whole_last_record_without_its_newline_is_a_record(write_lines: Writer) -> None:
    store = load_store(write_lines([record_line(), record_line(reviewer_id="r2").rstrip("\n")]))
    assert (store.n_records, store.n_unreadable) == (2, 0)
    assert store.warnings == ()


def test_a_fifo_as_store_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "store.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordError, match="is not a regular file or a Parquet directory"):
        load_store(fifo)


def test_cli_engine_spark_on_a_jsonl_file_is_one_line(
    write_lines: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import _run, app

    path = write_lines([record_line()])
    code = _run(["bias-report", "--store", str(path), "--engine", "spark"], "llm-council", app)
    error = capsys.readouterr().err
    assert code != 0
    assert error.startswith("error: --engine spark reads a Parquet directory")
    assert error.count("\n") == 1


def test_duckdb_memory_is_capped_and_spills_to_a_private_directory(
    write_lines: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp it's"))  # a quote in the path
    (tmp_path / "tmp it's").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    store = load_store(write_lines([record_line()]), memory_limit="256MB")
    limit, spill = store.connection.execute(
        "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
    ).fetchone()
    assert limit == "244.1 MiB"  # DuckDB's own rendering of 256 MB
    assert spill.startswith(str(tmp_path / "tmp it's" / "llm-council-report-"))
    # DuckDB creates the directory when it first spills and removes it on close
    store.connection.execute("CREATE TABLE spilled AS SELECT range AS x FROM range(40000000)")
    assert Path(spill).is_dir()  # 320 MB of BIGINT past a 256 MB cap: spilled
    store.connection.close()
    assert not Path(spill).exists()


def test_a_bad_memory_limit_is_one_config_error(write_lines: Writer) -> None:
    with pytest.raises(ConfigError, match="memory limit 'lots' is not a DuckDB size"):
        load_store(write_lines([record_line()]), memory_limit="lots")
