"""The bias record store under concurrent writers and crashes.

- Several processes appending at once: every record present exactly once, no torn or
  interleaved line (counted and parsed). Full size (8 processes x 5,000 sessions) is
  ``-m slow``, and ``benchmarks/concurrent_writers.py`` prints its timing.
- A writer killed with SIGKILL mid-run: every complete line is readable, a torn tail is
  skipped with a warning, the lock is not left held, and the next writer's lines are
  intact (never glued to the torn fragment).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from llm_council.bias_audit.records.jsonl_store import (
    IncompleteSessionWarning,
    MalformedRecordWarning,
    RecordReader,
    TornRecordWarning,
    append_records,
)

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "concurrent_writers.py"


def _load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("concurrent_writers", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


writers = _load_benchmark()


def _check_concurrent_appends(path: Path, processes: int, sessions: int) -> None:
    writers.run(path, processes, sessions, members=5)
    counts = writers.verify(path, processes, sessions, members=5)
    assert counts == {
        "expected": processes * sessions * 25,
        "lines": processes * sessions * 25,
        "unparseable_lines": 0,
        "duplicates": 0,
        "missing": 0,
        "unexpected": 0,
    }
    reader = RecordReader(path, strict=True)  # the store's own reader agrees
    assert sum(1 for _ in reader) == counts["lines"] and reader.skipped == []


def test_concurrent_writers_each_record_exactly_once(tmp_path: Path) -> None:
    _check_concurrent_appends(tmp_path / "records.jsonl", processes=4, sessions=150)


@pytest.mark.slow
def test_eight_writers_five_thousand_sessions_each(tmp_path: Path) -> None:
    _check_concurrent_appends(tmp_path / "records.jsonl", processes=8, sessions=5000)


WRITER_LOOP = """
import sys
from pathlib import Path
sys.path.insert(0, {benchmarks!r})
from concurrent_writers import session_records
from llm_council.bias_audit.records.jsonl_store import append_records
session = 0
while True:
    append_records(Path({path!r}), session_records(99, session, 5))
    session += 1
"""


def _read(path: Path) -> tuple[list[object], RecordReader, list[warnings.WarningMessage]]:
    reader = RecordReader(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = list(reader)
    return records, reader, caught


def test_writer_killed_mid_run_loses_no_complete_line_and_the_next_writer_is_clean(
    tmp_path: Path,
) -> None:
    path = tmp_path / "records.jsonl"
    code = WRITER_LOOP.format(benchmarks=str(BENCHMARK.parent), path=str(path))
    process = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 120  # a hang-catcher: the writer needs about a second
        while (not path.exists() or path.stat().st_size < 300_000) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    raw = path.read_bytes()
    complete_lines = raw.count(b"\n")
    assert complete_lines > 100

    records, reader, caught = _read(path)
    # every complete line is a readable record, except those of a session the kill cut short
    dropped = sum(found for found, _ in reader.incomplete_sessions.values())
    assert len(records) + dropped == complete_lines
    assert len(reader.incomplete_sessions) <= 1
    assert reader.torn_tail == (not raw.endswith(b"\n"))
    expected = [IncompleteSessionWarning] if reader.incomplete_sessions else []
    expected += [TornRecordWarning] if reader.torn_tail else []
    assert sorted(w.category.__name__ for w in caught) == sorted(c.__name__ for c in expected)

    started = time.monotonic()
    append_records(path, writers.session_records(7, 0, 5))  # the lock died with the writer
    assert time.monotonic() - started < 20  # no wait on the dead lock (30 s timeout); generous
    after, _, caught = _read(path)
    assert after[: len(records)] == records
    assert after[len(records) :] == writers.session_records(7, 0, 5)
    # only an old torn line and the session it cut short, if any
    assert {w.category for w in caught} <= {MalformedRecordWarning, IncompleteSessionWarning}


def test_a_torn_tail_is_skipped_with_a_warning_and_never_swallows_the_next_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "records.jsonl"
    first = writers.session_records(1, 0, 5) + writers.session_records(1, 1, 5)
    append_records(path, first)
    torn = writers.session_records(1, 2, 5)[0].model_dump_json().encode()[:97]
    with path.open("ab") as handle:  # what a writer dying inside a write leaves behind
        handle.write(torn)

    records, reader, caught = _read(path)
    assert records == first and reader.torn_tail
    assert reader.skipped == [(51, reader.skipped[0][1])] and reader.skipped[0][1].startswith(
        "torn last line"
    )
    assert [w.category for w in caught] == [TornRecordWarning]
    assert f"{path}:51: skipped a torn last line" in str(caught[0].message)

    later = writers.session_records(2, 0, 5)
    append_records(path, later)
    lines = path.read_bytes().split(b"\n")
    assert lines[50] == torn  # the fragment stays alone on its line...
    records, reader, caught = _read(path)
    assert records == first + later  # ...and the next writer's records are all intact
    assert [number for number, _ in reader.skipped] == [51] and not reader.torn_tail
    assert [w.category for w in caught] == [MalformedRecordWarning]


def test_a_missing_store_directory_is_created_and_an_unwritable_one_is_a_record_error(
    tmp_path: Path,
) -> None:
    from llm_council.errors import RecordError

    nested = tmp_path / "a" / "b" / "records.jsonl"
    assert append_records(nested, writers.session_records(0, 0, 2)) == 4
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    with pytest.raises(RecordError, match="file-not-dir"):
        append_records(blocked / "records.jsonl", writers.session_records(0, 0, 2))
    if os.geteuid() != 0:  # root ignores permissions
        readonly = tmp_path / "ro"
        readonly.mkdir(mode=0o500)
        with pytest.raises(RecordError):
            append_records(readonly / "records.jsonl", writers.session_records(0, 0, 2))


def test_bias_report_over_a_torn_store_warns_once_and_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import main

    path = tmp_path / "records.jsonl"
    for session in range(6):
        append_records(path, writers.session_records(0, session, 4))
    with path.open("ab") as handle:
        handle.write(writers.session_records(0, 99, 4)[0].model_dump_json().encode()[:60])
    with pytest.raises(SystemExit) as caught:
        main(["bias-report", "--store", str(path), "--format", "json", "--bootstrap", "20"])
    captured = capsys.readouterr()
    assert caught.value.code == 0
    warnings_shown = [line for line in captured.err.splitlines() if line.startswith("warning:")]
    assert len(warnings_shown) == 1 and str(path) in warnings_shown[0]
    assert "incomplete" in warnings_shown[0] or "torn" in warnings_shown[0]
    report = json.loads(captured.out)
    assert (report["n_records"], report["n_sessions"]) == (96, 6)  # every complete line, no more
