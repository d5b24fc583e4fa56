"""The leaderboard: Bradley-Terry strengths of the models from the reviewers' rankings.

Each reviewer's ranking of the answers it saw becomes paired comparisons (self-reviews
left out, so self-preference cannot lift a model). Strengths get percentile intervals from
resampling whole sessions, and a length-controlled variant adds ln(words) difference as a
covariate, so a model that wins only by writing more loses that advantage.
"""

from __future__ import annotations

from dataclasses import replace

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval, Leaderboard, LeaderboardEntry
from llm_council.stats.ranking.bradley_terry import (
    bradley_terry_session_bootstrap,
    bradley_terry_with_covariate,
    comparisons_connected,
)


def with_adjusted_means(
    board: Leaderboard, adjusted_mean_by_model: dict[str, float]
) -> Leaderboard:
    """The leaderboard with the joint model's adjusted mean scores filled in (extra view)."""
    entries = [
        replace(entry, adjusted_mean_score=adjusted_mean_by_model.get(entry.model, float("nan")))
        for entry in board.entries
    ]
    return replace(board, entries=entries)


def _ranked_pairs(connection: duckdb.DuckDBPyConnection) -> dict[str, np.ndarray]:
    """Every pair of answers one reviewer ranked differently in a session (self-reviews out).

    ``item_a < item_b`` are model indices, ``a_won`` is 1 when ``item_a`` was ranked better,
    ``log_ratio`` is ln(words) of ``item_a`` minus that of ``item_b``. The rankings come
    sorted by (session, reviewer, model); the pairs of rows ``gap`` apart within a review
    are formed for gap = 1, 2, ... until no review is that long (a review of ``k`` answers
    gives its ``k(k-1)/2`` pairs), which costs a few passes over the rankings instead of a
    self-join.
    """
    ranked = connection.execute(
        """SELECT session, reviewer_index, model_index, rank,
                  ln(greatest(words, 1)) AS log_words
           FROM scored WHERE NOT is_self AND rank IS NOT NULL
           ORDER BY session, reviewer_index, model_index"""
    ).fetchnumpy()
    # integer columns stay as fetched (int32): only the review code needs 64 bits
    session = np.asarray(ranked["session"])
    reviewer = np.asarray(ranked["reviewer_index"])
    review = session.astype(np.int64) * (int(np.max(reviewer, initial=0)) + 1) + reviewer
    del reviewer
    model = np.asarray(ranked["model_index"])
    rank = np.asarray(ranked["rank"])
    log_words = np.asarray(ranked["log_words"], dtype=float)
    del ranked  # the fetched columns, converted: not held while the pairs are formed
    firsts, seconds = [], []
    for gap in range(1, review.size):
        same_review = review[gap:] == review[:-gap]
        if not same_review.any():
            break
        # two records of one model in a review are not a comparison (nor are tied ranks)
        first = np.flatnonzero(
            same_review & (model[:-gap] < model[gap:]) & (rank[:-gap] != rank[gap:])
        )
        firsts.append(first)
        seconds.append(first + gap)
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    second = np.concatenate(seconds) if seconds else np.zeros(0, dtype=np.int64)
    del firsts, seconds, review
    return {
        "session": session[first],
        "item_a": model[first],
        "item_b": model[second],
        "a_won": (rank[first] < rank[second]).astype(np.int8),  # 0/1: one byte a comparison
        "log_ratio": log_words[first] - log_words[second],
    }


def _float_or_nan(value: float | None) -> float:
    """``value`` as a float; NaN when SQL gave no value (NULL)."""
    return float("nan") if value is None else float(value)


def build_leaderboard(
    connection: duckdb.DuckDBPyConnection,
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> Leaderboard | None:
    """Bradley-Terry with session-bootstrap intervals, plus the length-controlled fit."""
    pairs = _ranked_pairs(connection)
    item_a = pairs["item_a"]
    if item_a.size == 0:
        return None
    item_b, a_won, log_ratio = pairs["item_b"], pairs["a_won"], pairs["log_ratio"]
    # renumber the sessions that have comparisons 0..S-1 (O(n), no sort)
    raw_session = np.asarray(pairs.pop("session"), dtype=np.int64)
    has_pairs = np.zeros(int(raw_session.max()) + 1, dtype=bool)
    has_pairs[raw_session] = True
    session = (np.cumsum(has_pairs) - 1)[raw_session]
    model_names = [
        name
        for (name,) in connection.execute(
            "SELECT model FROM models ORDER BY model_index"
        ).fetchall()
    ]
    n_models = len(model_names)
    n_sessions = int(session.max()) + 1
    winner = np.where(a_won == 1, item_a, item_b)
    loser = np.where(a_won == 1, item_b, item_a)
    # one bincount over (session, winner, loser) cells, counted straight into floats (a
    # unit weight) so the table exists once; sums of ones are exact
    session_wins = np.bincount(
        (session * n_models + winner) * n_models + loser,
        weights=np.ones(session.size),
        minlength=n_sessions * n_models * n_models,
    ).reshape(n_sessions, n_models, n_models)
    del winner, loser, raw_session  # per comparison: not held through the bootstrap
    if not comparisons_connected(session_wins.sum(axis=0)):
        # models in separate groups that were never compared: no common scale to report
        return None
    controlled = bradley_terry_with_covariate(item_a, item_b, a_won, log_ratio, session, n_models)
    comparisons = np.bincount(item_a, minlength=n_models) + np.bincount(item_b, minlength=n_models)
    # the bootstrap needs only the per-session win tables: the comparisons are not held
    del pairs, item_a, item_b, a_won, log_ratio, session, has_pairs
    bootstrap = bradley_terry_session_bootstrap(
        session_wins, n_resamples=n_resamples, rng=np.random.default_rng(seed)
    )
    mean_score_by_index = dict(
        connection.execute(
            # grouped on the integer index (one hash per record), named by position below
            "SELECT model_index, avg(score) FROM scored WHERE NOT is_self GROUP BY model_index"
        ).fetchall()
    )
    nan = float("nan")
    entries = [
        LeaderboardEntry(
            model=name,
            strength=Interval(
                float(bootstrap.strength[i]),
                float(bootstrap.ci_low[i]),
                float(bootstrap.ci_high[i]),
            ),
            length_controlled=Interval(
                float(controlled.strengths.strength[i]),
                float(controlled.strengths.ci_low[i]),
                float(controlled.strengths.ci_high[i]),
            ),
            # a mean of exactly 0.0 (a model that lost every verdict) is a number, not missing
            mean_score=_float_or_nan(mean_score_by_index.get(i)),
            adjusted_mean_score=nan,  # filled by with_adjusted_means once the joint model is in
            n_comparisons=int(comparisons[i]),
        )
        for i, name in enumerate(model_names)
        if comparisons[i] > 0
    ]
    entries.sort(
        key=lambda entry: (
            -entry.strength.estimate if np.isfinite(entry.strength.estimate) else np.inf
        )
    )
    return Leaderboard(
        entries=entries,
        n_sessions=n_sessions,
        n_resamples=n_resamples,
        length_slope=Interval(controlled.slope, controlled.slope_ci[0], controlled.slope_ci[1]),
        n_unconverged_resamples=bootstrap.n_unconverged_resamples,
    )
