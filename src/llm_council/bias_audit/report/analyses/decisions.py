"""Decisions affected: how often the debiased winner differs from the raw winner (ADR 0046).

Recomputed from the records, so it works on any store, including those written before the
debiased aggregate existed: each session's observational records (check reviews and second
review orders left out) are ranked as the council ranks them, vectorised over all sessions
at once: raw as :func:`~llm_council.aggregate.aggregate_reviews` (mean rank among the
others' answers, then mean score, then name) and debiased as
:func:`~llm_council.debiased_aggregate.debiased_aggregate` (mean adjusted score, then the
raw place, then name), with each reviewer's leniency, slot effects and length slope fitted
on the whole window (:func:`~llm_council.stats.reviewers.reviewer_effects.fit_reviewer_effects`);
the three rankings are :func:`~llm_council.stats.bias_effects.winner_changes.session_winners`.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.bias_effects.winner_changes import (
    effect_adjusted_scores,
    group_mean,
    session_winners,
)
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.reviewers.reviewer_effects import ReviewerEffects, fit_reviewer_effects

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


#: one row per observational record: the others' rank of the answer in its review (the
#: council's re-ranking without the reviewer's own answer, ties in display order) and the
#: answer's log2 length centred on its session's answers
_ROWS_SQL = """
    WITH answers AS (
        SELECT session, model, log2(greatest(any_value(chars), 1)) AS log2_chars
        FROM records GROUP BY session, model),
    centred AS (
        SELECT session, model,
               log2_chars - avg(log2_chars) OVER (PARTITION BY session) AS x
        FROM answers),
    ranked AS (
        SELECT session, reviewer, model, position, score, is_self,
               CASE WHEN NOT is_self AND rank IS NOT NULL THEN row_number() OVER (
                   PARTITION BY session, reviewer, (NOT is_self AND rank IS NOT NULL)
                   ORDER BY rank, position) END AS other_rank
        FROM records)
    SELECT k.session, k.reviewer, k.model, k.position, k.score, k.is_self, k.other_rank, c.x
    FROM ranked k JOIN centred c USING (session, model)
"""


def _fit(
    rows: dict[str, np.ndarray], reviewer: np.ndarray, n_reviewers: int
) -> list[ReviewerEffects | None]:
    scored = np.isfinite(rows["score"]) & ~rows["is_self"]
    _, answer = np.unique(
        rows["session"].astype(np.int64) * (int(rows["model_code"].max()) + 1) + rows["model_code"],
        return_inverse=True,
    )
    return fit_reviewer_effects(
        answer[scored],
        reviewer[scored],
        rows["position"][scored],
        rows["x"][scored],
        rows["score"][scored],
        n_reviewers,
    )


def decisions_affected(connection: duckdb.DuckDBPyConnection) -> DecisionsAffected | None:
    """The section from the ``records`` table; None when no session has a scored review."""
    fetched = connection.execute(_ROWS_SQL).fetchnumpy()
    score = nullable_floats(fetched["score"])
    if not np.isfinite(score).any():
        return None
    reviewer_names, reviewer = np.unique(
        np.asarray(fetched["reviewer"], dtype=str), return_inverse=True
    )
    model_names, model = np.unique(np.asarray(fetched["model"], dtype=str), return_inverse=True)
    rows = {
        "session": np.asarray(fetched["session"], dtype=np.int64),
        "model_code": model,
        "position": np.asarray(fetched["position"], dtype=np.intp),
        "score": score,
        "is_self": np.asarray(fetched["is_self"], dtype=bool),
        "x": nullable_floats(fetched["x"]),
    }
    other_rank = nullable_floats(fetched["other_rank"])
    del fetched
    effects = _fit(rows, reviewer, len(reviewer_names))
    adjusted = effect_adjusted_scores(effects, reviewer, rows["position"], rows["x"], score)
    # one entry per (session, model): the candidates of that session
    n_models = len(model_names)
    pairs, pair = np.unique(rows["session"] * n_models + model, return_inverse=True)
    votes = ~rows["is_self"]
    winners = session_winners(
        pairs // n_models,
        pairs % n_models,  # codes are in name order: the last tie-break
        group_mean(pair, np.where(votes, other_rank, np.nan), pairs.size),
        group_mean(pair, np.where(votes, score, np.nan), pairs.size),
        group_mean(pair, np.where(votes, adjusted, np.nan), pairs.size),
        _TIE,
    )
    sessions, changed = winners.sessions, winners.changed
    return DecisionsAffected(
        overall=_changes(None, changed),
        weekly=_weekly(connection, sessions, changed),
        n_untimed_sessions=_n_untimed(connection, sessions),
        n_adjusted_reviewers=sum(effect is not None for effect in effects),
    )


def _session_seconds(connection: duckdb.DuckDBPyConnection) -> dict[int, float]:
    rows = connection.execute(
        "SELECT session, epoch(min(time)) FROM records WHERE time IS NOT NULL GROUP BY session"
    ).fetchall()
    return {int(session): float(seconds) for session, seconds in rows}


def _n_untimed(connection: duckdb.DuckDBPyConnection, sessions: np.ndarray) -> int:
    timed = _session_seconds(connection)
    return int(sum(int(s) not in timed for s in sessions.tolist()))


def _weekly(
    connection: duckdb.DuckDBPyConnection, sessions: np.ndarray, changed: np.ndarray
) -> list[WinnerChanges]:
    """Weeks counted from the first timed session (like the drift section)."""
    timed = _session_seconds(connection)
    if not timed:
        return []
    start = min(timed.values())
    seconds = np.array([timed.get(int(s), np.nan) for s in sessions.tolist()])
    known = np.isfinite(seconds)
    week = ((seconds[known] - start) // 604800).astype(np.int64)
    first_day = datetime.fromtimestamp(start, UTC)
    return [
        _changes(
            (first_day + timedelta(weeks=int(w))).date().isoformat(), changed[known][week == w]
        )
        for w in np.unique(week).tolist()
    ]
