"""The report's wording for small stores: counts name their denominators and plurals agree.

Issue 37 (C.5): a new user read "2 suspect session(s) of 5" in a 10-session store,
"0 suspect session(s) of 0" and "over 1 weekly windows". These tests render small stores
and check the words, and that each sentence's numbers are the report's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from bias_audit.report.conftest import scores_to_lines
from llm_council.bias_audit.report import build_report, render_html, render_text
from llm_council.bias_audit.report.analyses.amplification import Amplification
from llm_council.bias_audit.report.render.render_families import (
    MIN_DRIFT_WEEKS,
    amplification_summary_line,
    counted,
)
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store
from llm_council.stats.bias_effects.drift import weekly_series


@pytest.fixture(scope="module")
def ten_session_text(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, object]:
    """The default council, 10 sessions five minutes apart (one weekly window)."""
    path = tmp_path_factory.mktemp("wording") / "ten.jsonl"
    write_record_store(path, load_simulated_profiles(), 10, seed=1)
    report = build_report(path, n_resamples=20)
    return render_text(report), report


def test_counted_agrees_in_number() -> None:
    assert counted(0, "session") == "0 sessions"
    assert counted(1, "weekly window") == "1 weekly window"
    assert counted(2, "weekly window") == "2 weekly windows"


def test_amplification_names_the_sessions_it_counts_from(
    ten_session_text: tuple[str, object],
) -> None:
    text, report = ten_session_text
    amplified = report.families.amplification  # type: ignore[attr-defined]
    # the case that confused the reader: fewer agreeing sessions than sessions
    assert 0 < amplified.n_agreeing < amplified.n_sessions == 10
    expected = (
        f"  {amplified.n_suspect} suspect of the {counted(amplified.n_agreeing, 'session')} "
        "(of all 10) where the reviewers agreed strongly (mean pairwise r >= 0.7;"
    )
    assert expected in text
    assert "suspect session(s) of" not in text


def test_amplification_with_no_agreeing_session_says_the_screen_did_not_run(
    write_lines: Callable[[Sequence[str]], Path],
) -> None:
    # three reviewers whose scores of three answers disagree in every session: the mean
    # pairwise r of (1,2,3), (3,2,1), (2,3,1) is (-1 + -0.5 + 0.5) / 3 = -1/3 < 0.7
    table = {
        f"s{i}": {
            "ma": {"r1": 1.0, "r2": 3.0, "r3": 2.0},
            "mb": {"r1": 2.0, "r2": 2.0, "r3": 3.0},
            "mc": {"r1": 3.0, "r2": 1.0, "r3": 1.0},
        }
        for i in range(6)
    }
    report = build_report(write_lines(scores_to_lines(table)), n_resamples=20)
    amplified = report.families.amplification  # type: ignore[union-attr]
    assert amplified is not None and amplified.n_agreeing == 0
    html = render_html(report)
    assert (
        "<b>amplification</b>: no session (of 6) had its reviewers agreeing strongly "
        "(mean pairwise r &gt;= 0.7), the only sessions screened</li>" in html
    )
    text = render_text(report)
    assert (
        "  Screen not run: no session (of 6) had its reviewers agreeing strongly "
        "(mean pairwise r >= 0.7), and only such sessions are screened" in text
    )
    assert "of 0" not in text


def test_one_weekly_window_is_singular_and_says_drift_needs_three(
    ten_session_text: tuple[str, object],
) -> None:
    text, report = ten_session_text
    assert report.families.drift.n_weeks == 1  # type: ignore[attr-defined]
    assert "=== Drift over 1 weekly window (" in text
    assert "weekly windows (CUSUM" not in text
    assert (
        "  Not tested: drift needs sessions in at least 3 weekly windows (the CUSUM compares "
        "weekly means); these sessions span 1 weekly window." in text
    )
    assert "No change of leniency" not in text  # nothing was tested, so nothing is cleared


def test_several_weekly_windows_are_plural_and_tested(tmp_path: Path) -> None:
    path = tmp_path / "weeks.jsonl"
    # 24 sessions a day apart span 4 weekly windows
    write_record_store(
        path, load_simulated_profiles(), 24, seed=3, session_spacing=timedelta(days=1)
    )
    report = build_report(path, n_resamples=20)
    drift = report.families.drift  # type: ignore[union-attr]
    assert drift is not None and drift.n_weeks >= MIN_DRIFT_WEEKS
    text = render_text(report)
    assert f"=== Drift over {drift.n_weeks} weekly windows (" in text
    assert "Not tested: drift needs" not in text


def test_the_drift_minimum_is_the_weekly_series_minimum() -> None:
    """The text's "at least 3" is what llm_council.stats.bias_effects.drift.weekly_series requires."""
    values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    short = np.repeat(np.arange(MIN_DRIFT_WEEKS - 1), 3)
    enough = np.repeat(np.arange(MIN_DRIFT_WEEKS), 2)
    assert weekly_series(values, short) is None
    assert weekly_series(values, enough) is not None


def _amplification(n_sessions: int, n_agreeing: int, n_suspect: int) -> Amplification:
    return Amplification(
        n_sessions=n_sessions,
        n_agreeing=n_agreeing,
        n_suspect=n_suspect,
        expected_by_chance=0.05 * n_agreeing,
        excess_p_value=float("nan") if n_agreeing == 0 else 0.5,
        shared_order=True,
        agreement_threshold=0.7,
        significance_level=0.05,
    )


def test_every_session_agreeing_needs_no_second_count() -> None:
    line = amplification_summary_line(_amplification(1, 1, 1))
    assert line.startswith("  1 suspect of the 1 session where the reviewers agreed strongly")
    assert "of all" not in line and "one shared order" in line


def test_one_session_without_agreement_reads_as_not_run() -> None:
    line = amplification_summary_line(_amplification(1, 0, 0))
    assert line.startswith("  Screen not run: no session (of 1) had its reviewers")
    assert "nan" not in line.lower() and "p=" not in line
