"""The council's reliability: Krippendorff's alpha over its reviews, and each reviewer's
score resolution. Descriptive: neither is a test, and neither enters the report's findings.

**The unit** of alpha is one answer in one session (session, candidate): the members
other than its author rate it in that session, so a unit's ratings are the scores the
reviewers gave that one answer. The same candidate model in two sessions is two units
(its answers differ). The **coders** are the reviewers (by ``reviewer_id``). A reviewer's
score of its own answer is a missing cell, never a rating (self-preference is measured
elsewhere and would read as disagreement here). Check reviews and second review orders
are not in ``records`` and so not here. A unit rated by fewer than two reviewers carries
no pair and drops out.

**What alpha says here**: how far the reviewers' scores of the same answers agree beyond
what their pooled score distribution gives by chance (1 = identical scores, 0 = no more
agreement than chance, below 0 = systematic disagreement). It is agreement, not
correctness: judges that share one blind spot agree perfectly. Two metrics: interval
(differences in points count as their squares) and ordinal (only the order of the levels
counts, so a reviewer's private use of the scale costs less). A constant leniency
difference between reviewers lowers both.

**Intervals** resample whole sessions (a session's answers share reviewers and question)
by a Poisson bootstrap (ADR 0089): in replicate b each session counts ``w_sb`` times,
``w_sb ~ Poisson(1)`` drawn from (the report's ``--seed``, the session id, b) alone, so a
run repeats exactly and a session keeps its weights when the store grows; the percentile
interval of the replicates' alphas
(:func:`~llm_council.stats.reliability.alpha_pair_sums.alpha_from_pair_sums`). "Alpha
without" a reviewer, and its change from alpha, are computed on the same replicates.

Reviewers whose every review is rank points (rankings only, ADR 0040) are left out of
both: their points are not scores on the council's scale, and their resolution is that of
a ranking by construction. Alpha uses the records on the store's most common score scale
(among the ratings it reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.reliability_sums import ScaleSums
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.reliability.alpha_pair_sums import alpha_from_pair_sums
from llm_council.stats.reliability.clustered_alpha import AlphaWithInterval
from llm_council.stats.reliability.krippendorff_alpha import Metric
from llm_council.stats.reliability.score_resolution import score_resolution_from_counts

METRICS: tuple[Metric, ...] = ("interval", "ordinal")
#: a reviewer whose effective number of levels is at most this cannot rank the answers
CANNOT_RANK_LEVELS = 2.0


@dataclass(frozen=True)
class CouncilAlpha:
    """Alpha under one metric, with each reviewer left out (same order as ``reviewers``)."""

    metric: str
    alpha: Interval
    without: list[Interval]  # alpha with reviewers[i] left out
    change_without: list[Interval]  # without[i] minus alpha, on the same session draws
    undefined_reason: str  # empty when alpha is a number


@dataclass(frozen=True)
class ReviewerResolution:
    """How many score levels a reviewer really uses (stats/reliability/score_resolution.py)."""

    reviewer: str
    n_scores: int
    effective_levels: float  # 2 ** entropy of its scores
    distinct_levels: int
    unused_levels: list[int]  # whole levels of its scale it never gave
    scale: tuple[float, float]
    cannot_rank: bool  # effective_levels <= CANNOT_RANK_LEVELS


@dataclass(frozen=True)
class CouncilReliability:
    """The section: alpha (interval and ordinal) and per-reviewer score resolution."""

    reviewers: list[str]  # the coders, sorted
    alphas: list[CouncilAlpha]
    n_units: int  # answers rated by two or more reviewers
    n_sessions: int
    n_ratings: int
    resamples: int
    scale: tuple[float, float] | None
    resolution: list[ReviewerResolution]
    rank_only_reviewers: list[str]  # left out of both: rankings, no scores
    other_scale_records: int  # scored records on another scale, left out of alpha


def _interval(value: AlphaWithInterval) -> Interval:
    return Interval(value.estimate, value.ci_low, value.ci_high)


def _undefined_reason(values: np.ndarray, n_units: int) -> str:
    """Why alpha is not a number, in words (the report prints this, never ``nan``)."""
    if n_units == 0:
        return "no answer was scored by two or more reviewers"
    if np.unique(values).size < 2:
        return "every score is the same value: no variation, so agreement is undefined"
    return "no expected disagreement: the pairable scores take a single value"


def alphas_of_scale(sums: ScaleSums) -> tuple[list[CouncilAlpha], int]:
    """Alpha per metric, with each reviewer left out, from one scale's merged sums, and the
    replicates behind the intervals (0: no interval, one session or alpha undefined)."""
    n_ratings, n_units, n_sessions = (int(n) for n in sums.counts)
    alphas, resamples = [], 0
    for metric in METRICS:
        estimate = alpha_from_pair_sums(
            sums.values,
            sums.divisors,
            sums.sums[0],
            sums.sums[1:],
            metric,
            n_units=n_units,
            n_groups=n_sessions,
            n_ratings=n_ratings,
        )
        reason = ""
        if math.isnan(estimate.alpha.estimate):
            reason = _undefined_reason(sums.values, n_units)
        alphas.append(
            CouncilAlpha(
                metric=metric,
                alpha=_interval(estimate.alpha),
                without=[_interval(value) for value in estimate.without_rater],
                change_without=[_interval(value) for value in estimate.change_without_rater],
                undefined_reason=reason,
            )
        )
        resamples = estimate.resamples
    return alphas, resamples


def reviewer_resolution(
    connection: duckdb.DuckDBPyConnection, rank_reviewers: frozenset[str] | set[str] = frozenset()
) -> list[ReviewerResolution]:
    """Each scoring reviewer's score resolution over all its scores (its own answer's too:
    they are levels it used), on its most common scale."""
    rows = connection.execute(
        """SELECT reviewer, scale_low, scale_high, score, count(*) FROM records
           WHERE score IS NOT NULL GROUP BY ALL ORDER BY reviewer, scale_low, scale_high, score"""
    ).fetchall()
    return resolution_from_counts(rows, rank_reviewers)


def resolution_from_counts(
    rows: list[tuple[Any, ...]], rank_reviewers: frozenset[str] | set[str]
) -> list[ReviewerResolution]:
    """:func:`reviewer_resolution` from its (reviewer, scale low, high, score, count) rows,
    sorted by all but the count."""
    by_reviewer: dict[str, dict[tuple[float, float], list[tuple[float, int]]]] = {}
    for reviewer, low, high, score, count in rows:
        if reviewer in rank_reviewers:
            continue
        scales = by_reviewer.setdefault(str(reviewer), {})
        scales.setdefault((float(low), float(high)), []).append((float(score), int(count)))
    resolutions = []
    for reviewer, scales in sorted(by_reviewer.items()):
        scale = max(scales, key=lambda key: (sum(n for _, n in scales[key]), key))
        resolution = score_resolution_from_counts(scales[scale], scale)
        if resolution is None:
            continue
        resolutions.append(
            ReviewerResolution(
                reviewer=reviewer,
                n_scores=resolution.n_scores,
                effective_levels=resolution.effective_levels,
                distinct_levels=resolution.distinct_levels,
                unused_levels=list(resolution.unused_levels),
                scale=scale,
                cannot_rank=resolution.effective_levels <= CANNOT_RANK_LEVELS,
            )
        )
    return resolutions
