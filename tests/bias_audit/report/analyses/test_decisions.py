"""Decisions affected (ADR 0046): the debiased winner against the raw winner, from records."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.conftest import record_line
from bias_audit.report.report_golden_cases import CASES
from llm_council.aggregate import aggregate_reviews
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.render.render_tables import render_csv
from llm_council.bias_audit.report.render.render_text import render_text
from llm_council.debiased_aggregate import ReviewerAdjustment, debiased_aggregate
from llm_council.results import CandidateScore, LabelAssignment, Review
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.reviewers.reviewer_effects import fit_reviewer_effects


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


# --- the reference: the council's own functions, session by session ------------------

_REFERENCE_ROWS_SQL = """
    SELECT r.session, r.reviewer, r.model, r.position, r.score, r.rank, r.is_self, r.chars
    FROM records r ORDER BY r.session, r.reviewer, r.position
"""


def _reference_adjustments(rows: list[tuple[Any, ...]]) -> dict[str, ReviewerAdjustment]:
    scored = [row for row in rows if row[4] is not None and not row[6]]
    names = sorted({str(row[1]) for row in scored})
    answers: dict[tuple[int, str], int] = {}
    log_length: dict[tuple[int, str], float] = {}
    for row in rows:
        key = (int(row[0]), str(row[2]))
        answers.setdefault(key, len(answers))
        log_length[key] = math.log2(max(int(row[7] or 0), 1))
    by_session: dict[int, list[float]] = {}
    for (session, _), value in log_length.items():
        by_session.setdefault(session, []).append(value)
    centre = {s: sum(v) / len(v) for s, v in by_session.items()}
    keys = [(int(row[0]), str(row[2])) for row in scored]
    effects = fit_reviewer_effects(
        np.array([answers[key] for key in keys]),
        np.array([names.index(str(row[1])) for row in scored]),
        np.array([int(row[3]) for row in scored]),
        np.array([log_length[key] - centre[key[0]] for key in keys]),
        np.array([float(row[4]) for row in scored]),
        len(names),
    )
    return {
        name: ReviewerAdjustment(e.leniency, e.slot_effects, e.length_slope, e.n_scores)
        for name, e in zip(names, effects, strict=True)
        if e is not None
    }


def _reference_reviews(rows: list[tuple[Any, ...]]) -> tuple[list[Review], dict[str, int]]:
    by_reviewer: dict[str, list[tuple[Any, ...]]] = {}
    chars: dict[str, int] = {}
    for row in rows:
        by_reviewer.setdefault(str(row[1]), []).append(row)
        chars[str(row[2])] = int(row[7] or 0)
    reviews = []
    for reviewer, mine in by_reviewer.items():
        verdicts = tuple(
            CandidateScore(
                candidate=str(row[2]),
                label=f"slot {row[3]}",
                display_index=int(row[3]),
                score=None if row[4] is None else float(row[4]),
                rank=row[5],
                is_self_review=bool(row[6]),
            )
            for row in mine
        )
        ranked = sorted((v for v in verdicts if v.rank is not None), key=lambda v: v.rank or 0)
        reviews.append(
            Review(
                reviewer=reviewer,
                label_to_model={
                    v.label: LabelAssignment(model=v.candidate, display_index=v.display_index)
                    for v in verdicts
                },
                candidates=verdicts,
                ranking=tuple(v.candidate for v in ranked),
                parse_status="json",
            )
        )
    return reviews, chars


def _reference_counts(path: Path) -> tuple[int, int, int, int]:
    """(sessions, changed vs raw, changed by the adjustments, top ties broken)."""
    store = load_store(path)
    try:
        rows = store.connection.execute(_REFERENCE_ROWS_SQL).fetchall()
    finally:
        store.connection.close()
    adjustments = _reference_adjustments(rows)
    sessions: dict[int, list[tuple[Any, ...]]] = {}
    for row in rows:
        sessions.setdefault(int(row[0]), []).append(row)
    counts = [0, 0, 0, 0]
    for session_rows in sessions.values():
        reviews, chars = _reference_reviews(session_rows)
        raw = aggregate_reviews(reviews, sorted(chars))
        if raw[0].mean_rank is None and raw[0].mean_score is None:
            continue
        debiased = debiased_aggregate(reviews, chars, adjustments, raw)
        unadjusted = debiased_aggregate(reviews, chars, {}, raw)
        top = unadjusted[0].debiased_mean_score
        tied = top is not None and any(
            s.debiased_mean_score is not None and abs(s.debiased_mean_score - top) < 1e-9
            for s in unadjusted[1:]
        )
        moved = debiased[0].model != unadjusted[0].model
        counts[0] += 1
        counts[1] += debiased[0].model != raw[0].model
        counts[2] += moved and not tied
        counts[3] += moved and tied
    return counts[0], counts[1], counts[2], counts[3]


@pytest.mark.parametrize("name", [name for name, _ in CASES])
def test_the_vectorised_winners_equal_the_councils_functions_session_by_session(
    name: str, tmp_path: Path
) -> None:
    write = dict(CASES)[name]
    path = tmp_path / "store.jsonl"
    write(path)
    report = build_report(path, n_resamples=10)
    assert report.decisions is not None
    overall = report.decisions.overall
    assert (
        overall.n_sessions,
        overall.n_changed,
        overall.n_changed_by_adjustments,
        overall.n_ties_broken,
    ) == _reference_counts(path)


def test_the_dashboard_shows_the_section(biased_store: Path) -> None:
    from llm_council.bias_audit.report.render.render_html import render_html

    report = build_report(biased_store, n_resamples=10)
    page = render_html(report)
    assert 'id="section-decisions"' in page
    decisions = report.decisions
    assert decisions is not None
    overall = decisions.overall
    assert f"<td>{overall.n_sessions}</td>" in page
    assert f"<td>{overall.n_changed} ({overall.share_changed.estimate:.1%}" in page
