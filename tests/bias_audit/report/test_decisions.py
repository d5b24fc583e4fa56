"""Decisions affected (ADR 0046): the debiased winner against the raw winner, from records."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bias_audit.report.conftest import record_line
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.render.render_tables import render_csv
from llm_council.bias_audit.report.render.render_text import render_text
from llm_council.stats.proportions import wilson_interval


def test_a_biased_council_changes_some_winners_and_a_null_one_almost_none(
    biased_store: Path, null_store: Path
) -> None:
    biased = build_report(biased_store, n_resamples=20).decisions
    null = build_report(null_store, n_resamples=20).decisions
    assert biased is not None and null is not None
    assert biased.overall.n_sessions == 400 and null.overall.n_sessions == 400
    assert biased.n_adjusted_reviewers == 5
    # a 1.5-point harsh judge, a primacy judge and a verbose one: winners do change
    assert biased.overall.n_changed > 20
    # no bias: the shrunk adjustments are near zero and move the winner rarely (the
    # rank-vs-score difference still changes some: ranks and scores disagree on close calls)
    assert null.overall.n_changed_by_adjustments < biased.overall.n_changed_by_adjustments / 5
    assert null.overall.share_changed_by_adjustments.estimate < 0.02
    assert null.overall.n_ties_broken > 0  # integer scores: the top ties often
    low, high = wilson_interval(biased.overall.n_changed, 400)
    assert (biased.overall.share_changed.ci_low, biased.overall.share_changed.ci_high) == (
        pytest.approx((low, high))
    )
    # per week: the weeks partition the timed sessions
    assert sum(w.n_sessions for w in biased.weekly) == 400
    assert sum(w.n_changed for w in biased.weekly) == biased.overall.n_changed


def _session(session: str, day: str, scores: dict[str, dict[str, float]]) -> list[str]:
    """Lines of one session: reviewer -> {candidate: score}, shown in dict order."""
    lines = []
    n = sum(len(given) for given in scores.values())
    for reviewer, given in scores.items():
        ranked = sorted(given, key=lambda c: -given[c])
        for position, (candidate, score) in enumerate(given.items()):
            lines.append(
                record_line(
                    session_id=session,
                    timestamp=f"{day}T12:00:00Z",
                    reviewer_id=reviewer,
                    model_id=candidate,
                    position=position,
                    n_candidates=len(given),
                    score_value=score,
                    rank=ranked.index(candidate) + 1,
                    is_self_review=reviewer == candidate,
                    session_n_records=n,
                )
            )
    return lines


def test_the_section_renders_in_text_csv_and_json_and_ignores_second_orders(
    write_lines: Callable[[Sequence[str]], Path],
) -> None:
    # x is 3 points harsh in every session: its own answer wins raw (it never scores
    # itself), loses once x's leniency is removed (the hand example of
    # tests/test_debiased_aggregate.py, 12 sessions so the fit has history)
    lines: list[str] = []
    for index in range(12):
        day = "2026-01-05" if index < 6 else "2026-01-13"
        lines += _session(
            f"s{index:02d}",
            day,
            {
                "x": {"x": 9, "y": 3 + (index % 2) * 0.5, "z": 4},
                "y": {"x": 6, "y": 9, "z": 7},
                "z": {"x": 6, "y": 7, "z": 9},
            },
        )
    path = write_lines(lines)
    report = build_report(path, n_resamples=10)
    decisions = report.decisions
    assert decisions is not None
    assert decisions.overall.n_sessions == 12
    assert decisions.overall.n_changed == 12
    assert [w.week_start for w in decisions.weekly] == ["2026-01-05", "2026-01-12"]
    assert [w.n_sessions for w in decisions.weekly] == [6, 6]
    text = render_text(report)
    assert "Decisions affected" in text
    assert "winner changed in 12/12 sessions" in text
    rows = [r for r in csv.reader(io.StringIO(render_csv(report))) if r[0] == "decisions_affected"]
    assert [r[1] for r in rows[::3]] == ["all", "week 2026-01-05", "week 2026-01-12"]
    assert [r[2] for r in rows[:3]] == [
        "winner_changed_share",
        "winner_changed_by_adjustments_share",
        "top_ties_broken",
    ]
    assert float(rows[0][3]) == 1.0 and rows[0][7] == "12"
    assert json.loads(json.dumps(report.to_dict()))["decisions"]["overall"]["n_changed"] == 12
