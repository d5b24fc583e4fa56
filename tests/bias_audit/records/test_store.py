"""The JSONL store: concurrent appends, torn and malformed lines, schema versions."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from llm_council.bias_audit.records.jsonl_store import (
    IncompleteSessionWarning,
    MalformedRecordWarning,
    RecordReader,
    TornRecordWarning,
    append_records,
    read_records,
    store_path,
    with_session_counts,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import InputError, RecordError


def make_record(
    session: str, reviewer: str = "r1", candidate: str = "c1", **fields: object
) -> ReviewRecord:
    values: dict[str, object] = {
        "session_id": session,
        "timestamp": "2026-11-22T03:00:00.000+00:00",
        "reviewer_id": reviewer,
        "model_id": candidate,
        "position": 0,
        "n_candidates": 5,
        "response_length_chars": 1200,
        "response_length_words": 200,
        "score_value": 7.0,
        "rank": 1,
        "is_self_review": reviewer == candidate,
        "council_config_hash": "sha256:abc",
    }
    values.update(fields)
    return ReviewRecord.model_validate(values)


def test_store_path_from_env_and_default(tmp_path: Path) -> None:
    assert store_path({"LLM_COUNCIL_BIAS_STORE": str(tmp_path / "x.jsonl")}) == tmp_path / "x.jsonl"
    default = store_path({})
    assert default.name == "bias_records.jsonl"
    assert "llm-council" in str(default)


def test_round_trip_and_null_score(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "records.jsonl"
    records = [make_record("s1", candidate=f"c{i}", position=i) for i in range(3)]
    records.append(make_record("s1", candidate="c9", score_value=None, rank=None))
    assert append_records(path, records) == 4
    assert list(read_records(path)) == with_session_counts(records)
    assert {r.session_n_records for r in read_records(path)} == {4}  # filled in by the writer
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["score_value"] is None  # missing stays null, never 0
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_missing_store_reads_as_empty(tmp_path: Path) -> None:
    assert list(read_records(tmp_path / "absent.jsonl")) == []


def test_torn_last_line_is_skipped_with_warning_and_nothing_else_lost(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    good = [make_record("s1", candidate=f"c{i}") for i in range(5)]
    append_records(path, good)
    torn = make_record("s2").model_dump_json()[:57]  # a writer died mid-line
    with path.open("a") as handle:
        handle.write(torn)
    reader = RecordReader(path)
    with pytest.warns(TornRecordWarning, match=r"records\.jsonl:6: skipped a torn last line"):
        assert list(reader) == with_session_counts(good)
    assert reader.torn_tail
    assert [line for line, _ in reader.skipped] == [6]


def test_append_after_a_torn_line_keeps_the_new_records(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record("s1")])
    with path.open("a") as handle:
        handle.write('{"schema_version": 1, "sess')
    later = [make_record("s3", candidate=f"c{i}") for i in range(2)]
    append_records(path, later)
    with pytest.warns(MalformedRecordWarning, match=r"records\.jsonl:2"):
        records = list(read_records(path))
    assert [r.session_id for r in records] == ["s1", "s3", "s3"]


def test_malformed_middle_line_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    lines = [
        make_record("s1").model_dump_json(),
        "not json at all",
        json.dumps({**make_record("s1").model_dump(mode="json"), "score_value": "high"}),
        make_record("s2").model_dump_json(),
    ]
    path.write_text("\n".join(lines) + "\n")
    reader = RecordReader(path)
    with pytest.warns(MalformedRecordWarning) as caught:
        assert [r.session_id for r in reader] == ["s1", "s2"]
    messages = [str(w.message) for w in caught]
    assert any(f"{path}:2:" in m for m in messages)
    assert any(f"{path}:3:" in m and "score_value" in m for m in messages)
    assert [line for line, _ in reader.skipped] == [2, 3]
    with pytest.raises(InputError) as raised:
        list(read_records(path, strict=True))
    assert raised.value.line == 2
    assert str(raised.value).startswith(f"{path}:2: malformed record")


def test_unknown_schema_version_is_reported_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    future = {**make_record("s1").model_dump(mode="json"), "schema_version": 99}
    path.write_text(json.dumps(future) + "\n" + make_record("s2").model_dump_json() + "\n")
    with pytest.warns(MalformedRecordWarning, match="schema_version 99"):
        assert [r.session_id for r in read_records(path)] == ["s2"]


def test_unwritable_store_raises_record_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(RecordError, match="cannot append records"):
        append_records(blocker / "records.jsonl", [make_record("s1")])


def _append_sessions(path: str, writer: int, sessions: int) -> None:
    for session in range(sessions):
        records = [
            make_record(
                f"w{writer}-s{session}",
                reviewer=f"r{r}",
                candidate=f"c{c}",
                position=c,
                response_length_chars=10_000 + writer,
            )
            for r in range(5)
            for c in range(5)
        ]
        append_records(Path(path), records)


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=_append_sessions, args=(str(path), writer, 20))
        for writer in range(4)
    ]
    for process in writers:
        process.start()
    for process in writers:
        process.join(timeout=60)
        assert process.exitcode == 0
    records = list(RecordReader(path, strict=True))
    assert len(records) == 4 * 20 * 25
    # each session's 25 lines are contiguous: one locked section per session
    sessions_in_order = [r.session_id for r in records]
    runs = [s for i, s in enumerate(sessions_in_order) if i == 0 or sessions_in_order[i - 1] != s]
    assert len(runs) == 4 * 20
    assert os.path.getsize(path) == sum(len(r.model_dump_json()) + 1 for r in records)


def test_complete_last_line_without_newline_is_kept_and_extended_safely(tmp_path: Path) -> None:
    # a record written by another tool without the final newline is complete, not torn
    path = tmp_path / "records.jsonl"
    path.write_text(make_record("s1").model_dump_json())
    assert [r.session_id for r in read_records(path)] == ["s1"]
    append_records(path, [make_record("s2")])
    assert [r.session_id for r in read_records(path, strict=True)] == ["s1", "s2"]


def test_version_1_lines_are_upgraded_and_kept_as_legacy(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    legacy = make_record("old").model_dump(mode="json")
    del legacy["session_n_records"]
    legacy["schema_version"] = 1
    path.write_text(json.dumps(legacy) + "\n")
    append_records(path, [make_record("new", candidate=f"c{i}") for i in range(2)])
    records = list(read_records(path, strict=True))
    assert [(r.session_id, r.schema_version, r.session_n_records) for r in records] == [
        ("old", 2, None),  # unknown count: nothing to check it against, so kept
        ("new", 2, 2),
        ("new", 2, 2),
    ]


def test_every_record_of_a_session_carries_its_count(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    mixed_call = [make_record("a", candidate=f"c{i}") for i in range(3)] + [make_record("b")]
    assert append_records(path, mixed_call) == 4
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["session_id"], line["session_n_records"]) for line in lines] == [
        ("a", 3),
        ("a", 3),
        ("a", 3),
        ("b", 1),
    ]


def _lines(*records: ReviewRecord) -> str:
    return "".join(record.model_dump_json() + "\n" for record in records)


@pytest.mark.parametrize(
    ("session_lines", "found", "declared"),
    [
        # 2 of 3 lines present: a write cut short
        ([{"candidate": "c0"}, {"candidate": "c1"}], 2, 3),
        # the same complete session twice (a file concatenated with itself): 6 for 3
        ([{"candidate": f"c{i % 3}"} for i in range(6)], 6, 3),
    ],
)
def test_a_session_whose_count_disagrees_is_dropped_whole(
    tmp_path: Path, session_lines: list[dict[str, str]], found: int, declared: int
) -> None:
    path = tmp_path / "records.jsonl"
    partial = [make_record("cut", session_n_records=declared, **s) for s in session_lines]
    whole = [make_record("ok", candidate=f"c{i}", session_n_records=2) for i in range(2)]
    path.write_text(_lines(whole[0], *partial, whole[1]))
    reader = RecordReader(path)
    with pytest.warns(
        IncompleteSessionWarning, match=rf"1 incomplete sessions \({found} records\)"
    ):
        assert list(reader) == whole  # interleaved with the partial one, still whole
    assert reader.incomplete_sessions == {"cut": (found, declared)}
    assert [line for line, _ in reader.skipped] == list(range(2, 2 + found))
    assert all(reason.startswith("incomplete session") for _, reason in reader.skipped)


def test_records_disagreeing_on_the_count_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    path.write_text(
        _lines(
            make_record("x", candidate="c0", session_n_records=2),
            make_record("x", candidate="c1", session_n_records=3),
            make_record("x", candidate="c2"),
        )
    )
    reader = RecordReader(path)
    with pytest.warns(IncompleteSessionWarning):
        assert list(reader) == []
    assert reader.incomplete_sessions == {"x": (3, -1)}
    assert "disagree on session_n_records" in reader.skipped[0][1]


def test_a_malformed_line_of_a_session_makes_it_incomplete(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    good = make_record("s", candidate="c0", session_n_records=2)
    bad = make_record("s", candidate="c1", session_n_records=2).model_dump_json()
    path.write_text(
        good.model_dump_json() + "\n" + bad.replace('"position":0', '"position":-1') + "\n"
    )
    reader = RecordReader(path)
    with (
        pytest.warns(MalformedRecordWarning, match=r"records\.jsonl:2"),
        pytest.warns(IncompleteSessionWarning),
    ):
        assert list(reader) == []
    assert reader.incomplete_sessions == {"s": (1, 2)}
    assert [line for line, _ in reader.skipped] == [2, 1]


def test_the_reader_stops_at_the_length_it_started_with(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record("s1", candidate=f"c{i}") for i in range(2)])
    iterator = iter(RecordReader(path))
    first = next(iterator)
    append_records(path, [make_record("s2")])  # a writer appends during the read
    assert [first.session_id, *(r.session_id for r in iterator)] == ["s1", "s1"]


def _append_in_child(path: str) -> None:
    append_records(Path(path), [make_record("child")])


def test_a_forked_child_can_append_after_its_parent(tmp_path: Path) -> None:
    # filelock refuses a lock object inherited across fork; the cache is per process
    path = tmp_path / "records.jsonl"
    append_records(path, [make_record("parent")])
    child = multiprocessing.get_context("fork").Process(target=_append_in_child, args=(str(path),))
    child.start()
    child.join(timeout=30)
    assert child.exitcode == 0
    assert [r.session_id for r in read_records(path, strict=True)] == ["parent", "child"]


def test_a_postgres_url_without_the_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from llm_council.bias_audit.records.stores import open_store
    from llm_council.errors import MissingDependencyError

    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "llm_council.bias_audit.records.postgres_store", raising=False)
    with pytest.raises(MissingDependencyError) as raised:
        open_store("postgresql://u:s3cret@h/db")
    assert str(raised.value) == (
        "a PostgreSQL record store needs the 'postgres' extra (psycopg is missing): "
        "pip install -e '.[postgres]' (in the llm-council checkout)"
    )


def test_store_spec_keeps_a_postgres_url_and_resolves_a_path(tmp_path: Path) -> None:
    from llm_council.bias_audit.records.stores import JsonlWriter, open_store, store_spec

    url = "postgresql://u@h/db"
    assert store_spec({"LLM_COUNCIL_BIAS_STORE": url}) == url
    assert store_spec({"LLM_COUNCIL_BIAS_STORE": str(tmp_path / "r.jsonl")}) == str(
        tmp_path / "r.jsonl"
    )
    writer = open_store(str(tmp_path / "r.jsonl"))
    assert isinstance(writer, JsonlWriter) and writer.description == str(tmp_path / "r.jsonl")
