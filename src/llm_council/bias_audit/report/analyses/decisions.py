"""Decisions affected: how often the debiased winner differs from the raw winner (ADR 0046).

Recomputed from the records, so it works on any store, including those written before the
debiased aggregate existed: each session's reviews are rebuilt from its observational
records (check reviews and second review orders left out) and ranked twice, by the
council's own functions: :func:`~llm_council.aggregate.aggregate_reviews` (raw: mean rank,
self-votes out) and :func:`~llm_council.debiased_aggregate.debiased_aggregate` with each
reviewer's leniency, slot effects and length slope fitted on the whole window
(:func:`~llm_council.stats.reviewer_effects.fit_reviewer_effects`). It is a hindsight
measure: a live session's adjustments come from the sessions before it only. The share of
sessions whose winner changes gets a Wilson interval (Wilson 1927), over the window and
per week (weeks counted from the first timed session, like the drift section). Because the
raw aggregate ranks by mean rank and the debiased one by mean score, the share changed by
the adjustments alone (against the unadjusted mean-score winner) is reported beside it:
with no bias the first can be well above zero (ranks and scores disagree on close
sessions). Sessions whose unadjusted mean scores tie at the top, where any adjustment
however small picks one of the tied answers, are counted apart (``n_ties_broken``): on a
null simulated store of 400 sessions they were every one of the adjustments' changes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np

from llm_council.aggregate import aggregate_reviews
from llm_council.bias_audit.report.estimates import Interval
from llm_council.debiased_aggregate import DebiasedStanding, ReviewerAdjustment, debiased_aggregate
from llm_council.results import CandidateScore, LabelAssignment, ModelStanding, Review
from llm_council.stats.proportions import wilson_interval
from llm_council.stats.reviewer_effects import fit_reviewer_effects

#: mean scores closer than this are a tie
_TIE = 1e-9


@dataclass(frozen=True)
class WinnerChanges:
    """Sessions with a winner both ways, and how many of them the debiasing changed."""

    week_start: str | None  # ISO date of the week's first day; None for the whole window
    n_sessions: int
    n_changed: int  # debiased winner != raw winner (mean rank)
    share_changed: Interval  # Wilson 95% interval; NaN without sessions
    # debiased winner != a strict winner by unadjusted mean score: the part the adjustments
    # themselves make (the rest is ranking by score instead of by rank)
    n_changed_by_adjustments: int
    share_changed_by_adjustments: Interval
    # the unadjusted mean scores tied at the top and the adjustments chose another of the
    # tied answers (integer scores tie often; even a tiny adjustment breaks a tie)
    n_ties_broken: int


@dataclass(frozen=True)
class DecisionsAffected:
    overall: WinnerChanges
    weekly: list[WinnerChanges] = field(default_factory=list)
    n_untimed_sessions: int = 0
    n_adjusted_reviewers: int = 0  # reviewers with enough history for an adjustment


def _share(k: int, n: int) -> Interval:
    if n == 0:
        return Interval(math.nan, math.nan, math.nan)
    low, high = wilson_interval(k, n)
    return Interval(k / n, low, high)


def _changes(week_start: str | None, changed: list[tuple[bool, bool, bool]]) -> WinnerChanges:
    n = len(changed)
    k = sum(vs_raw for vs_raw, _, _ in changed)
    k_adjusted = sum(by_adjustments for _, by_adjustments, _ in changed)
    ties = sum(tie_broken for _, _, tie_broken in changed)
    return WinnerChanges(week_start, n, k, _share(k, n), k_adjusted, _share(k_adjusted, n), ties)


def _winner_changes(
    raw: list[ModelStanding], unadjusted: list[DebiasedStanding], debiased: list[DebiasedStanding]
) -> tuple[bool, bool, bool]:
    """(debiased != raw winner, != a strict unadjusted winner, a top tie broken otherwise)."""
    winner = debiased[0].model
    top = unadjusted[0].debiased_mean_score
    tied = top is not None and any(
        s.debiased_mean_score is not None and abs(s.debiased_mean_score - top) < _TIE
        for s in unadjusted[1:]
    )
    moved = winner != unadjusted[0].model
    return winner != raw[0].model, moved and not tied, moved and tied


_ROWS_SQL = """
    SELECT r.session, r.reviewer, r.model, r.position, r.score, r.rank, r.is_self,
           r.chars, epoch(t.time) AS seconds
    FROM records r
    LEFT JOIN (SELECT session, min(time) AS time FROM records GROUP BY session) t
        USING (session)
    ORDER BY r.session, r.reviewer, r.position
