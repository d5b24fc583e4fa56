"""The tail load's gate (ADR 0081): open only when the summary file is in use and no part
of the report is computed from every record; today it is switched off, and a report writes
no resume point."""

from __future__ import annotations

from pathlib import Path

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.incremental_runner import tail_load_allowed
from llm_council.bias_audit.report.build import COMPUTED_FROM_EVERY_RECORD, TAIL_LOAD_ENABLED
from llm_council.bias_audit.report.load.session_summaries import read_summaries


def test_the_gate_opens_only_with_the_file_in_use_and_nothing_computed_from_every_record() -> None:
    assert tail_load_allowed((), enabled=True)
    assert not tail_load_allowed((), enabled=False)
    assert not tail_load_allowed(("position",), enabled=True)
    assert not tail_load_allowed(("position",), enabled=False)


def test_nothing_is_computed_from_every_record_yet_the_switch_keeps_the_tail_load_off() -> None:
    """Position left the list last (ADR 0088); the tail load stays off by an explicit switch
    until its two open faults are fixed (ADR 0081)."""
    assert COMPUTED_FROM_EVERY_RECORD == ()
    assert tail_load_allowed(COMPUTED_FROM_EVERY_RECORD, enabled=True)
    assert TAIL_LOAD_ENABLED is False


def test_a_report_today_saves_its_summaries_without_a_resume_point(tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    write_store(store, generate_sessions(CouncilSpec(n_members=3), 40, 5))
    build_report(store, n_resamples=20, seed=1)
    saved = read_summaries(store)
    assert saved is not None
    assert saved.resume is None
