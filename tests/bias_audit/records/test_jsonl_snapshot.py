"""One consistent prefix of a store that writers append to while the report reads it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from bias_audit.report.conftest import record_line
from llm_council.bias_audit.records.jsonl_snapshot import complete_prefix_end
from llm_council.bias_audit.report.load.loading import load_store

# Appends v2 sessions of N lines, one os.write per line (the worst case for a reader: it
# can stop between any two lines), until the stop file appears.
_WRITER = """
import json, os, sys
path, stop, template, size = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
prefix = f"live{os.getpid()}-"
descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
session = 0
while not os.path.exists(stop):
    for index in range(size):
        line = dict(template, session_id=f"{prefix}{session:07d}", reviewer_id=f"r{index % 10}",
                    model_id=f"m{index // 10}", position=index // 10, schema_version=2,
                    session_n_records=size)
        os.write(descriptor, (json.dumps(line) + "\\n").encode())
    session += 1
"""


def test_complete_prefix_ends_after_the_last_newline_before_the_snapshot(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.jsonl"
    path.write_bytes(b'{"a":1}\n\n{"b":2}\n{"c":' + b"x" * 200_000)  # a long line in flight
    with path.open("rb") as handle:
        size = path.stat().st_size
        assert complete_prefix_end(handle.fileno(), size) == 17
        assert complete_prefix_end(handle.fileno(), 9) == 9
        assert complete_prefix_end(handle.fileno(), 7) == 0


def test_report_while_a_writer_appends_sees_no_phantom_unreadable_lines(tmp_path: Path) -> None:
    path, stop = tmp_path / "store.jsonl", tmp_path / "stop"
    template = json.loads(record_line())
    path.write_text("".join(record_line(session_id=f"old{i}") for i in range(200)))
    initial = path.stat().st_size
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), str(stop), json.dumps(template), "20"]
    )
    sessions_seen: list[int] = []
    live_reads = 0
    deadline = time.monotonic() + 60
    try:
        while path.stat().st_size < initial + 60_000 and time.monotonic() < deadline:
            time.sleep(0.05)
        while (live_reads < 2 or len(sessions_seen) < 5) and time.monotonic() < deadline:
            store = load_store(path)
            store.connection.close()
            live_reads += store.read_while_appending
            sessions_seen.append(store.n_sessions)
            assert store.n_unreadable == 0, store.warnings
            assert not [w for w in store.warnings if "unreadable" in w or "last line" in w]
    finally:
        stop.touch()
        writer.wait(timeout=30)
    assert live_reads >= 2, "the writer never appended during a read: the test proved nothing"
    assert sessions_seen == sorted(sessions_seen)
    assert sessions_seen[-1] > sessions_seen[0] > 200


def test_a_file_that_stops_mid_line_without_writers_is_still_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    path.write_text(record_line() + record_line(reviewer_id="r2")[:40])
    store = load_store(path)
    assert not store.read_while_appending
    assert store.n_records == 1
    assert any("last line is incomplete" in warning for warning in store.warnings)


def test_sigkilled_writers_leave_sessions_that_are_dropped_whole(tmp_path: Path) -> None:
    """10-member sessions (100 lines) cut by SIGKILL: none is pooled, each is reported."""
    path, never = tmp_path / "store.jsonl", tmp_path / "never"
    template = json.dumps(json.loads(record_line()))
    kills = 3
    for _ in range(kills):
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), str(never), template, "100"]
        )
        deadline = time.monotonic() + 30
        start = path.stat().st_size if path.exists() else 0
        while (path.stat().st_size if path.exists() else 0) < start + 60_000:
            assert time.monotonic() < deadline, "the writer never wrote"
            time.sleep(0.005)
        writer.kill()  # SIGKILL, while it appends line after line
        writer.wait(timeout=30)
    store = load_store(path)
    per_session = store.connection.execute(
        "SELECT DISTINCT count(*) FROM records GROUP BY session"
    ).fetchall()
    assert per_session == [(100,)]  # only whole sessions are pooled
    # each kill cuts one session (unless it lands between two: p ~ 1/100); a line torn by a
    # kill merges with the next writer's first line and cuts that session too
    assert 1 <= store.n_incomplete_sessions <= 2 * kills
    assert store.n_unreadable <= kills
    assert any("incomplete session(s)" in warning for warning in store.warnings)
