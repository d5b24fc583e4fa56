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

**Intervals** resample whole sessions (a session's answers share reviewers and question):
the percentile interval of :func:`~llm_council.stats.reliability.clustered_alpha.clustered_alpha`,
seeded by the report's ``--seed`` so a run repeats exactly. "Alpha without" a reviewer,
and its change from alpha, are computed on the same draws.

Reviewers whose every review is rank points (rankings only, ADR 0040) are left out of
both: their points are not scores on the council's scale, and their resolution is that of
a ranking by construction. Alpha uses the records on the store's most common score scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.reliability.clustered_alpha import AlphaWithInterval, clustered_alpha
from llm_council.stats.reliability.krippendorff_alpha import Metric
from llm_council.stats.reliability.score_resolution import score_resolution

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


def council_alpha(
    connection: duckdb.DuckDBPyConnection,
    rank_reviewers: frozenset[str] | set[str] = frozenset(),
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> tuple[list[str], list[CouncilAlpha], int, int, int, int, tuple[float, float] | None, int]:
    """Alpha per metric from ``records`` (module docstring), with its bookkeeping."""
    kept_reviewers = "NOT list_contains(?::VARCHAR[], reviewer)"
    scored = f"score IS NOT NULL AND NOT is_self AND {kept_reviewers}"
    rank_list = sorted(rank_reviewers)
    scales = connection.execute(
        f"""SELECT scale_low, scale_high, count(*) AS n FROM records WHERE {scored}
            GROUP BY ALL ORDER BY n DESC, scale_low DESC, scale_high DESC""",
        [rank_list],
    ).fetchall()
    if not scales:
        return [], [], 0, 0, 0, 0, None, 0
    scale = (float(scales[0][0]), float(scales[0][1]))
    other = sum(int(row[2]) for row in scales[1:])
    columns = connection.execute(
        f"""SELECT (dense_rank() OVER (ORDER BY session, model) - 1)::BIGINT AS unit,
                   (dense_rank() OVER (ORDER BY session) - 1)::BIGINT AS session_code,
                   (dense_rank() OVER (ORDER BY reviewer) - 1)::BIGINT AS rater,
                   reviewer, score
            FROM records WHERE {scored} AND scale_low = ? AND scale_high = ?
            -- a fixed row order: DuckDB's threads return rows in any order, and the
            -- coincidence sums (floats) must add up the same way on every run
            ORDER BY unit, rater, score""",
        [rank_list, *scale],
    ).fetchnumpy()
    return alpha_from_ratings(
        AlphaRatings(
            unit=np.asarray(columns["unit"], dtype=np.int64),
            rater=np.asarray(columns["rater"], dtype=np.int64),
            session=np.asarray(columns["session_code"], dtype=np.int64),
            reviewer=np.asarray(columns["reviewer"], dtype=object),
            score=np.asarray(columns["score"], dtype=float),
        ),
        scale,
        other,
        n_resamples=n_resamples,
        seed=seed,
    )


@dataclass(frozen=True)
class AlphaRatings:
    """The ratings alpha reads, one per scored non-self record on the chosen scale, sorted
    by (unit, rater, score): dense unit codes in (session, model) order, dense session
    codes, dense rater codes in reviewer order, the reviewer's name and the score."""

    unit: np.ndarray
    rater: np.ndarray
    session: np.ndarray
    reviewer: np.ndarray
    score: np.ndarray


def alpha_from_ratings(
    ratings: AlphaRatings,
    scale: tuple[float, float],
    other: int,
    *,
    n_resamples: int,
    seed: int,
) -> tuple[list[str], list[CouncilAlpha], int, int, int, int, tuple[float, float] | None, int]:
    """:func:`council_alpha`'s result from its ratings (also the incremental section's)."""
    units, raters, sessions = ratings.unit, ratings.rater, ratings.session
    group_of_unit = np.zeros(int(units.max()) + 1, dtype=np.int64)
    group_of_unit[units] = sessions
    names = ratings.reviewer
    reviewers = [""] * (int(raters.max()) + 1)
    for code, index in zip(*np.unique(raters, return_index=True), strict=True):
        reviewers[int(code)] = str(names[index])
    score_values = ratings.score
    n_sessions = int(sessions.max()) + 1
    alphas: list[CouncilAlpha] = []
    estimate = None
    for metric in METRICS:
        estimate = clustered_alpha(
            units,
            raters,
            score_values,
            group_of_unit,
            metric,
            resamples=n_resamples,
            seed=seed,
        )
        reason = ""
        if math.isnan(estimate.alpha.estimate):
            reason = _undefined_reason(score_values, estimate.n_units)
        alphas.append(
            CouncilAlpha(
                metric=metric,
                alpha=_interval(estimate.alpha),
                without=[_interval(value) for value in estimate.without_rater],
                change_without=[_interval(value) for value in estimate.change_without_rater],
                undefined_reason=reason,
            )
        )
    assert estimate is not None
    return (
        reviewers,
        alphas,
        estimate.n_units,
        n_sessions,
        int(units.size),
        estimate.resamples,
        scale,
        other,
    )


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
        expanded = np.repeat(
            [score for score, _ in scales[scale]], [count for _, count in scales[scale]]
        )
        resolution = score_resolution(expanded.tolist(), scale)
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


def council_reliability(
    connection: duckdb.DuckDBPyConnection,
    rank_reviewers: frozenset[str] | set[str] = frozenset(),
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> CouncilReliability:
    """The whole section from the ``records`` table (a report section: run by the runner)."""
    reviewers, alphas, n_units, n_sessions, n_ratings, resamples, scale, other = council_alpha(
        connection, rank_reviewers, n_resamples=n_resamples, seed=seed
    )
    distinct = connection.execute("SELECT DISTINCT reviewer FROM records").fetchall()
    present = {str(row[0]) for row in distinct}
    return CouncilReliability(
        reviewers=reviewers,
        alphas=alphas,
        n_units=n_units,
        n_sessions=n_sessions,
        n_ratings=n_ratings,
        resamples=resamples,
        scale=scale,
        resolution=reviewer_resolution(connection, rank_reviewers),
        rank_only_reviewers=sorted(present & set(rank_reviewers)),
        other_scale_records=other,
    )
