"""Where the report's kept monitor state stops: the start of the store's last session
(records/monitor_report_fold.py, ADR 0087)."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

from llm_council.bias_audit.records.monitor_report_fold import last_session_start

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _lines() -> list[bytes]:
    sessions = generate_sessions(CouncilSpec(n_members=3), 3, 5)
    return [(json.dumps(r) + "\n").encode() for s in sessions for r in s.records()]


def test_the_cut_is_the_last_sessions_first_line_or_after_a_closing_line() -> None:
    lines = _lines()
    per_session = len(lines) // 3
    whole = b"".join(lines)
    last_start = len(b"".join(lines[: 2 * per_session]))
    assert last_session_start(io.BytesIO(whole), 0, len(whole)) == last_start
    # a torn last line is not a line: the cut is unchanged
    torn = whole + lines[0][:10]
    assert last_session_start(io.BytesIO(torn), 0, len(torn)) == last_start
    # a blank or malformed last line closed the session before it: cut after it
    for closing in (b"\n", b"not json\n"):
        text = whole + closing
        assert last_session_start(io.BytesIO(text), 0, len(text)) == len(text)
    # the range starts (at a line, as a state's offset does) inside the last session: the
    # cut never goes before the range
    inside = last_start + len(lines[2 * per_session])
    assert last_session_start(io.BytesIO(whole), inside, len(whole)) == inside
    assert last_session_start(io.BytesIO(b""), 0, 0) == 0
