"""Attacks on the record store and ``bias-report`` that broke in round 3 (issue 26).

Every test walks the real CLI (``bias-report``, ``bias-compact``) on hand-written JSONL
stores, so it holds whatever module the loading code lives in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from llm_council.cli.app import _run, app

MODELS = ("m1", "m2", "m3")
REVIEWERS = ("r1", "r2", "r3")


def _record(session: int, reviewer: str, position: int, score: Any, **extra: Any) -> dict[str, Any]:
    return {
        "schema_version": 2,
        "session_id": f"s{session:02d}",
        "timestamp": "2026-01-10T12:00:00Z",
        "reviewer_id": reviewer,
        "model_id": MODELS[position],
        "position": position,
        "n_candidates": len(MODELS),
        "response_length_chars": 600 + 300 * position,
        "response_length_words": 100 + 50 * position,
        "score_value": score,
        "score_scale": [1.0, 10.0],
        "rank": None,
        "is_self_review": False,
        "council_config_hash": "sha256:test",
        **extra,
    }


def _score(session: int, reviewer_index: int, position: int) -> float:
    return float(3 + (session * 7 + reviewer_index * 3 + position) % 6)


def _records(
    n_sessions: int = 12, reviewers: tuple[str, ...] = REVIEWERS, counted: bool = False
) -> list[dict[str, Any]]:
    """Complete sessions: every reviewer scores every model (``counted``: schema-2 counts)."""
    per_session = len(reviewers) * len(MODELS)
    extra = {"session_n_records": per_session} if counted else {}
    return [
        _record(session, reviewer, position, _score(session, index, position), **extra)
        for session in range(n_sessions)
        for index, reviewer in enumerate(reviewers)
        for position in range(len(MODELS))
    ]


def _write(path: Path, records: list[dict[str, Any]], raw: dict[int, str] | None = None) -> Path:
    """One JSON line per record; ``raw`` replaces the score of record i by literal JSON."""
    lines = []
    for index, record in enumerate(records):
        line = json.dumps(record)
        if raw and index in raw:
            line = line.replace(
                f'"score_value": {json.dumps(record["score_value"])}',
                f'"score_value": {raw[index]}',
            )
            assert raw[index] in line
        lines.append(line + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _report(
    store: Path | str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, list[str]]:
    code = _run(
        ["bias-report", "--store", str(store), "--bootstrap", "20", *extra], "llm-council", app
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


# item 1 -------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e308"])
def test_one_non_finite_or_absurd_score_is_dropped_with_a_counted_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], literal: str
) -> None:
    records = _records()
    store = _write(tmp_path / "store.jsonl", records, raw={4: literal})
    code, out, err = _report(store, capsys, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["n_records"] == len(records) - 1
    warnings = [line for line in err if "score" in line]
    assert warnings == [
        f"warning: {store}: dropped 1 record(s) whose score is not a finite number (NaN, an"
        " infinity, beyond 1e6 in size, a string or a boolean)"
    ]
    assert any(line in report["warnings"] for line in [warnings[0].removeprefix("warning: ")])


def test_in_a_store_with_session_counts_a_nan_is_dropped_not_pooled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(counted=True)
    store = _write(tmp_path / "store.jsonl", records, raw={7: "NaN"})
    code, out, err = _report(store, capsys, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    # the record goes, its session stays (its other lines are complete and sound)
    assert report["n_records"] == len(records) - 1 and report["n_sessions"] == 12
    assert report["n_incomplete_sessions"] == 0
    assert sum("dropped 1 record(s) whose score" in line for line in err) == 1


# item 7: a string or a boolean score -------------------------------------------------


@pytest.mark.parametrize("literal", ['"8"', "true", "false", "[8]"])
def test_a_string_or_boolean_score_is_dropped_with_a_counted_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], literal: str
) -> None:
    records = _records()
    store = _write(tmp_path / "store.jsonl", records, raw={4: literal, 10: literal})
    code, out, err = _report(store, capsys, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["n_records"] == len(records) - 2
    assert (
        sum("dropped 2 record(s) whose score is not a finite number (" in line for line in err) == 1
    )


# item 2 -------------------------------------------------------------------------------

HOSTILE = ("evil\x1b[2J\x1b]0;pwned\x07", "admin\u202egnp.exe", "bell\x07x")
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def test_csv_to_stdout_passes_no_terminal_control(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _write(tmp_path / "store.jsonl", _records(reviewers=HOSTILE))
    code, out, err = _report(store, capsys, "--format", "csv")
    assert code == 0, err
    assert not UNSAFE.search(out)
    assert "evil\\u001b[2J\\u001b]0;pwned\\u0007" in out and "admin\\u202egnp.exe" in out
    # the file keeps the ids as they are (a spreadsheet reads them; no terminal involved)
    target = tmp_path / "report.csv"
    code, _, err = _report(store, capsys, "--format", "csv", "--out", str(target))
    assert code == 0, err
    assert HOSTILE[0] in target.read_text(encoding="utf-8")


# item 3 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://auditor:s3cret-pw@localhost:99999/records",
        "postgresql://auditor:s3cret-pw@[::1/records",
        "postgres://auditor:s3cret-pw@[::1]:70000/records",
    ],
)
def test_a_malformed_postgres_url_is_one_line_without_the_password(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _report(url, capsys)
    assert code != 0 and out == ""
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "s3cret-pw" not in err[0] and "Traceback" not in err[0]


# item 6 -------------------------------------------------------------------------------


@pytest.mark.parametrize("counted", [False, True], ids=["no-session-counts", "ask-store"])
def test_a_repeated_session_is_pooled_once_with_a_correct_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], counted: bool
) -> None:
    records = _records(counted=counted)
    repeated = [r for r in records if r["session_id"] == "s03"]
    store = _write(tmp_path / "store.jsonl", records + repeated)
    code, out, err = _report(store, capsys, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["n_records"] == len(records) and report["n_sessions"] == 12
    assert report["n_incomplete_sessions"] == 0
    assert not any("killed" in line for line in err), err
    assert [line for line in err if "more than once" in line] == [
        f"warning: {store}: 1 session(s) found more than once (every record repeated, as when"
        f" a session is appended twice): {len(repeated)} repeated record(s) dropped, each"
        " session pooled once"
    ]


# item 7: a store path that is a symlink to a file that is not a store -----------------


def _ask(capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = _run(["ask", "What is tail latency?", "--seed", "1", "--json"], "llm-council", app)
    # the simulated council says so on stderr first (issue 37 C.2); the error is the rest
    lines = capsys.readouterr().err.splitlines()
    return code, [line for line in lines if not line.startswith("note: ")]


@pytest.mark.parametrize("through_symlink", [True, False], ids=["symlink", "regular-path"])
def test_a_store_path_naming_a_file_that_is_not_a_store_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    through_symlink: bool,
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\nsecond line\n", encoding="utf-8")
    store = tmp_path / "store.jsonl"
    if through_symlink:
        store.symlink_to(notes)
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store if through_symlink else notes))
    code, err = _ask(capsys)
    assert code != 0
    assert len(err) == 1 and err[0].startswith("error: ") and "not a bias-audit store" in err[0]
    assert notes.read_text(encoding="utf-8") == "my notes\nsecond line\n"


def test_a_symlink_to_a_real_store_or_an_empty_file_is_still_a_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _write(tmp_path / "real.jsonl", _records(n_sessions=1))
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    for target in (real, empty):
        link = tmp_path / f"link-to-{target.name}"
        link.symlink_to(target)
        before = len(target.read_text().splitlines())
        monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(link))
        code, err = _ask(capsys)
        assert code == 0, err
        assert len(target.read_text().splitlines()) > before


# item 7: stale temporary files of a killed bias-compact ------------------------------


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_rerun_of_bias_compact_removes_the_temporary_files_of_a_killed_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    store = _write(tmp_path / "store.jsonl", _records(n_sessions=3, counted=True))
    out = tmp_path / "parquet"
    assert _run(["bias-compact", "--store", str(store), "--out", str(out)], "x", app) == 0
    partition = next(out.glob("date=*"))
    stale = partition / f".part-0.parquet.{_dead_pid()}.tmp"
    stale.write_bytes(b"PAR1 half a file")  # what a SIGKILL mid-COPY leaves
    alive = partition / f".part-0.parquet.{os.getppid()}.tmp"  # a live process: not touched
    alive.write_bytes(b"PAR1 still being written")
    capsys.readouterr()
    assert _run(["bias-compact", "--store", str(store), "--out", str(out)], "x", app) == 0
    err = capsys.readouterr().err
    assert not stale.exists() and alive.exists()
    assert "removed 1 stale temporary file(s) left by an interrupted bias-compact" in err


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_record_never_holds_a_non_finite_score(bad: float) -> None:
    # what ask writes goes through this schema (records_from_session already maps a
    # non-finite parsed score to None; the schema now refuses one from any other writer)
    from pydantic import ValidationError

    from llm_council.bias_audit.records.schema import ReviewRecord

    fields = {**_record(0, "r1", 0, 7.0), "score_value": bad}
    fields.pop("schema_version")
    with pytest.raises(ValidationError, match="score_value"):
        ReviewRecord(**fields)
    assert ReviewRecord(**{**fields, "score_value": 7.0}).score_value == 7.0
