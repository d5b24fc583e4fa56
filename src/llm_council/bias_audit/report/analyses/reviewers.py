"""Reviewer profiles (leniency, spread, reliability); self-preference is in :mod:`.self_preference`.

Leniency is the mean paired deviation (score minus the mean of the *reference* reviewers
on the same answer), first averaged within each session, then across sessions: sessions are
the unit, so the interval is a t interval over session means. The reference is robust: a
Holm step-down removes outlying reviewers from it one at a time (at most a minority), so
one harsh judge does not make every other judge look generous
(:mod:`llm_council.stats.reviewers.robust_leniency`). A reviewer is labelled harsh or generous only
when the step-down flags it, which happens in at most 5% of no-bias stores (family-wise,
measured in tests/bias_audit/report/analyses/test_null_calibration.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.reviewer_summary import (
    REVIEW_COUNTS,
    REVIEW_SUMS,
    ReviewerSummary,
    merge_reviewers,
    reviewer_summary_from_payload,
    reviewer_summary_payload,
    summarize_reviewers,
)
from llm_council.bias_audit.report.estimates import (
    Interval,
    ReviewerProfile,
    reliability_tier,
)
from llm_council.bias_audit.report.load.tables import (
    rank_point_reviewers,
    scores_sum_to_a_constant,
)
from llm_council.stats.inference.fisher_z_sums import fisher_z_pooled_from_sums
from llm_council.stats.inference.pooling import mean_interval_from_moments
from llm_council.stats.reviewers.pairwise_leniency import step_down_pair_leniency
from llm_council.stats.reviewers.robust_leniency import ReviewerLeniency

#: a reviewer whose within-session score sd is this far above/below the median reviewer's
#: is called discriminating / compressed (descriptive, not a test)
_SPREAD_RATIO_BAND = 0.2


def _spread_label(ratio: float) -> str:
    if not np.isfinite(ratio):
        return "unknown"
    if ratio >= 1 + _SPREAD_RATIO_BAND:
        return "discriminating"
    if ratio <= 1 - _SPREAD_RATIO_BAND:
        return "compressed"
    return "typical"


#: the label when each reviewer's scores in a session add up to the same total (leniency),
#: or are rank points, whose spread is fixed by how many answers were ranked (spread)
NOT_IDENTIFIED = "not identified"


#: the smallest leniency called harsh/generous, as a share of the score scale's range (0.25
#: points on 1-10): over hundreds of sessions a tenth of a point is "significant", and a user
#: who reads "harsh" would act on a difference no one would notice in a single verdict
MATERIAL_LENIENCY_SHARE = 0.025


def _leniency_label(result: ReviewerLeniency, material: float) -> str:
    """harsh / generous when the step-down flags it AND it is at least ``material`` points;
    a flagged difference smaller than that is "neutral" (the estimate is still printed)."""
    estimate = result.estimate
    if not np.isfinite(estimate.ci_low):
        return "unknown"
    if not result.flagged or abs(estimate.estimate) < material:
        return "neutral"
    return "harsh" if estimate.estimate < 0 else "generous"


@dataclass(frozen=True)
class ProfiledReviewers:
    """The profiles and what other sections need from them.

    ``forced_choice``: every reviewer's level is fixed by the scale
    (:func:`leniency_fixed_by_the_scale`); ``rank_reviewers``: the rank-point reviewers
    (:func:`~llm_council.bias_audit.report.load.tables.rank_point_reviewers`);
    ``material_leniency``: :func:`material_leniency`.
    """

    profiles: list[ReviewerProfile]
    forced_choice: bool
    rank_reviewers: frozenset[str]
    material_leniency: float

    @property
    def reference(self) -> list[str]:
        """The robust leniency reference (the joint model centres its leniencies on it)."""
        return [p.reviewer for p in self.profiles if p.in_leniency_reference]

    @property
    def level_fixed(self) -> frozenset[str]:
        """The reviewers whose level the scale fixes (anchoring leaves them out)."""
        return (
            frozenset(p.reviewer for p in self.profiles)
            if self.forced_choice
            else (self.rank_reviewers)
        )


def _column(summary: ReviewerSummary, name: str) -> np.ndarray:
    return summary.counts[:, REVIEW_COUNTS.index(name)]


def rank_reviewers_of(summary: ReviewerSummary) -> set[str]:
    """Reviewers whose every scored review is rank points and one ranked two or more
    (:func:`~llm_council.bias_audit.report.load.tables.rank_point_reviewers`)."""
    rank = (
        (_column(summary, "sessions") > 0)
        & (_column(summary, "not_rank_points") == 0)
        & (_column(summary, "max_scores") >= 2)
    )
    return {name for name, is_rank in zip(summary.reviewers, rank, strict=True) if is_rank}


def fixed_by_the_scale(summary: ReviewerSummary, rank_reviewers: set[str]) -> bool:
    """:func:`leniency_fixed_by_the_scale` from the summary: all complete score sets (two
    or more) add up to one number, or every reviewer that scored gave rank points."""
    n_sets = int(_column(summary, "complete_sets").sum())
    if n_sets >= 2:
        low = np.nanmin(summary.sums[:, REVIEW_SUMS.index("complete_min")])
        high = np.nanmax(summary.sums[:, REVIEW_SUMS.index("complete_max")])
        if abs(float(high - low)) < 1e-9:
            return True
    n_scoring = int((_column(summary, "scores") > 0).sum())
    return bool(rank_reviewers) and len(rank_reviewers) == n_scoring


def material_of(summary: ReviewerSummary) -> float:
    """:data:`MATERIAL_LENIENCY_SHARE` of the median score range (DuckDB's ``median``: the
    mean of the two middle values of an even count), from the ranges' histogram."""
    total = int(summary.scale_range_counts.sum())
    if total == 0:
        return MATERIAL_LENIENCY_SHARE * 9.0
    cumulative = np.cumsum(summary.scale_range_counts)
    low = summary.scale_ranges[np.searchsorted(cumulative, (total - 1) // 2 + 1)]
    high = summary.scale_ranges[np.searchsorted(cumulative, total // 2 + 1)]
    return MATERIAL_LENIENCY_SHARE * float((low + high) / 2)


def robust_leniencies_of(
    summary: ReviewerSummary, excluded: set[str] | frozenset[str] = frozenset()
) -> dict[str, ReviewerLeniency]:
    """Each reviewer's leniency against the step-down reference, from the pair sums
    (:func:`~llm_council.stats.reviewers.pairwise_leniency.step_down_pair_leniency`).
    ``excluded`` reviewers (rank-point reviewers among scorers) are left out of the
    estimation and the reference: their level is on another scale."""
    keep = np.array(
        [index for index, name in enumerate(summary.reviewers) if name not in excluded],
        dtype=np.int64,
    )
    if keep.size == 0 or int(_column(summary, "scores")[keep].sum()) == 0:
        return {}
    results = step_down_pair_leniency(summary.pairs.take(keep))
    return {summary.reviewers[index]: result for index, result in zip(keep, results, strict=True)}


def _length_correlations(summary: ReviewerSummary) -> dict[str, Interval]:
    return {
        name: Interval.from_estimate(fisher_z_pooled_from_sums(row))
        for name, row in zip(summary.reviewers, summary.length_sums, strict=True)
        if row[0] > 0
    }


def _spreads(summary: ReviewerSummary) -> np.ndarray:
    """Root mean within-session score variance (NaN without one)."""
    n = _column(summary, "variances")
    total = summary.sums[:, REVIEW_SUMS.index("variance_sum")]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, np.sqrt(total / np.maximum(n, 1)), np.nan)


def _profile(
    summary: ReviewerSummary,
    index: int,
    robust: ReviewerLeniency | None,
    context: tuple[bool, set[str], float, float, dict[str, Interval]],
) -> ReviewerProfile:
    leniency_identified, rank_reviewers, material, median_spread, correlations = context
    reviewer = summary.reviewers[index]
    nan = float("nan")
    n_scores = int(_column(summary, "scores")[index])
    n_sessions = int(_column(summary, "sessions")[index])
    estimate = robust.estimate if robust else mean_interval_from_moments(nan, nan, 0)
    z = (
        estimate.estimate / estimate.standard_error
        if estimate.standard_error and np.isfinite(estimate.standard_error)
        else nan
    )
    spread = float(_spreads(summary)[index])
    ratio = spread / median_spread if median_spread else nan
    identified_here = leniency_identified and reviewer not in rank_reviewers
    return ReviewerProfile(
        reviewer=reviewer,
        n_sessions=n_sessions,
        n_scores=n_scores,
        n_missing_scores=int(_column(summary, "records")[index]) - n_scores,
        mean_score=float(summary.sums[index, 0] / n_scores) if n_scores else nan,
        leniency=Interval.from_estimate(estimate),
        leniency_z=float(z),
        leniency_label=(
            _leniency_label(robust, material)
            if robust
            else "unknown"
            if identified_here
            else NOT_IDENTIFIED
        ),
        leniency_p_holm=robust.adjusted_p_value if robust else nan,
        in_leniency_reference=(
            # a rank-point reviewer among scorers is outside the reference (its level is
            # the ranking's, not the judge's); without any identified leniency, all are in
            robust.in_reference
            if robust
            else not leniency_identified or reviewer not in rank_reviewers
        ),
        spread=spread,
        spread_ratio=float(ratio),
        spread_label=NOT_IDENTIFIED if reviewer in rank_reviewers else _spread_label(ratio),
        length_correlation=correlations.get(reviewer, Interval(nan, nan, nan)),
        reliability=reliability_tier(estimate.n_clusters if identified_here else n_sessions),
    )


def profiles_of(
    summary: ReviewerSummary,
    *,
    forced_choice: bool | None = None,
    rank_reviewers: set[str] | None = None,
) -> ProfiledReviewers:
    """One profile per reviewer, sorted by leniency (harshest first), from the summary.

    A rank-point reviewer's spread is labelled not identified: every complete ranking of
    N answers has the sd of 1..N, so its "spread" measures N, not the judge.
    """
    if rank_reviewers is None:
        rank_reviewers = rank_reviewers_of(summary)
    if forced_choice is None:
        forced_choice = fixed_by_the_scale(summary, rank_reviewers)
    # on a forced-choice scale (pairwise 1/0/0.5) a reviewer's level is fixed by the scale:
    # nothing to estimate, and an estimate would only echo its self-reviews
    leniencies = robust_leniencies_of(summary, rank_reviewers) if not forced_choice else {}
    material = material_of(summary)
    spreads = _spreads(summary)
    finite = spreads[np.isfinite(spreads)]
    median_spread = float(np.median(finite)) if finite.size else float("nan")
    context = (
        not forced_choice,
        rank_reviewers,
        material,
        median_spread,
        _length_correlations(summary),
    )
    profiles = [
        _profile(summary, index, leniencies.get(name), context)
        for index, name in enumerate(summary.reviewers)
    ]
    profiles.sort(
        key=lambda p: (not np.isfinite(p.leniency.estimate), p.leniency.estimate, p.reviewer)
    )
    return ProfiledReviewers(profiles, bool(forced_choice), frozenset(rank_reviewers), material)


class ReviewerProfilesSection:
    """:func:`reviewer_profiles` as an incremental section (ADRs 0073, 0079)."""

    name = "reviewer_profiles"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ReviewerSummary:
        return summarize_reviewers(connection)

    def merge(self, saved: ReviewerSummary, new: ReviewerSummary) -> ReviewerSummary:
        return merge_reviewers(saved, new)

    def finish(self, summary: ReviewerSummary) -> ProfiledReviewers:
        return profiles_of(summary)

    def to_payload(self, summary: ReviewerSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return reviewer_summary_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ReviewerSummary:
        return reviewer_summary_from_payload(meta, arrays)


REVIEWER_PROFILES = ReviewerProfilesSection()


def leniency_fixed_by_the_scale(
    connection: duckdb.DuckDBPyConnection, rank_reviewers: set[str] | None = None
) -> bool:
    """Is every reviewer's level fixed by the scale? Yes when all complete score sets of a
    session add up to one number (:func:`scores_sum_to_a_constant`), or when every
    reviewer gave rank points (:func:`rank_point_reviewers`; ``rank_reviewers`` when the
    caller has them): then leniency is not identified, whatever the design."""
    if scores_sum_to_a_constant(connection):
        return True
    ranks = rank_point_reviewers(connection) if rank_reviewers is None else rank_reviewers
    row = connection.execute("SELECT count(DISTINCT reviewer) FROM scored").fetchone()
    return bool(ranks) and row is not None and len(ranks) == int(row[0])


def material_leniency(connection: duckdb.DuckDBPyConnection) -> float:
    """:data:`MATERIAL_LENIENCY_SHARE` of the store's median score range, in points."""
    row = connection.execute(
        "SELECT median(scale_high - scale_low) FROM records WHERE score IS NOT NULL"
    ).fetchone()
    scale_range = float(row[0]) if row and row[0] is not None else 9.0
    return MATERIAL_LENIENCY_SHARE * scale_range


def robust_leniencies(
    connection: duckdb.DuckDBPyConnection, excluded: set[str] | None = None
) -> dict[str, ReviewerLeniency]:
    """Each reviewer's leniency against the step-down reference (by reviewer id), from
    every session of ``connection`` (:func:`robust_leniencies_of`)."""
    return robust_leniencies_of(summarize_reviewers(connection), excluded or frozenset())


def reviewer_length_correlations(connection: duckdb.DuckDBPyConnection) -> dict[str, Interval]:
    """Each reviewer's own log-length/score correlation, pooled over sessions (Fisher z)."""
    return _length_correlations(summarize_reviewers(connection))


def reviewer_profiles(
    connection: duckdb.DuckDBPyConnection,
    *,
    forced_choice: bool | None = None,
    rank_reviewers: set[str] | None = None,
) -> list[ReviewerProfile]:
    """One profile per reviewer, sorted by leniency (harshest first), from every session of
    ``connection`` (:class:`ReviewerProfilesSection` with nothing saved); ``forced_choice``
    and ``rank_reviewers`` override what the summary says when the caller has them."""
    return profiles_of(
        summarize_reviewers(connection), forced_choice=forced_choice, rank_reviewers=rank_reviewers
    ).profiles
