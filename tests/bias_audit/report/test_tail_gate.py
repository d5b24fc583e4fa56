"""The tail load's gate (ADR 0081): open only when the summary file is in use and no part
of the report is computed from every record, which is the case since position was merged
(ADR 0088): a report saves a resume point, and a re-run reads only the tail."""

from __future__ import annotations

from pathlib import Path

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.incremental_runner import tail_load_allowed
from llm_council.bias_audit.report.build import COMPUTED_FROM_EVERY_RECORD
from llm_council.bias_audit.report.load.session_summaries import read_summaries


def test_the_gate_opens_only_with_the_file_in_use_and_nothing_computed_from_every_record() -> None:
    assert tail_load_allowed((), enabled=True)
    assert not tail_load_allowed((), enabled=False)
    assert not tail_load_allowed(("position",), enabled=True)
    assert not tail_load_allowed(("position",), enabled=False)


def test_nothing_is_computed_from_every_record_so_the_gate_is_open() -> None:
    assert COMPUTED_FROM_EVERY_RECORD == ()
    assert tail_load_allowed(COMPUTED_FROM_EVERY_RECORD, enabled=True)


def test_a_report_saves_a_resume_point_and_a_re_run_reads_only_the_tail(tmp_path: Path) -> None:
    import structlog

    store = tmp_path / "store.jsonl"
    sessions = generate_sessions(CouncilSpec(n_members=3), 40, 5)
    write_store(store, sessions[:30])
    build_report(store, n_resamples=20, seed=1)
    saved = read_summaries(store)
    assert saved is not None and saved.resume is not None
    with store.open("a", encoding="utf-8") as stream:
        grown = tmp_path / "more.jsonl"
        write_store(grown, sessions[30:])
        stream.write(grown.read_text(encoding="utf-8"))
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        again = build_report(store, n_resamples=20, seed=1)
    assert any(entry["event"] == "report_tail_loaded" for entry in logs)
    cold = build_report(store, n_resamples=20, seed=1, session_summaries=False)
    assert again.n_sessions == cold.n_sessions == 40
