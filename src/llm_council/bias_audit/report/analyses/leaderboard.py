"""The leaderboard: Bradley-Terry strengths of the models from the reviewers' rankings.

Each reviewer's ranking of the answers it saw becomes paired comparisons (self-reviews
left out, so self-preference cannot lift a model). Strengths get percentile intervals from
a Poisson bootstrap of whole sessions (each session's weight in a replicate depends only on
the seed, its id and the replicate, so the replicate tables add across sessions and the
section merges per-session summaries exactly; ADR 0074), and a length-controlled variant
adds ln(words) difference as a covariate, so a model that wins only by writing more loses
that advantage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.leaderboard_summary import (
    LeaderboardSummary,
    leaderboard_from_payload,
    leaderboard_payload,
    merge_leaderboard,
    summarize_leaderboard,
)
from llm_council.bias_audit.report.estimates import Interval, Leaderboard, LeaderboardEntry
from llm_council.stats.ranking.bradley_terry import (
    bradley_terry_with_covariate,
    comparisons_connected,
)
from llm_council.stats.ranking.bradley_terry_poisson import bradley_terry_from_tables


def with_adjusted_means(
    board: Leaderboard, adjusted_mean_by_model: dict[str, float]
) -> Leaderboard:
    """The leaderboard with the joint model's adjusted mean scores filled in (extra view)."""
    entries = [
        replace(entry, adjusted_mean_score=adjusted_mean_by_model.get(entry.model, float("nan")))
        for entry in board.entries
    ]
    return replace(board, entries=entries)


class LeaderboardSection:
    """The leaderboard as an :class:`~.incremental_section.IncrementalSection` (ADR 0074):
    a Poisson session bootstrap whose replicate tables add across sessions."""

    name = "leaderboard"
    version = 1

    def __init__(self, *, n_resamples: int = 200, seed: int = 0) -> None:
        self.n_resamples = n_resamples
        self.seed = seed

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> LeaderboardSummary:
        """The summary of every session in ``connection``'s ``scored`` table."""
        return summarize_leaderboard(connection, n_resamples=self.n_resamples, seed=self.seed)

    def merge(self, saved: LeaderboardSummary, new: LeaderboardSummary) -> LeaderboardSummary:
        """The summary of two disjoint sets of sessions."""
        return merge_leaderboard(saved, new)

    def finish(self, summary: LeaderboardSummary) -> Leaderboard | None:
        """The leaderboard; None without comparisons or when the models are not connected."""
        return finish_leaderboard(summary)

    def to_payload(
        self, summary: LeaderboardSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """JSON-safe metadata and named arrays."""
        return leaderboard_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> LeaderboardSummary:
        """The summary back; ``ValueError`` names a malformed field (or another seed or
        number of resamples than this section's: such a summary is rebuilt)."""
        summary = leaderboard_from_payload(meta, arrays)
        if (summary.n_resamples, summary.seed) != (self.n_resamples, self.seed):
            raise ValueError(
                "leaderboard summary: field 'n_resamples'/'seed' "
                f"{summary.n_resamples}/{summary.seed} is not {self.n_resamples}/{self.seed}"
            )
        return summary


def finish_leaderboard(summary: LeaderboardSummary) -> Leaderboard | None:
    """Bradley-Terry with Poisson session-bootstrap intervals, plus the length-controlled
    fit, from a summary of all sessions."""
    comparisons = summary.comparisons
    item_a = comparisons["item_a"]
    if item_a.size == 0 or not comparisons_connected(summary.total_wins):
        # no comparison, or models in separate groups that were never compared: no
        # common scale to report
        return None
    n_models = len(summary.models)
    controlled = bradley_terry_with_covariate(
        item_a,
        comparisons["item_b"],
        comparisons["a_won"],
        comparisons["log_ratio"],
        comparisons["session"],
        n_models,
    )
    counts = np.bincount(item_a, minlength=n_models) + np.bincount(
        comparisons["item_b"], minlength=n_models
    )
    bootstrap = bradley_terry_from_tables(summary.total_wins, summary.resampled_wins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_scores = np.where(
            summary.score_count > 0, summary.score_sum / np.maximum(summary.score_count, 1), np.nan
        )
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
            mean_score=float(mean_scores[i]),
            adjusted_mean_score=float("nan"),  # filled by with_adjusted_means (joint model)
            n_comparisons=int(counts[i]),
        )
        for i, name in enumerate(summary.models)
        if counts[i] > 0
    ]
    entries.sort(
        key=lambda entry: (
            -entry.strength.estimate if np.isfinite(entry.strength.estimate) else np.inf
        )
    )
    return Leaderboard(
        entries=entries,
        n_sessions=len(summary.session_ids),
        n_resamples=summary.n_resamples,
        length_slope=Interval(controlled.slope, controlled.slope_ci[0], controlled.slope_ci[1]),
        n_unconverged_resamples=bootstrap.n_unconverged_resamples,
    )


def build_leaderboard(
    connection: duckdb.DuckDBPyConnection,
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> Leaderboard | None:
    """Bradley-Terry with session-bootstrap intervals, plus the length-controlled fit."""
    section = LeaderboardSection(n_resamples=n_resamples, seed=seed)
    return section.finish(section.summarize(connection))
