"""``bias-compact``: Parquet day partitions, idempotent, pruned by ``--since``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bias_audit.report.report_numbers import assert_same_numbers
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report, render_json
from llm_council.bias_audit.report.load import loading, parquet_compaction
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.cli.app import _run, app
from llm_council.errors import RecordError

# 120 sessions, one an hour from 2026-01-05: five day partitions; integer scores, ties,
# missing cells and missing reviews, a lenient and a primacy-biased judge.
SPEC = CouncilSpec(
    leniency=[1.0, 0.0, 0.0, -0.5, 0.0],
    slot_effects=[[0.0], [0.8], [0.0], [0.0], [0.0]],
    missing_score_rate=0.05,
    missing_review_rate=0.1,
)


@pytest.fixture(scope="module")
def sessions() -> list:
    return generate_sessions(SPEC, 120, seed=12)


def _write(path: Path, sessions: list) -> Path:
    write_store(path, sessions)
    return path


def _parquet_rows(root: Path) -> list[tuple[str, int]]:
    return duckdb.sql(
        f"SELECT session_id, count(*) FROM read_parquet('{root}/*/*.parquet') "
        "GROUP BY session_id ORDER BY session_id"
    ).fetchall()


def test_report_from_parquet_equals_report_from_jsonl(tmp_path: Path, sessions: list) -> None:
    store = _write(tmp_path / "store.jsonl", sessions)
    result = compact_store(store, tmp_path / "pq")
    assert result.n_sessions_written == 120
    assert result.days_written == tuple(f"2026-01-{day:02d}" for day in range(5, 10))
    assert sorted(path.parent.name for path in (tmp_path / "pq").glob("*/*.parquet")) == [
        f"date=2026-01-{day:02d}" for day in range(5, 10)
    ]
    from_jsonl = json.loads(render_json(build_report(store)))
    from_parquet = json.loads(render_json(build_report(tmp_path / "pq")))
    assert assert_same_numbers(from_jsonl, from_parquet) > 100


def test_compaction_is_idempotent_and_appends_only_new_sessions(
    tmp_path: Path, sessions: list
) -> None:
    out = tmp_path / "pq"
    first = compact_store(_write(tmp_path / "a.jsonl", sessions[:50]), out)
    files = {path: path.stat().st_mtime_ns for path in out.glob("*/*.parquet")}
    again = compact_store(tmp_path / "a.jsonl", out)
    assert (again.n_sessions_written, again.n_sessions_already_compacted) == (0, 50)
    assert {path: path.stat().st_mtime_ns for path in out.glob("*/*.parquet")} == files
    grown = compact_store(_write(tmp_path / "b.jsonl", sessions), out)
    assert (grown.n_sessions_written, grown.n_sessions_already_compacted) == (70, 50)
    # 50 sessions end on 2026-01-07 at 01:00: that day is rewritten, earlier ones are not
    assert grown.days_written == ("2026-01-07", "2026-01-08", "2026-01-09")
    rows = _parquet_rows(out)
    expected = [(s.session_id, len(s.records())) for s in sessions]
    assert rows == sorted(expected)
    assert first.n_records_written + grown.n_records_written == sum(n for _, n in expected)


def test_incomplete_session_waits_for_a_later_compaction(tmp_path: Path) -> None:
    lines = [
        {
            "schema_version": 2,
            "session_id": sid,
            "timestamp": "2026-02-01T10:00:00Z",
            "reviewer_id": f"r{i}",
            "model_id": "m",
            "position": i,
            "n_candidates": 3,
            "response_length_chars": 10,
            "response_length_words": 2,
            "score_value": 5.0,
            "score_scale": [1.0, 10.0],
            "rank": 1,
            "is_self_review": False,
            "council_config_hash": "sha256:x",
            "query_hash": None,
            "session_n_records": 3,
        }
        for sid in ("whole", "growing")
        for i in range(3)
    ]
    store, out = tmp_path / "store.jsonl", tmp_path / "pq"
    future = {**lines[0], "session_id": "future", "schema_version": 9}
    garbage = "[1,2]\n"
    store.write_text("".join(json.dumps(line) + "\n" for line in [*lines[:5], future]) + garbage)
    first = compact_store(store, out)
    assert (first.n_sessions_written, first.n_incomplete_sessions) == (1, 1)
    assert (first.n_unknown_version, first.n_unreadable) == (1, 1)
    store.write_text("".join(json.dumps(line) + "\n" for line in lines))
    second = compact_store(store, out)
    assert (second.n_sessions_written, second.n_incomplete_sessions) == (1, 0)
    assert _parquet_rows(out) == [("growing", 3), ("whole", 3)]
    kept = duckdb.sql(
        f"SELECT DISTINCT session_n_records, council_config_hash FROM read_parquet('{out}/*/*.parquet')"
    ).fetchall()
    assert kept == [(3, "sha256:x")]


def test_since_never_opens_older_partitions(tmp_path: Path, sessions: list) -> None:
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "store.jsonl", sessions), out)
    (out / "date=2026-01-05" / "part-0.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(RecordError, match="cannot read the Parquet store"):
        build_report(out)
    report = build_report(out, since="2026-01-08T00:00:00Z")
    # sessions 72..119 end on 2026-01-08 and 2026-01-09
    assert report.n_sessions == 48


def test_cli_compacts_then_reports_from_parquet(
    tmp_path: Path, sessions: list, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _write(tmp_path / "store.jsonl", sessions)
    out = tmp_path / 'it\'s a "dir"'
    assert _run(["bias-compact", "--store", str(store), "--out", str(out)], "llm-council", app) == 0
    assert "compacted 120 session(s)" in capsys.readouterr().err
    code = _run(["bias-report", "--store", str(out), "--format", "json"], "llm-council", app)
    assert code == 0
    assert json.loads(capsys.readouterr().out)["n_sessions"] == 120


def test_compacting_into_a_file_is_a_clear_error(tmp_path: Path, sessions: list) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(RecordError, match="exists and is not a directory"):
        compact_store(_write(tmp_path / "store.jsonl", sessions), tmp_path / "file")


def test_a_killed_compactions_temporary_file_is_never_read(tmp_path: Path, sessions: list) -> None:
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "store.jsonl", sessions[:24]), out)
    day = out / "date=2026-01-05"
    (day / ".part-0.parquet.4242.tmp").write_bytes(b"half a parquet file")
    assert build_report(out).n_sessions == 24
    grown = compact_store(_write(tmp_path / "more.jsonl", sessions[:30]), out)
    assert grown.n_sessions_written == 6
    assert build_report(out).n_sessions == 30


# Compaction in a child whose files may not grow past a limit (RLIMIT_FSIZE): writes past
# it fail with EFBIG, as on a full disk, and the child must report it in one line.
_LIMITED_COMPACTION = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from llm_council.cli.app import main
main(["bias-compact", "--store", sys.argv[1], "--out", sys.argv[2]])
"""


