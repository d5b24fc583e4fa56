"""The reviewer profiles' per-session reductions, summed per reviewer (ADR 0079).

Everything :func:`~.reviewers.reviewer_profiles` reads from the records, as sums whose
size is fixed by the council, not by the sessions: per reviewer the review counts and
score moments, the rank-point test's counts, the Fisher-z sums of its length correlations;
per reviewer triple the pair-deviation sums of
:mod:`llm_council.stats.reviewers.pairwise_leniency` (``R^3``); for the store, the
complete score sets' total range and the scale ranges' histogram. Two summaries merge by
adding (reviewers aligned by name), so a re-run after an append equals a full recompute up
to the rounding of float sums taken in another order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.load.tables import (
    _RANK_POINT_REVIEW,
    dense_codes,
    nullable_floats,
)
from llm_council.stats.inference.fisher_z_sums import FISHER_Z_SUM_COLUMNS, fisher_z_terms
from llm_council.stats.numerics.double_double_sums import add_double_double, double_double_sum
from llm_council.stats.reviewers.pairwise_leniency import PairDeviationSums, pair_deviation_sums

#: per-reviewer integer counts: sessions it scored in, scores, records, within-session
#: variances, scored reviews that are not rank points, most scores in one review, complete
#: score sets
REVIEW_COUNTS = (
    "sessions",
    "scores",
    "records",
    "variances",
    "not_rank_points",
    "max_scores",
    "complete_sets",
)
#: per-reviewer float sums: scores, within-session variances, complete sets' min and max
REVIEW_SUMS = ("score_sum", "variance_sum", "complete_min", "complete_max")
#: score cells per chunk of sessions in the pair-deviation cube (memory, not results)
_CUBE_CELLS = 4_000_000


@dataclass(frozen=True)
class ReviewerSummary:
    """The sums of the module docstring; rows in the order of ``reviewers`` (sorted)."""

    reviewers: tuple[str, ...]
    counts: np.ndarray  # (R, len(REVIEW_COUNTS)) int64
    sums: np.ndarray  # (R, len(REVIEW_SUMS)) float; complete min/max NaN without a set
    length_sums: np.ndarray  # (R, 6) float, FISHER_Z_SUM_COLUMNS
    pairs: PairDeviationSums
    scale_ranges: np.ndarray  # (K,) float, distinct (scale_high - scale_low) of scores
    scale_range_counts: np.ndarray  # (K,) int64
    sums_lo: np.ndarray  # (R, 2): the double-double low parts of score_sum, variance_sum
    length_sums_lo: np.ndarray  # (R, 6)


def _grouped_double_double(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_groups, 2, ...)``: per group, the double-double sum (hi, lo) of its rows."""
    out = np.zeros((n_groups, 2, *values.shape[1:]))
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    for index in range(n_groups):
        rows = values[order[bounds[index] : bounds[index + 1]]]
        out[index, 0], out[index, 1] = double_double_sum(rows)
    return out


