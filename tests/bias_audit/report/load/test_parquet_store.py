"""``bias-compact``: Parquet day partitions, idempotent, pruned by ``--since``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from bias_audit.report.report_numbers import assert_same_numbers
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report, render_json
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
