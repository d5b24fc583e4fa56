"""A store line whose text holds a lone UTF-16 surrogate escape (``\\ud800``) is malformed
JSON to the report's loader; the monitor's fold skips it too instead of failing to digest
its session id (it raised ``UnicodeEncodeError`` and took ``bias-report`` down)."""

from __future__ import annotations

import json
from pathlib import Path

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.records.monitor_fold import _parse
from llm_council.bias_audit.report import build_report

LONE = "\\ud800x"  # as written in the JSON text: a high surrogate with no low one after it
PAIR = "\\ud83d\\ude00"  # a valid pair: one character (U+1F600)


def _line(record: dict[str, object], suffix: str) -> bytes:
    text = json.dumps(record)
    session = str(record["session_id"])
    return text.replace(f'"{session}"', f'"{session}{suffix}"').encode() + b"\n"


def test_a_lone_surrogate_line_is_skipped_and_a_pair_is_kept(tmp_path: Path) -> None:
    source = tmp_path / "source.jsonl"
    write_store(source, generate_sessions(CouncilSpec(n_members=3), 12, 1))
    records = [json.loads(line) for line in source.read_text().splitlines()]
    sessions = sorted({str(record["session_id"]) for record in records})
    lone_session, pair_session = sessions[3], sessions[5]
    store = tmp_path / "store.jsonl"
    with store.open("wb") as out:
        for record in records:
            suffix = {lone_session: LONE, pair_session: PAIR}.get(str(record["session_id"]), "")
            out.write(_line(record, suffix))

    lines = store.read_bytes().splitlines()
    lone_line = next(line for line in lines if LONE.encode() in line)
    pair_line = next(line for line in lines if PAIR.encode() in line)
    assert _parse(lone_line) is None
    kept = _parse(pair_line)
    assert kept is not None and kept.session_id == pair_session + "\U0001f600"

    for _ in range(2):  # the first run saves the summary file, the second reads it back
        report = build_report(store)
        assert report.n_sessions == len(sessions) - 1  # the lone-surrogate session is gone
        assert report.monitor is not None
