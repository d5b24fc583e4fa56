"""The monitor's state in the report's summary file (ADR 0087): a re-run folds only the
sessions after the saved state, and the section equals a full fold bit for bit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records import monitor_report_fold
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_state import current_monitor, state_path
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.bias_audit.report.analyses.monitor_summary import (
    MONITOR_ENTRY,
    monitor_entry,
    saved_monitor_state,
)
from llm_council.bias_audit.report.build import build_report
from llm_council.bias_audit.report.load.session_summaries import (
    SavedSection,
    read_summaries,
    summaries_path,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _sessions(n_members: int, count: int) -> list[list[ReviewRecord]]:
    council = CouncilSpec(
        n_members=n_members,
        noise_sds=[0.5 + 0.3 * index for index in range(n_members)],
        leniency=[-2.0] + [0.0] * (n_members - 1),
    )
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(council, count, 3)
    ]


def _append(store: Path, sessions: list[list[ReviewRecord]]) -> None:
    for records in sessions:
        append_records(store, records)
    state_path(store).unlink(missing_ok=True)  # a store imported in bulk keeps no state


def _monitor(store: Path, **options: object) -> str:
    """The report's monitor section, as text (NaN compares equal to itself there)."""
    return repr(build_report(store, n_resamples=20, **options).monitor)  # type: ignore[arg-type]


def _last_session_offset(store: Path) -> int:
    """Where the store's last session's lines begin (the report keeps the fold up to it)."""
    lines = store.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])["session_id"]
    offset = sum(len(line) for line in lines)
    for line in reversed(lines):
        if json.loads(line)["session_id"] != last:
            break
        offset -= len(line)
    return offset


@pytest.fixture
def fold_starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The byte offsets the monitor's folds start at (the real fold runs)."""
    starts: list[int] = []
    real = monitor_report_fold.fold_range

    def recording(state, handle, start, end):  # type: ignore[no-untyped-def]
        starts.append(start)
        return real(state, handle, start, end)

    monkeypatch.setattr(monitor_report_fold, "fold_range", recording)
    return starts


@pytest.mark.parametrize("n_members", [4, 9])
def test_appends_fold_only_the_new_sessions_and_equal_a_full_fold(
    tmp_path: Path, n_members: int, fold_starts: list[int]
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(n_members, 24)
    _append(store, sessions[:12])
    cold = _monitor(store)
    assert fold_starts[0] == 0
    saved = saved_monitor_state(read_summaries(store).sections)  # type: ignore[union-attr]
    assert saved is not None and saved.offset == _last_session_offset(store) > 0
    for part in (sessions[12:16], sessions[16:20], sessions[20:24]):
        covered = _last_session_offset(store)  # the last session is always read again
        _append(store, part)
        fold_starts.clear()
        again = _monitor(store)
        assert fold_starts[0] == covered  # only the last kept session and the appended bytes
        assert again == _monitor(store, session_summaries=False)  # a full fold from byte 0
    assert again != cold and ", sessions=24," in again


def test_a_session_appended_again_counts_once(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, 10)
    _append(store, sessions[:8])
    _monitor(store)
    _append(store, [sessions[3], *sessions[8:]])  # session 3 written twice
    again = _monitor(store)
    assert again == _monitor(store, session_summaries=False) and ", sessions=10," in again


def test_other_settings_refold_and_the_saved_state_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fold_starts: list[int]
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, 12)
    _append(store, sessions[:8])
    _monitor(store)
    _append(store, sessions[8:])
    monkeypatch.setenv("LLM_COUNCIL_MONITOR_DELTA0", "0.75")
    fold_starts.clear()
    other = _monitor(store)
    assert fold_starts[0] == 0 and "delta0=0.75" in other
    assert other == _monitor(store, session_summaries=False)


def test_the_larger_of_monitor_json_and_the_saved_state_is_continued(
    tmp_path: Path, fold_starts: list[int]
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, 14)
    _append(store, sessions[:4])
    _monitor(store)  # the report's state covers 4 sessions
    for records in sessions[4:8]:
        append_records(store, records)
    current_monitor(store)  # the middleware's state: 8 sessions
    at_eight = store.stat().st_size
    for records in sessions[8:12]:
        append_records(store, records)
    fold_starts.clear()
    assert _monitor(store) == _monitor(store, session_summaries=False)
    assert fold_starts[0] == at_eight  # monitor.json covered more than the report's 4
    at_twelve = _last_session_offset(store)
    for records in sessions[12:]:
        append_records(store, records)
    fold_starts.clear()
    assert _monitor(store) == _monitor(store, session_summaries=False)
    assert fold_starts[0] == at_twelve  # now the report's copy covers more than 8


def test_a_forged_monitor_json_is_ignored(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, 10)
    _append(store, sessions[:6])
    _monitor(store)
    _append(store, sessions[6:])
    state_path(store).write_bytes(b'{"forged": true}\n')
    assert _monitor(store) == _monitor(store, session_summaries=False)


def test_an_edit_before_the_covered_point_refolds(tmp_path: Path, fold_starts: list[int]) -> None:
    store = tmp_path / "s.jsonl"
    _append(store, _sessions(4, 8))
    _monitor(store)
    lines = store.read_bytes().splitlines(keepends=True)
    store.write_bytes(b"".join(lines[:-4]))  # the last session cut short, then rewritten
    fold_starts.clear()
    assert _monitor(store) == _monitor(store, session_summaries=False)
    assert fold_starts[0] == 0


def test_nothing_is_saved_for_the_monitor_without_the_summary_file(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    _append(store, _sessions(4, 6))
    _monitor(store, session_summaries=False)
    _monitor(store, since="2000-01-01")
    assert not summaries_path(store).exists() and not state_path(store).exists()


def test_a_malformed_saved_state_is_refolded_never_raised() -> None:
    bad = [
        SavedSection(1, {"state": "x"}, {"session_digests": np.zeros(2, np.uint64)}),
        SavedSection(1, {"state": {"format": "llm-council-monitor"}}, {}),
        SavedSection(1, {}, {"session_digests": np.zeros((2, 2), np.uint64)}),
        SavedSection(2, {"state": {}}, {"session_digests": np.zeros(1, np.uint64)}),
    ]
    for entry in bad:
        assert saved_monitor_state({MONITOR_ENTRY: entry}) is None
    assert saved_monitor_state(None) is None and monitor_entry(None) == {}


def test_a_summary_file_cut_by_a_killed_write_refolds(
    tmp_path: Path, fold_starts: list[int]
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, 16)
    _append(store, sessions[:12])  # past the 64 KiB the report holds back
    _monitor(store)
    path = summaries_path(store)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # torn
    _append(store, sessions[12:])
    fold_starts.clear()
    assert _monitor(store) == _monitor(store, session_summaries=False)
    assert fold_starts[0] == 0  # the torn file's state was not trusted
    saved = saved_monitor_state(read_summaries(store).sections)  # type: ignore[union-attr]
    assert saved is not None and saved.n_sessions == 15  # rewritten: all but the last