"""


def _adjustments(rows: list[tuple[object, ...]]) -> dict[str, ReviewerAdjustment]:
    """Each reviewer's adjustment fitted on every scored record of others' answers."""
    scored = [row for row in rows if row[4] is not None and not row[6]]
    if not scored:
        return {}
    names = sorted({str(row[1]) for row in scored})
    reviewer_code = {name: i for i, name in enumerate(names)}
    answers: dict[tuple[int, str], int] = {}
    log_length: dict[tuple[int, str], float] = {}
    for row in rows:
        key = (int(row[0]), str(row[2]))  # type: ignore[call-overload]
        answers.setdefault(key, len(answers))
        log_length[key] = math.log2(max(int(row[7] or 0), 1))  # type: ignore[call-overload]
    session_logs: dict[int, list[float]] = {}
    for (session, _), value in log_length.items():
        session_logs.setdefault(session, []).append(value)
    session_mean = {s: sum(v) / len(v) for s, v in session_logs.items()}
    keys = [(int(row[0]), str(row[2])) for row in scored]  # type: ignore[call-overload]
    effects = fit_reviewer_effects(
        np.array([answers[key] for key in keys], dtype=np.intp),
        np.array([reviewer_code[str(row[1])] for row in scored], dtype=np.intp),
        np.array([int(row[3]) for row in scored], dtype=np.intp),  # type: ignore[call-overload]
        np.array([log_length[key] - session_mean[key[0]] for key in keys]),
        np.array([float(row[4]) for row in scored]),  # type: ignore[arg-type]
        len(names),
    )
    return {
        name: ReviewerAdjustment(e.leniency, e.slot_effects, e.length_slope, e.n_scores)
        for name, e in zip(names, effects, strict=True)
        if e is not None
    }


def _session_reviews(rows: list[tuple[object, ...]]) -> tuple[list[Review], dict[str, int]]:
    by_reviewer: dict[str, list[tuple[object, ...]]] = {}
    chars: dict[str, int] = {}
    for row in rows:
        by_reviewer.setdefault(str(row[1]), []).append(row)
        chars[str(row[2])] = int(row[7] or 0)  # type: ignore[call-overload]
    reviews = []
    for reviewer, mine in by_reviewer.items():
        verdicts = tuple(
            CandidateScore(
                candidate=str(row[2]),
                label=f"slot {int(row[3])}",  # type: ignore[call-overload]
                display_index=int(row[3]),  # type: ignore[call-overload]
                score=None if row[4] is None else float(row[4]),  # type: ignore[arg-type]
                rank=None if row[5] is None else int(row[5]),  # type: ignore[call-overload]
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


def decisions_affected(connection: duckdb.DuckDBPyConnection) -> DecisionsAffected | None:
    """The section from the ``records`` table; None when no session has a scored review."""
    rows = connection.execute(_ROWS_SQL).fetchall()
    if not any(row[4] is not None for row in rows):
        return None
    adjustments = _adjustments(rows)
    sessions: dict[int, list[tuple[object, ...]]] = {}
    for row in rows:
        sessions.setdefault(int(row[0]), []).append(row)  # type: ignore[call-overload]
    timed = [float(rows_[0][8]) for rows_ in sessions.values() if rows_[0][8] is not None]  # type: ignore[arg-type]
    start = min(timed) if timed else None
    changed_all: list[tuple[bool, bool, bool]] = []
    by_week: dict[int, list[tuple[bool, bool, bool]]] = {}
    n_untimed = 0
    for session_rows in sessions.values():
        reviews, chars = _session_reviews(session_rows)
        candidates = sorted(chars)
        raw = aggregate_reviews(reviews, candidates)
        if not raw or (raw[0].mean_rank is None and raw[0].mean_score is None):
            continue
        debiased = debiased_aggregate(reviews, chars, adjustments, raw)
        unadjusted = debiased_aggregate(reviews, chars, {}, raw)
        changed = _winner_changes(raw, unadjusted, debiased)
        changed_all.append(changed)
        seconds = session_rows[0][8]
        if seconds is None or start is None:
            n_untimed += 1
            continue
        week = int((float(seconds) - start) // 604800)  # type: ignore[arg-type]
        by_week.setdefault(week, []).append(changed)
    weekly = []
    if start is not None:
        first_day = datetime.fromtimestamp(start, UTC)
        for week in sorted(by_week):
            day = (first_day + timedelta(weeks=week)).date().isoformat()
            weekly.append(_changes(day, by_week[week]))
    return DecisionsAffected(
        overall=_changes(None, changed_all),
        weekly=weekly,
        n_untimed_sessions=n_untimed,
        n_adjusted_reviewers=len(adjustments),
    )
