"""A large store's sections summarized a block of sessions at a time equal the report of
every session at once (ADR 0092): the blocks' summaries merge exactly, as an append's do."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import structlog

from bias_audit.report.analyses.test_incremental_runner import (
    STORES,
    _independent_lines,
    assert_same_report,
)
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses import session_chunks
from llm_council.bias_audit.report.analyses.session_chunks import chunk_bounds

IN_BLOCKS = "report_sessions_in_blocks"
NOT_IN_BLOCKS = "report_section_not_in_blocks"


def _report(store: Path, **options: object) -> tuple[str, list[dict[str, object]]]:
    """The report as canonical JSON (as the incremental tests compare it), and its logs."""
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        built = build_report(store, n_resamples=20, seed=3, reproducible=True, **options)
    report = built.to_dict()
    report.pop("generated_at")
    report.pop("store")
    return json.dumps(report, sort_keys=True, allow_nan=True), logs


def _in_blocks(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Every store summarized in blocks of about ``size`` records (the defaults: 2M, 1M)."""
    monkeypatch.setattr(session_chunks, "CHUNKED_ABOVE_RECORDS", 0)
    monkeypatch.setattr(session_chunks, "CHUNK_RECORDS", size)


def test_blocks_close_at_the_size_and_cover_every_session_once() -> None:
    codes = np.array([0, 1, 2, 3, 5, 8])
    counts = np.array([4, 4, 4, 9, 1, 1])
    # by hand: 4+4 = 8 >= 8 closes (0, 1); 4+9 closes (2, 3); 1+1 is left, closed at the end
    assert chunk_bounds(codes, counts, 8) == [(0, 1), (2, 3), (5, 8)]
    assert chunk_bounds(codes, counts, 1) == [(int(c), int(c)) for c in codes]
    assert chunk_bounds(codes, counts, 10**9) == [(0, 8)]
    assert chunk_bounds(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 8) == []


@pytest.mark.parametrize("name", list(STORES))
def test_a_report_in_blocks_equals_the_report_at_once(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store.jsonl"
    lines = STORES[name](tmp_path)
    store.write_bytes(b"".join(lines))
    at_once, logs = _report(store, session_summaries=False)
    assert not [entry for entry in logs if entry["event"] == IN_BLOCKS]  # small: no blocks
    _in_blocks(monkeypatch, len(lines) // 7)
    blocked, logs = _report(store, session_summaries=False)
    counted = [entry["blocks"] for entry in logs if entry["event"] == IN_BLOCKS]
    assert counted and counted[0] >= 6  # about seven blocks (a session is never split)
    assert_same_report(blocked, at_once)


def test_blocks_then_an_append_merge_with_the_saved_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file saved by a report in blocks merges with an append (itself in blocks)."""
    lines = STORES["independent-4-missing"](tmp_path)
    store = tmp_path / "store.jsonl"
    cut = int(len(lines) * 0.7) + 3  # a session straddles the cut
    store.write_bytes(b"".join(lines[:cut]))
    _in_blocks(monkeypatch, len(lines) // 9)
    _report(store)
    with store.open("ab") as stream:
        stream.write(b"".join(lines[cut:]))
    grown, logs = _report(store)
    assert not [entry for entry in logs if entry["event"] == "report_sessions_rebuilt"]
    monkeypatch.setattr(session_chunks, "CHUNKED_ABOVE_RECORDS", 10**12)
    assert_same_report(grown, _report(store, session_summaries=False)[0])


def test_blocks_that_refuse_to_merge_fall_back_to_every_session_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """judge-0 gives rank points in the first half of the sessions, scores in the second: rank-only
    in one block and not in the union, reliability's blocks refuse to merge (its rank-only
    set is decided over every session), and it is summarized at once."""
    lines = _independent_lines(tmp_path, 4)
    sessions = sorted({json.loads(line)["session_id"] for line in lines})
    first_half = set(sessions[: len(sessions) // 2])
    switched = []
    for line in lines:
        record = json.loads(line)
        if record["reviewer_id"] == "judge-0" and record["session_id"] in first_half:
            # rank points: the top slot n_candidates points, down to 1 (tables.py's rule)
            record["score_value"] = float(record["n_candidates"] - record["position"])
        switched.append((json.dumps(record) + "\n").encode())
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(switched))
    at_once, _ = _report(store, session_summaries=False)
    _in_blocks(monkeypatch, len(lines) // 4)
    blocked, logs = _report(store, session_summaries=False)
    refused = {str(entry["section"]) for entry in logs if entry["event"] == NOT_IN_BLOCKS}
    assert "reliability" in refused
    assert_same_report(blocked, at_once)


def test_a_store_with_check_reviews_in_blocks_equals_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The blocks' views keep each block's own check reviews (the causal checks section)."""
    from bias_audit.report.analyses.test_causal_checks import (
        CheckWorld,
        generate_check_lines,
        write_store,
    )

    world = CheckWorld(n_sessions=40, slot_effect={"r1": -0.6}, padding_effect={"r2": 1.0})
    store = write_store(tmp_path / "s.jsonl", generate_check_lines(world, 0))
    at_once, _ = _report(store, session_summaries=False)
    assert json.loads(at_once)["causal_checks"]  # something to compare
    _in_blocks(monkeypatch, 150)
    blocked, logs = _report(store, session_summaries=False)
    assert [entry["blocks"] for entry in logs if entry["event"] == IN_BLOCKS][0] >= 3
    assert_same_report(blocked, at_once)