def test_a_failed_day_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, sessions: list
) -> None:
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "store.jsonl", sessions[:10]), out)
    day = out / "date=2026-01-05"
    before = (day / "part-0.parquet").read_bytes()
    more = _write(tmp_path / "more.jsonl", sessions[:24])
    child = subprocess.run(
        [sys.executable, "-c", _LIMITED_COMPACTION, str(more), str(out), str(len(before))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode != 0
    assert child.stderr.startswith("error: cannot compact") and "Traceback" not in child.stderr
    assert (day / "part-0.parquet").read_bytes() == before
    assert sorted(path.name for path in day.iterdir()) == ["part-0.parquet"]


# Append-only compaction (ADR 0093): a day that gains sessions gets a new part file.


def _identities(root: Path) -> dict[str, tuple[int, int, str]]:
    """(size, mtime_ns, SHA-256) of every part file, by its path under ``root``."""
    return {
        path.relative_to(root).as_posix(): (
            path.stat().st_size,
            path.stat().st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
        for path in sorted(root.glob("date=*/*.parquet"))
    }


def _files_per_session(root: Path) -> dict[str, int]:
    rows = duckdb.sql(
        f"SELECT session_id, count(DISTINCT filename) "
        f"FROM read_parquet('{root}/*/*.parquet', filename = true) GROUP BY session_id"
    ).fetchall()
    return {str(session): int(n_files) for session, n_files in rows}


def _rows_in_file_order(part: Path) -> list[tuple[str, str, str]]:
    return duckdb.sql(
        f"SELECT session_id, reviewer_id, model_id "
        f"FROM read_parquet('{part}', file_row_number = true) ORDER BY file_row_number"
    ).fetchall()


def test_growth_adds_one_part_per_day_and_never_touches_the_old_ones(
    tmp_path: Path, sessions: list
) -> None:
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "a.jsonl", sessions[:50]), out)
    before = _identities(out)
    assert sorted(before) == [f"date=2026-01-{day:02d}/part-0.parquet" for day in (5, 6, 7)]
    # sessions 50..79: more of 2026-01-07 (it ends at 01:00 after 50) and a new 2026-01-08
    grown = compact_store(_write(tmp_path / "b.jsonl", sessions[:80]), out)
    after = _identities(out)
    assert {name: after[name] for name in before} == before  # byte-identical, same mtime
    assert sorted(set(after) - set(before)) == [
        "date=2026-01-07/part-1.parquet",
        "date=2026-01-08/part-0.parquet",
    ]
    assert (grown.n_sessions_written, grown.n_sessions_already_compacted) == (30, 50)
    assert grown.days_written == ("2026-01-07", "2026-01-08") and grown.days_merged == ()
    in_files = _files_per_session(out)
    assert in_files == {session.session_id: 1 for session in sessions[:80]}
    for part in out.glob("date=*/*.parquet"):
        rows = _rows_in_file_order(part)
        assert rows == sorted(rows) and len(rows) > 0
    again = compact_store(tmp_path / "b.jsonl", out)
    assert (again.n_sessions_written, again.days_written) == (0, ())
    assert _identities(out) == after


def test_a_store_of_the_old_layout_gets_part_1(tmp_path: Path, sessions: list) -> None:
    """A directory the previous release wrote (one ``part-0.parquet`` a day, written here
    by hand) keeps its files; the day that gains sessions gets ``part-1.parquet``."""
    out, store = tmp_path / "pq", _write(tmp_path / "a.jsonl", sessions[:30])
    day = out / "date=2026-01-06"
    day.mkdir(parents=True)
    (out / "date=2026-01-05").mkdir()
    for directory, first, last in ((out / "date=2026-01-05", 0, 24), (day, 24, 30)):
        ids = ", ".join(f"'{session.session_id}'" for session in sessions[first:last])
        duckdb.sql(
            f"COPY (SELECT * FROM read_json_auto('{store}') WHERE session_id IN ({ids}) "
            f"ORDER BY session_id, reviewer_id, model_id) "
            f"TO '{directory / 'part-0.parquet'}' (FORMAT parquet)"
        )
    before = _identities(out)
    grown = compact_store(_write(tmp_path / "b.jsonl", sessions[:40]), out)
    assert (grown.n_sessions_written, grown.n_sessions_already_compacted) == (10, 30)
    assert sorted(set(_identities(out)) - set(before)) == ["date=2026-01-06/part-1.parquet"]
    assert {name: _identities(out)[name] for name in before} == before
    assert build_report(out).n_sessions == 40


def test_a_day_past_the_part_limit_is_merged_into_one_file(
    tmp_path: Path,
    sessions: list,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(parquet_compaction, "MAX_PARTS_PER_DAY", 2)
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "a.jsonl", sessions[:50]), out)
    compact_store(_write(tmp_path / "a.jsonl", sessions[:52]), out)  # 2026-01-07: part-1
    day = out / "date=2026-01-07"
    assert sorted(path.name for path in day.iterdir()) == ["part-0.parquet", "part-1.parquet"]
    others = {name: id_ for name, id_ in _identities(out).items() if "01-07" not in name}
    merged = compact_store(_write(tmp_path / "a.jsonl", sessions[:55]), out)
    assert (merged.days_written, merged.days_merged) == (("2026-01-07",), ("2026-01-07",))
    assert merged.n_sessions_written == 3
    assert sorted(path.name for path in day.iterdir()) == ["part-2.parquet"]
    rows = _rows_in_file_order(day / "part-2.parquet")
    assert rows == sorted(rows)
    assert {name: id_ for name, id_ in _identities(out).items() if "01-07" not in name} == others
    assert _files_per_session(out) == {session.session_id: 1 for session in sessions[:55]}
    assert _parquet_rows(out) == sorted((s.session_id, len(s.records())) for s in sessions[:55])
    following = compact_store(_write(tmp_path / "a.jsonl", sessions[:56]), out)
    assert following.days_merged == ()
    assert sorted(path.name for path in day.iterdir()) == ["part-2.parquet", "part-3.parquet"]
    capsys.readouterr()
    store = _write(tmp_path / "a.jsonl", sessions[:57])
    assert _run(["bias-compact", "--store", str(store), "--out", str(out)], "x", app) == 0
    err = capsys.readouterr().err
    assert "compacted 1 session(s)" in err and "1 day partition(s) written (2026-01-07)" in err
    assert "merged the part files of 1 day(s) into one each (2026-01-07)" in err
    assert sorted(path.name for path in day.iterdir()) == ["part-4.parquet"]


