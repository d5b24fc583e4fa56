"""Which sessions' winners change when scores are debiased: vectorised over all sessions.

Every session's candidates are ranked three ways at once, as the council ranks them:

- raw, as :func:`~llm_council.aggregate.aggregate_reviews`: mean rank among the others'
  answers (lower first), then mean score (higher first), then the model code;
- debiased, as :func:`~llm_council.debiased_aggregate.debiased_aggregate`: mean adjusted
  score (higher first), then the raw place, then the model code;
- unadjusted: the same with the raw mean score, so the change the adjustments alone make
  is told apart from ranking by score instead of by rank.

A session whose two best unadjusted mean scores are within ``tie`` counts as a broken tie
when the adjustments pick another answer: any adjustment, however small, decides it.
The report checks these winners against those two functions session by session
(``tests/bias_audit/report/analyses/test_decisions.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_council.stats.reviewers.reviewer_effects import ReviewerEffects

__all__ = ["SessionWinners", "effect_adjusted_scores", "group_mean", "session_winners"]


def group_mean(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Mean of the finite ``values`` per group; NaN for a group without one.

    Parameters
    ----------
    group : ndarray of int, shape (n,)
        Each value's group, 0..n_groups-1.
    values : ndarray, shape (n,)
        The values.
    n_groups : int
        G.

    Returns
    -------
    ndarray, shape (G,)
        The means.
    """
    finite = np.isfinite(values)
    total = np.bincount(group[finite], weights=values[finite], minlength=n_groups)
    count = np.bincount(group[finite], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _first_per_session(
    session: np.ndarray, keys: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs sorted by session then ``keys`` (most significant first), and where each
    session starts in that order (its first pair is ``order[starts]``)."""
    order = np.lexsort([*reversed(keys), session])
    sorted_session = session[order]
    starts = np.flatnonzero(np.r_[True, sorted_session[1:] != sorted_session[:-1]])
    return order, starts


def effect_adjusted_scores(
    effects: Sequence[ReviewerEffects | None],
    reviewer: np.ndarray,
    position: np.ndarray,
    x: np.ndarray,
    score: np.ndarray,
) -> np.ndarray:
    """Each score minus its reviewer's leniency, slot effect and slope times ``x``.

    A slot the reviewer was never fitted at (or any slot past the last fitted one) takes
    the leniency only; a reviewer without effects (None) is not adjusted; NaN ``x`` is 0.

    Parameters
    ----------
    effects : sequence of ReviewerEffects or None, length R
        Each reviewer's effects.
    reviewer, position : ndarray of int, shape (n,)
        Each score's reviewer and display slot.
    x : ndarray, shape (n,)
        The slope's regressor (centred log2 length).
    score : ndarray, shape (n,)
        The scores.

    Returns
    -------
    ndarray, shape (n,)
        The adjusted scores.
    """
    n_slots = max((len(e.slot_effects) for e in effects if e is not None), default=0) + 1
    offset = np.zeros((len(effects), n_slots))
    slope = np.zeros(len(effects))
    for code, effect in enumerate(effects):
        if effect is not None:
            offset[code, : len(effect.slot_effects)] += effect.slot_effects
            offset[code] += effect.leniency
            slope[code] = effect.length_slope
    slot = np.where((position >= 0) & (position < n_slots - 1), position, n_slots - 1)
    adjusted: np.ndarray = score - offset[reviewer, slot] - slope[reviewer] * np.nan_to_num(x)
    return adjusted


@dataclass(frozen=True)
class SessionWinners:
    """Per session with a vote: its code and (changed vs raw, by the adjustments, tie broken)."""

    sessions: np.ndarray
    changed: np.ndarray  # (n_sessions, 3) booleans


def session_winners(
    pair_session: np.ndarray,
    pair_model: np.ndarray,
    mean_rank: np.ndarray,
    mean_score: np.ndarray,
    mean_adjusted: np.ndarray,
    tie: float,
) -> SessionWinners:
    """Rank each session's candidates (one entry per (session, model) pair) three ways.

    ``pair_model`` codes must follow the models' name order (the last tie-break). Means
    are NaN for a candidate without votes; a session whose raw winner has neither a rank
    nor a score is left out.

    Parameters
    ----------
    pair_session, pair_model : ndarray of int, shape (P,)
        Each (session, model) candidate's session and model code.
    mean_rank, mean_score, mean_adjusted : ndarray, shape (P,)
        Its mean rank, raw mean score and adjusted mean score.
    tie : float
        Score difference treated as a tie.

    Returns
    -------
    SessionWinners
        ``sessions`` (S,) and ``changed`` (S, 3).
    """
    n_pairs = pair_session.size
    raw_order, starts = _first_per_session(
        pair_session,
        [np.nan_to_num(mean_rank, nan=np.inf), np.nan_to_num(-mean_score, nan=np.inf), pair_model],
    )
    raw_place = np.empty(n_pairs, dtype=np.int64)
    raw_place[raw_order] = np.arange(n_pairs) - np.repeat(starts, np.diff(np.r_[starts, n_pairs]))
    raw_winner = raw_order[starts]
    has_votes = np.isfinite(mean_rank[raw_winner]) | np.isfinite(mean_score[raw_winner])

    def winner(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        order, first = _first_per_session(
            pair_session, [np.nan_to_num(-means, nan=np.inf), raw_place, pair_model]
        )
        return order[first], order

    debiased_winner, _ = winner(mean_adjusted)
    unadjusted_winner, unadjusted_order = winner(mean_score)
    # the unadjusted top tied: the session's second-best mean score equals the best
    second = unadjusted_order[np.minimum(starts + 1, n_pairs - 1)]
    same_session = pair_session[second] == pair_session[unadjusted_winner]
    top = mean_score[unadjusted_winner]
    tied = same_session & np.isfinite(top) & (np.abs(mean_score[second] - top) < tie)
    moved = debiased_winner != unadjusted_winner
    changed = np.column_stack([debiased_winner != raw_winner, moved & ~tied, moved & tied])
    return SessionWinners(sessions=pair_session[raw_winner][has_votes], changed=changed[has_votes])
