"""Decisions affected: how often the debiased winner differs from the raw winner (ADR 0046).

Recomputed from the records, so it works on any store, including those written before the
debiased aggregate existed: each session's observational records (check reviews and second
review orders left out) are ranked as the council ranks them, vectorised over all sessions
at once: raw as :func:`~llm_council.aggregate.aggregate_reviews` (mean rank among the
others' answers, then mean score, then name) and debiased as
:func:`~llm_council.debiased_aggregate.debiased_aggregate` (mean adjusted score, then the
raw place, then name), with each reviewer's leniency, slot effects and length slope fitted
on the whole window: the least squares solution in closed form from within-answer sums
that add across sessions
(:func:`~llm_council.stats.reviewers.reviewer_effect_sums.effects_from_sums`; ADR 0074,
which replaced backfitting to a tolerance). The section is computed from per-session
summaries (:mod:`.decisions_summary`), so a saved summary merged with the new sessions'
gives what a full run gives (:class:`DecisionsSection`); the three rankings are
:func:`~llm_council.stats.bias_effects.winner_changes.session_winners`.
``tests/bias_audit/report/analyses/test_decisions.py`` checks the winners against those two
functions applied session by session. It is a hindsight
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.decisions_summary import (
    DecisionsSummary,
    decisions_from_payload,
    decisions_payload,
    merge_decisions,
    summarize_decisions,
)
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.bias_effects.winner_changes import (
    effect_adjusted_scores,
    group_mean,
    session_winners,
)
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.reviewers.reviewer_effect_sums import effects_from_sums
from llm_council.stats.reviewers.reviewer_effects import ReviewerEffects

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


def _changes(week_start: str | None, changed: np.ndarray) -> WinnerChanges:
    """``changed``: one row per session, columns (vs raw, by the adjustments, tie broken)."""
    n = int(changed.shape[0])
    k, k_adjusted, ties = (int(changed[:, column].sum()) for column in range(3))
    return WinnerChanges(week_start, n, k, _share(k, n), k_adjusted, _share(k_adjusted, n), ties)


class DecisionsSection:
    """Decisions affected as an :class:`~.incremental_section.IncrementalSection` (ADR 0074).

    The reviewer effects come from the merged sums in closed form
    (:func:`~llm_council.stats.reviewers.reviewer_effect_sums.effects_from_sums`) and every
    session's winners are recomputed from the summary's per-answer rows.
    """

    name = "decisions_affected"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> DecisionsSummary:
        """The summary of every session in ``connection``'s ``records`` table."""
        return summarize_decisions(connection)

    def merge(self, saved: DecisionsSummary, new: DecisionsSummary) -> DecisionsSummary:
        """The summary of two disjoint sets of sessions."""
        return merge_decisions(saved, new)

    def finish(self, summary: DecisionsSummary) -> DecisionsAffected | None:
        """The section; None when no session has a scored review."""
        return finish_decisions(summary)

    def to_payload(self, summary: DecisionsSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON-safe metadata and named arrays."""
        return decisions_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> DecisionsSummary:
        """The summary back; ``ValueError`` names a malformed field."""
        return decisions_from_payload(meta, arrays)


DECISIONS = DecisionsSection()


def _effects_by_code(summary: DecisionsSummary) -> list[ReviewerEffects | None]:
    """The closed-form effects, one per ``summary.reviewers`` code."""
    sums = summary.effect_sums
    by_name = dict(zip(sums.reviewers, effects_from_sums(sums), strict=True))
    return [by_name.get(name) for name in summary.reviewers]


def finish_decisions(summary: DecisionsSummary) -> DecisionsAffected | None:
    """The section from a summary of all sessions; None when no record has a score."""
    if summary.n_finite_scores == 0:
        return None
    effects = _effects_by_code(summary)
    answers, votes = summary.answers, summary.votes
    n_answers = answers["session"].size
    adjusted = effect_adjusted_scores(
        effects,
        votes["reviewer"],
        votes["position"],
        answers["x"][votes["answer"]],
        votes["score"],
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_rank = np.where(
            answers["rank_count"] > 0,
            answers["rank_sum"] / np.maximum(answers["rank_count"], 1),
            np.nan,
        )
        mean_score = np.where(
            answers["score_count"] > 0,
            answers["score_sum"] / np.maximum(answers["score_count"], 1),
            np.nan,
        )
    winners = session_winners(
        answers["session"],
        answers["model"],  # codes are in name order: the last tie-break
        mean_rank,
        mean_score,
        group_mean(votes["answer"], adjusted, n_answers),
        _TIE,
    )
    sessions, changed = winners.sessions, winners.changed
    seconds = summary.session_seconds[sessions]
    return DecisionsAffected(
        overall=_changes(None, changed),
        weekly=_weekly(summary.session_seconds, seconds, changed),
        n_untimed_sessions=int(np.isnan(seconds).sum()),
        n_adjusted_reviewers=sum(effect is not None for effect in effects),
    )


def decisions_affected(connection: duckdb.DuckDBPyConnection) -> DecisionsAffected | None:
    """The section from the ``records`` table; None when no session has a scored review."""
    return DECISIONS.finish(DECISIONS.summarize(connection))


def _weekly(
    all_seconds: np.ndarray, seconds: np.ndarray, changed: np.ndarray
) -> list[WinnerChanges]:
    """Weeks counted from the first timed session of all (like the drift section);
    ``seconds`` is each ranked session's first timestamp (NaN: untimed, in no week)."""
    timed = all_seconds[np.isfinite(all_seconds)]
    if timed.size == 0:
        return []
    start = float(timed.min())
    known = np.isfinite(seconds)
    week = ((seconds[known] - start) // 604800).astype(np.int64)
    first_day = datetime.fromtimestamp(start, UTC)
    return [
        _changes(
            (first_day + timedelta(weeks=int(w))).date().isoformat(), changed[known][week == w]
        )
        for w in np.unique(week).tolist()
    ]
