"""The report's anytime-monitor section (report/analyses/monitor.py, ADR 0053): the same
monitor the sessions answer with, read without writing beside the store, in every format."""

from __future__ import annotations

import csv
import io
import os
import sys
from pathlib import Path

import pytest

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_state import current_monitor, state_path
from llm_council.bias_audit.records.monitor_status import monitor_status
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.bias_audit.report.analyses.monitor import GUARANTEE_NOTE, monitor_section
from llm_council.bias_audit.report.dashboard.dashboard_monitor import monitor_section_html
from llm_council.bias_audit.report.render.render_monitor import (
    monitor_csv_rows,
    monitor_text_lines,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _write_store(
    path: Path, n_sessions: int, n_members: int = 4, skip: int = 0, **spec: object
) -> None:
    """Sessions ``skip`` to ``skip + n_sessions`` of one generated stream (ids differ)."""
    council = CouncilSpec(
        n_members=n_members,
        noise_sds=[0.5 + 0.3 * index for index in range(n_members)],
        **spec,  # type: ignore[arg-type]
    )
    for session in generate_sessions(council, skip + n_sessions, 3)[skip:]:
        append_records(
            path, [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        )


def _listing(folder: Path) -> dict[str, bytes]:
    return {entry.name: entry.read_bytes() for entry in folder.iterdir() if entry.is_file()}


def test_the_section_is_the_stores_monitor_and_finds_a_harsh_judge(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    _write_store(store, 40, leniency=[-2.0, 0.0, 0.0, 0.0])
    expected = monitor_status(current_monitor(store, save=False))
    section = monitor_section(store)
    assert section.status == "ok" and section.sessions == 40 == expected["sessions"]
    assert section.confirmed == expected["confirmed"] == ["judge-0"]
    leniency = next(r for r in section.rows if (r.reviewer, r.bias) == ("judge-0", "leniency"))
    cell = expected["reviewers"]["judge-0"]["biases"]["leniency"]
    assert leniency.status == "confirmed" and leniency.direction == "harsh"
    assert leniency.confirmed_at_session == cell["confirmed_at_session"]
    assert [leniency.estimate, leniency.low, leniency.high] == [cell["estimate"], *cell["bounds"]]
    assert leniency.low < -0.5  # confirmed: the bounds lie outside the practical null
    assert len(section.rows) == 4 * 3


def test_reading_writes_nothing_beside_the_store(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    store = folder / "s.jsonl"
    _write_store(store, 12)
    for lock in folder.glob("*.lock"):
        lock.unlink()  # the appender's lock file: the report must not create one either
    before = _listing(folder)
    assert monitor_section(store).sessions == 12
    assert _listing(folder) == before  # no state, no lock, no temporary file
    # a saved state that is stale (the store grew since) is brought up to date in memory
    current_monitor(store)
    _write_store(store, 3, skip=12)
    stale = state_path(store).read_bytes()
    before = _listing(folder)
    assert monitor_section(store).sessions == 15
    assert state_path(store).read_bytes() == stale and _listing(folder) == before
    # a forged one is rebuilt in memory, and left as it was
    state_path(store).write_bytes(b'{"format": "llm-council-monitor", "seal": "no"}')
    before = _listing(folder)
    assert monitor_section(store).sessions == 15
    assert _listing(folder) == before


def test_three_member_councils_do_not_monitor_slot_preference(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    _write_store(store, 10, n_members=3)
    section = monitor_section(store)
    slot = [row for row in section.rows if row.bias == "slot_preference"]
    assert len(slot) == 3 and {row.status for row in slot} == {"not estimated"}
    assert all(row.sessions == 0 for row in slot)
    text = "\n".join(monitor_text_lines(section))
    assert "slot_preference: not estimated" in text


def test_unavailable_sections_say_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    section = monitor_section(parquet)
    assert section.status == "unavailable" and "Parquet" in section.reason
    store = tmp_path / "s.jsonl"
    _write_store(store, 2)
    monkeypatch.setenv("LLM_COUNCIL_MONITOR_ALPHA", "nan")
    bad = monitor_section(store)
    assert bad.status == "unavailable" and "LLM_COUNCIL_MONITOR_ALPHA" in bad.reason
    assert monitor_text_lines(bad)[-1].startswith("Anytime monitor (ADR 0053): unavailable:")
    assert monitor_csv_rows(bad)[0][1].startswith("unavailable: LLM_COUNCIL_MONITOR_ALPHA")
    assert "Unavailable" in monitor_section_html(bad)


def test_every_format_carries_the_guarantee_and_the_rows(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    _write_store(store, 40, leniency=[-2.0, 0.0, 0.0, 0.0])
    section = monitor_section(store)
    text = "\n".join(monitor_text_lines(section))
    assert GUARANTEE_NOTE in text and "not part of the report's findings procedure" in text.lower()
    assert "judge-0 leniency: CONFIRMED at session" in text
    rows = monitor_csv_rows(section)
    assert len(rows) == 2 * len(section.rows) and all(len(row) == 8 for row in rows)
    effect = next(row for row in rows if row[1] == "judge-0 leniency" and row[2] == "effect_points")
    assert float(effect[3]) < 0 and float(effect[4]) < float(effect[3]) < float(effect[5])
    assert effect[6] == ""  # an e-process has no p-value
    written = io.StringIO()
    csv.writer(written).writerows(rows)
    assert "judge-0 leniency" in written.getvalue()
    html = monitor_section_html(section)
    assert 'id="section-monitor"' in html and 'class="flagged"' in html
    assert "not a finding" in html


def test_hostile_reviewer_names_are_escaped(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    hostile = '<script>alert(1)</script>\u202e"'
    council = CouncilSpec(n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.4])
    for session in generate_sessions(council, 5, 4):
        records = []
        for raw in session.records():
            for key in ("reviewer_id", "model_id"):
                if raw[key] == "judge-1":
                    raw[key] = hostile
            records.append(ReviewRecord.model_validate(upgrade_record(raw)))
        append_records(store, records)
    section = monitor_section(store)
    assert hostile in {row.reviewer for row in section.rows}
    html = monitor_section_html(section)
    assert "<script>" not in html and "&lt;script&gt;" in html


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads anything")
def test_an_unreadable_store_is_unavailable(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    _write_store(store, 2)
    store.chmod(0)
    try:
        section = monitor_section(store)
    finally:
        store.chmod(0o600)
    assert section.status == "unavailable" and "cannot read" in section.reason