def _per_reviewer(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Names, counts, sums and the sums' low parts, from one row per review."""
    reviews = connection.execute(
        f"""SELECT reviewer, count(score) AS n_scores, count(*) AS n_records,
                   sum(score) AS score_sum, var_samp(score) AS score_variance,
                   CASE WHEN {_RANK_POINT_REVIEW} THEN 1 ELSE 0 END AS rank_points
            FROM records GROUP BY reviewer, session"""
    ).fetchnumpy()
    names, reviewer = np.unique(np.asarray(reviews["reviewer"], dtype=str), return_inverse=True)
    n = names.size
    n_scores = np.asarray(reviews["n_scores"], dtype=np.int64)
    n_records = np.asarray(reviews["n_records"], dtype=np.int64)
    score_sum = np.nan_to_num(nullable_floats(reviews["score_sum"]))
    variance = nullable_floats(reviews["score_variance"])
    rank_points = np.asarray(reviews["rank_points"], dtype=np.int64)
    scored, complete = n_scores > 0, (n_scores == n_records) & (n_records >= 2)

    def per(values: np.ndarray) -> np.ndarray:
        return np.bincount(reviewer, weights=values, minlength=n).astype(np.int64)

    max_scores = np.zeros(n, dtype=np.int64)
    np.maximum.at(max_scores, reviewer, n_scores)
    counts = np.column_stack(
        [
            per(scored),
            per(n_scores),
            per(n_records),
            per(np.isfinite(variance)),
            per(scored & (rank_points == 0)),
            max_scores,
            per(complete),
        ]
    ).reshape(-1, len(REVIEW_COUNTS))
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    np.fmin.at(low, reviewer[complete], score_sum[complete])
    np.fmax.at(high, reviewer[complete], score_sum[complete])
    moments = _grouped_double_double(
        np.column_stack([score_sum, np.nan_to_num(variance)]), reviewer, n
    )
    sums = np.column_stack([moments[:, 0], low, high]).reshape(-1, len(REVIEW_SUMS))
    return [str(name) for name in names], counts, sums, moments[:, 1]


def _length_sums(
    connection: duckdb.DuckDBPyConnection, names: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Each reviewer's Fisher-z sums (hi, lo) of its per-session log-length/score
    correlations."""
    rows = connection.execute(
        """SELECT rv.reviewer, corr(score, ln(greatest(words, 1))) AS r, count(*) AS n
           FROM scored s JOIN reviewers rv USING (reviewer_index) WHERE NOT is_self
           GROUP BY rv.reviewer, s.session HAVING count(*) >= 3"""
    ).fetchnumpy()
    position = {name: index for index, name in enumerate(names)}
    reviewer = np.array([position[str(name)] for name in rows["reviewer"]], dtype=np.int64)
    r, n = nullable_floats(rows["r"]), np.asarray(rows["n"], dtype=float)
    usable = np.isfinite(r)
    terms = fisher_z_terms(r[usable], n[usable])
    sums = _grouped_double_double(terms, reviewer[usable], len(names))
    return sums[:, 0], sums[:, 1]


def _pair_sums(connection: duckdb.DuckDBPyConnection, names: list[str]) -> PairDeviationSums:
    """The pair-deviation sums of every session, built a chunk of sessions at a time."""
    rows = connection.execute(
        """SELECT s.session, rv.reviewer, s.model_index, s.score
           FROM scored s JOIN reviewers rv USING (reviewer_index) WHERE NOT s.is_self"""
    ).fetchnumpy()
    n_reviewers = len(names)
    total = PairDeviationSums.empty(n_reviewers)
    position = {name: index for index, name in enumerate(names)}
    reviewer = np.array([position[str(name)] for name in rows["reviewer"]], dtype=np.int64)
    if reviewer.size == 0:
        return total
    _, session = dense_codes(np.asarray(rows["session"], dtype=np.int64))
    model = np.asarray(rows["model_index"], dtype=np.int64)
    score = np.asarray(rows["score"], dtype=float)
    n_models = int(model.max()) + 1
    per_session = n_reviewers * n_reviewers * max(n_reviewers, n_models)
    chunk = max(1, _CUBE_CELLS // per_session)
    order = np.argsort(session, kind="stable")
    session, reviewer, model, score = session[order], reviewer[order], model[order], score[order]
    n_sessions = int(session[-1]) + 1
    bounds = np.searchsorted(session, np.arange(0, n_sessions + chunk, chunk))
    for low, (start, stop) in zip(
        range(0, n_sessions, chunk), zip(bounds[:-1], bounds[1:], strict=False), strict=False
    ):
        size = min(chunk, n_sessions - low)
        cube = np.full((size, n_reviewers, n_models), np.nan)
        cube[session[start:stop] - low, reviewer[start:stop], model[start:stop]] = score[start:stop]
        total = total + pair_deviation_sums(cube)
    return total


def summarize_reviewers(connection: duckdb.DuckDBPyConnection) -> ReviewerSummary:
    """The summary of every session in ``connection``'s tables."""
    names, counts, sums, sums_lo = _per_reviewer(connection)
    length_sums, length_sums_lo = _length_sums(connection, names)
    ranges = connection.execute(
        """SELECT scale_high - scale_low AS scale_range, count(*) FROM records
           WHERE score IS NOT NULL AND scale_high - scale_low IS NOT NULL
           GROUP BY scale_range ORDER BY scale_range"""
    ).fetchall()
    return ReviewerSummary(
        reviewers=tuple(names),
        counts=counts,
        sums=sums,
        length_sums=length_sums,
        pairs=_pair_sums(connection, names),
        scale_ranges=np.array([float(row[0]) for row in ranges], dtype=float),
        scale_range_counts=np.array([int(row[1]) for row in ranges], dtype=np.int64),
        sums_lo=sums_lo,
        length_sums_lo=length_sums_lo,
    )


def _aligned(summary: ReviewerSummary, names: tuple[str, ...]) -> ReviewerSummary:
    """``summary`` with rows for every reviewer of ``names`` (zeros for the absent)."""
    where = np.array([names.index(name) for name in summary.reviewers], dtype=np.int64)
    n = len(names)
    counts = np.zeros((n, len(REVIEW_COUNTS)), dtype=np.int64)
    sums = np.zeros((n, len(REVIEW_SUMS)))
    sums[:, 2:] = np.nan
    sums_lo = np.zeros((n, 2))
    length = np.zeros((n, len(FISHER_Z_SUM_COLUMNS)))
    length_lo = np.zeros_like(length)
    counts[where], sums[where], sums_lo[where] = summary.counts, summary.sums, summary.sums_lo
    length[where], length_lo[where] = summary.length_sums, summary.length_sums_lo
    pairs = PairDeviationSums.empty(n)
    grid = np.ix_(where, where, where)
    for field in ("cross", "first", "both", "cross_lo", "first_lo"):
        getattr(pairs, field)[grid] = getattr(summary.pairs, field)
    pairs.sessions[where] = summary.pairs.sessions
    return ReviewerSummary(
        names,
        counts,
        sums,
        length,
        pairs,
        summary.scale_ranges,
        summary.scale_range_counts,
        sums_lo,
        length_lo,
    )


def merge_reviewers(saved: ReviewerSummary, new: ReviewerSummary) -> ReviewerSummary:
    """The summary of two disjoint sets of sessions: sums added (as double-doubles),
    counts added, the most scores in a review and the complete sets' min/max combined."""
    names = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    a, b = _aligned(saved, names), _aligned(new, names)
    counts = a.counts + b.counts
    most = REVIEW_COUNTS.index("max_scores")
    counts[:, most] = np.maximum(a.counts[:, most], b.counts[:, most])
    sums, sums_lo = add_double_double(a.sums[:, :2], a.sums_lo, b.sums[:, :2], b.sums_lo)
    length, length_lo = add_double_double(
        a.length_sums, a.length_sums_lo, b.length_sums, b.length_sums_lo
    )
    low = np.fmin(a.sums[:, 2], b.sums[:, 2])
    high = np.fmax(a.sums[:, 3], b.sums[:, 3])
    ranges, inverse = np.unique(np.r_[a.scale_ranges, b.scale_ranges], return_inverse=True)
    range_counts = np.zeros(ranges.size, dtype=np.int64)
    np.add.at(range_counts, inverse, np.r_[a.scale_range_counts, b.scale_range_counts])
    return ReviewerSummary(
        names,
        counts,
        np.column_stack([sums, low, high]),
        length,
        a.pairs + b.pairs,
        ranges.astype(float),
        range_counts,
        sums_lo,
        length_lo,
    )


def reviewer_summary_payload(
    summary: ReviewerSummary,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The summary as JSON-safe metadata and named arrays (tables as float64)."""
    return {"reviewers": list(summary.reviewers)}, {
        "counts": summary.counts.astype(np.int64),
        "sums": summary.sums.astype(np.float64),
        "length_sums": summary.length_sums.astype(np.float64),
        "sums_lo": summary.sums_lo.astype(np.float64),
        "length_sums_lo": summary.length_sums_lo.astype(np.float64),
        "pair_cross": summary.pairs.cross.astype(np.float64),
        "pair_cross_lo": summary.pairs.cross_lo.astype(np.float64),
        "pair_first_lo": summary.pairs.first_lo.astype(np.float64),
        "pair_first": summary.pairs.first.astype(np.float64),
        "pair_both": summary.pairs.both.astype(np.int64),
        "pair_sessions": summary.pairs.sessions.astype(np.int64),
        "scale_ranges": summary.scale_ranges.astype(np.float64),
        "scale_range_counts": summary.scale_range_counts.astype(np.int64),
    }


def reviewer_summary_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> ReviewerSummary:
    """The summary back from :func:`reviewer_summary_payload`; ``ValueError`` naming the
    field when it is malformed."""
    read = PayloadReader("reviewer_profiles", meta, arrays)
    names = read.names("reviewers")
    if list(names) != sorted(names):
        raise read.fail("reviewers", "is not sorted")
    n = len(names)
    cube = (n, n, n)
    n_ranges = read.array("scale_ranges", "f", (None,)).shape[0]
    return ReviewerSummary(
        reviewers=names,
        counts=read.counts("counts", (n, len(REVIEW_COUNTS))),
        sums=read.finite("sums", (n, len(REVIEW_SUMS)), nan_ok=True),
        length_sums=read.finite("length_sums", (n, len(FISHER_Z_SUM_COLUMNS))),
        pairs=PairDeviationSums(
            cross=read.finite("pair_cross", cube),
            first=read.finite("pair_first", cube),
            both=read.counts("pair_both", cube),
            sessions=read.counts("pair_sessions", (n,)),
            cross_lo=read.finite("pair_cross_lo", cube),
            first_lo=read.finite("pair_first_lo", cube),
        ),
        scale_ranges=read.finite("scale_ranges", (n_ranges,)),
        scale_range_counts=read.counts("scale_range_counts", (n_ranges,)),
        sums_lo=read.finite("sums_lo", (n, 2)),
        length_sums_lo=read.finite("length_sums_lo", (n, len(FISHER_Z_SUM_COLUMNS))),
    )