def test_a_merge_killed_before_removing_the_old_parts_is_finished_by_the_next_run(
    tmp_path: Path, sessions: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between the merged file's rename and the old parts' unlinks, a merge leaves
    the old parts beside the merged file (their sessions twice): the next run removes them."""
    monkeypatch.setattr(parquet_compaction, "MAX_PARTS_PER_DAY", 2)
    out, store = tmp_path / "pq", tmp_path / "a.jsonl"
    for n_sessions in (50, 52):
        compact_store(_write(store, sessions[:n_sessions]), out)
    day = out / "date=2026-01-07"
    old_parts = {path.name: path.read_bytes() for path in day.iterdir()}
    compact_store(_write(store, sessions[:55]), out)
    (day / "part-0.parquet").write_bytes(old_parts["part-0.parquet"])  # as if never unlinked
    assert build_report(out).n_sessions == 55  # the loader pools the doubled sessions once
    finished = compact_store(store, out)
    assert (finished.n_sessions_written, finished.days_merged) == (0, ("2026-01-07",))
    assert sorted(path.name for path in day.iterdir()) == ["part-2.parquet"]
    assert _files_per_session(out) == {session.session_id: 1 for session in sessions[:55]}


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_killed_compactions_temporary_of_any_part_is_removed_but_not_a_live_ones(
    tmp_path: Path, sessions: list
) -> None:
    out, store = tmp_path / "pq", _write(tmp_path / "a.jsonl", sessions[:30])
    compact_store(store, out)
    day = out / "date=2026-01-06"
    dead, alive = _dead_pid(), os.getppid()
    stale = [day / f".part-{n}.parquet.{dead}.tmp" for n in (0, 7, 12)]
    kept = [day / f".part-12.parquet.{alive}.tmp", day / f".part-x.parquet.{dead}.tmp"]
    for path in [*stale, *kept]:
        path.write_bytes(b"PAR1 half a file")
    rerun = compact_store(store, out)
    assert rerun.n_stale_temporaries_removed == 3
    assert [path.exists() for path in stale] == [False, False, False]
    assert [path.exists() for path in kept] == [True, True]


def test_stray_part_names_are_read_but_never_numbered(tmp_path: Path, sessions: list) -> None:
    """``part-x.parquet`` and ``part-.parquet`` are not files compaction wrote: the next
    part number ignores them; readers glob ``part-*.parquet`` and read them as data, and
    compaction counts their sessions as compacted. One that is not Parquet is an error."""
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "a.jsonl", sessions[:50]), out)
    day = out / "date=2026-01-07"
    for stray in ("part-x.parquet", "part-.parquet", "part-1x.parquet"):
        duckdb.sql(
            f"COPY (SELECT * FROM read_parquet('{day / 'part-0.parquet'}') LIMIT 0) "
            f"TO '{day / stray}' (FORMAT parquet)"
        )
    grown = compact_store(_write(tmp_path / "b.jsonl", sessions[:60]), out)
    assert grown.n_sessions_written == 10
    assert (day / "part-1.parquet").is_file()
    assert build_report(out).n_sessions == 60
    (day / "part-x.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(RecordError, match="cannot compact .*part-x.parquet"):
        compact_store(_write(tmp_path / "c.jsonl", sessions[:61]), out)
    assert sorted(path.name for path in day.glob("part-[0-9]*.parquet")) == [
        "part-0.parquet",
        "part-1.parquet",
        "part-1x.parquet",
    ]


def test_a_part_removed_while_a_report_reads_it_is_a_one_line_error(
    tmp_path: Path, sessions: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge removes a day's old parts; a report that listed them just before and reads
    one just after gets a clear error (run it again), not a DuckDB traceback."""
    out = tmp_path / "pq"
    compact_store(_write(tmp_path / "a.jsonl", sessions[:30]), out)
    real_build_records = loading.build_records

    def merge_in_between(*args: object, **kwargs: object) -> object:
        (out / "date=2026-01-05" / "part-0.parquet").unlink()  # listed, not yet read again
        return real_build_records(*args, **kwargs)

    monkeypatch.setattr(loading, "build_records", merge_in_between)
    with pytest.raises(RecordError, match="a partition file was removed while the report read"):
        loading.load_store(out)


def test_the_run_that_merges_a_full_day_merges_every_day_of_several_parts(
    tmp_path: Path, sessions: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next report reads every file once anyway: other days are merged in the same run
    (here 2026-01-06, which gains nothing), a day of one part is left as it is."""
    monkeypatch.setattr(parquet_compaction, "MAX_PARTS_PER_DAY", 3)
    out, store = tmp_path / "pq", tmp_path / "a.jsonl"
    # one session an hour from 2026-01-05: 06 gets parts 0-2, then 07 gets parts 0-2
    for n_sessions in (30, 40, 50, 52, 54):
        assert compact_store(_write(store, sessions[:n_sessions]), out).days_merged == ()
    names = {day.name: sorted(path.name for path in day.iterdir()) for day in out.glob("date=*")}
    assert names == {
        "date=2026-01-05": ["part-0.parquet"],
        "date=2026-01-06": ["part-0.parquet", "part-1.parquet", "part-2.parquet"],
        "date=2026-01-07": ["part-0.parquet", "part-1.parquet", "part-2.parquet"],
    }
    untouched = _identities(out)["date=2026-01-05/part-0.parquet"]
    merged = compact_store(_write(store, sessions[:56]), out)
    assert merged.days_written == ("2026-01-07",)
    assert merged.days_merged == ("2026-01-06", "2026-01-07")
    assert sorted(_identities(out)) == [
        "date=2026-01-05/part-0.parquet",
        "date=2026-01-06/part-3.parquet",
        "date=2026-01-07/part-3.parquet",
    ]
    assert _identities(out)["date=2026-01-05/part-0.parquet"] == untouched
    assert _files_per_session(out) == {session.session_id: 1 for session in sessions[:56]}
    assert _parquet_rows(out) == sorted((s.session_id, len(s.records())) for s in sessions[:56])
