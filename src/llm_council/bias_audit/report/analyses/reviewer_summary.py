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
from llm_council.bias_audit.report.analyses.session_rows import group_starts
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


def _name_ranks(
    connection: duckdb.DuckDBPyConnection, table: str, names: list[str] | None
) -> np.ndarray:
    """Per dense index of ``table`` (reviewers or models): the name's position in
    ``names``, or its rank among the table's names (numbers that do not depend on the load)."""
    column = table[:-1]
    rows = connection.execute(f"SELECT {column}_index, {column} FROM {table}").fetchall()
    lookup = np.zeros(max((int(row[0]) for row in rows), default=-1) + 1, dtype=np.int64)
    if names is None:
        names = sorted(str(row[1]) for row in rows)
    position = {name: index for index, name in enumerate(names)}
    for index, name in rows:
        lookup[int(index)] = position[str(name)]
    return lookup


def _scored_rows(connection: duckdb.DuckDBPyConnection, names: list[str]) -> dict[str, np.ndarray]:
    """Every scored cell as arrays (reviewer as its position in ``names``, the model as
    its rank among the models' names: numbers that do not depend on the load)."""
    rows = connection.execute(
        """SELECT reviewer_index, session, model_index, score,
                  ln(greatest(words, 1)) AS x, is_self
           FROM scored"""
    ).fetchnumpy()
    reviewers = _name_ranks(connection, "reviewers", names)
    models = _name_ranks(connection, "models", None)
    return {
        "reviewer": reviewers[np.asarray(rows["reviewer_index"], dtype=np.int64)],
        "session": np.asarray(rows["session"], dtype=np.int64),
        "model": models[np.asarray(rows["model_index"], dtype=np.int64)],
        "score": np.asarray(rows["score"], dtype=float),
        "x": nullable_floats(rows["x"]),
        "is_self": np.asarray(rows["is_self"], dtype=bool),
    }


def _group_moments(
    reviewer: np.ndarray, session: np.ndarray, *values: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Per (reviewer, session) group: its keys, size, means and centred (co)moments of
    ``values`` (one or two columns), summed in a canonical order (keys, then the values
    themselves), so a group gives the same bits whichever load it came from."""
    order = np.lexsort((*values[::-1], session, reviewer))
    reviewer, session = reviewer[order], session[order]
    columns = [column[order] for column in values]
    starts = group_starts(reviewer, session)
    n = np.diff(np.r_[starts, reviewer.size]).astype(float)
    each = np.repeat(np.arange(starts.size), n.astype(np.int64))
    means = [np.add.reduceat(column, starts) / n if starts.size else n for column in columns]
    centred = [column - mean[each] for column, mean in zip(columns, means, strict=True)]
    products = [
        np.add.reduceat(c * d, starts) if starts.size else n for c in centred for d in centred
    ]
    return reviewer[starts], session[starts], n, means, products


def _grouped_double_double(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``(n_groups, 2, ...)``: per group, the double-double sum (hi, lo) of its rows."""
    out = np.zeros((n_groups, 2, *values.shape[1:]))
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(n_groups + 1))
    for index in range(n_groups):
        rows = values[order[bounds[index] : bounds[index + 1]]]
        out[index, 0], out[index, 1] = double_double_sum(rows)
    return out


def _review_counts(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[list[str], dict[str, np.ndarray]]:
    """One row per review (reviewer, session) of integer counts and the rank-point test."""
    reviews = connection.execute(
        f"""WITH per_review AS (
                SELECT reviewer, session, count(score) AS n_scores, count(*) AS n_records,
                       CASE WHEN {_RANK_POINT_REVIEW} THEN 1 ELSE 0 END AS rank_points
                FROM records GROUP BY reviewer, session)
            SELECT rv.reviewer_index, p.session, p.n_scores, p.n_records, p.rank_points
            FROM per_review p JOIN reviewers rv USING (reviewer)"""
    ).fetchnumpy()
    names = sorted(
        str(row[0]) for row in connection.execute("SELECT reviewer FROM reviewers").fetchall()
    )
    reviewer = _name_ranks(connection, "reviewers", names)[
        np.asarray(reviews["reviewer_index"], dtype=np.int64)
    ]
    return names, {
        "reviewer": reviewer,
        "session": np.asarray(reviews["session"], dtype=np.int64),
        "n_scores": np.asarray(reviews["n_scores"], dtype=np.int64),
        "n_records": np.asarray(reviews["n_records"], dtype=np.int64),
        "rank_points": np.asarray(reviews["rank_points"], dtype=np.int64),
    }


def _per_reviewer(
    reviews: dict[str, np.ndarray], cells: dict[str, np.ndarray], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts, sums and the sums' low parts per reviewer, from the reviews' counts and the
    scored cells' per-review score sums and sample variances (NaN below two scores, as
    DuckDB's ``var_samp``)."""
    keys, key_sessions, size, (mean,), (sxx,) = _group_moments(
        cells["reviewer"], cells["session"], cells["score"]
    )
    score_sum = mean * size
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.where(size >= 2, sxx / (size - 1), np.nan)
    reviewer = reviews["reviewer"]
    n_scores, n_records = reviews["n_scores"], reviews["n_records"]
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
            np.bincount(keys, weights=np.isfinite(variance), minlength=n).astype(np.int64),
            per(scored & (reviews["rank_points"] == 0)),
            max_scores,
            per(complete),
        ]
    ).reshape(-1, len(REVIEW_COUNTS))
    # each complete review's total, found among the scored groups by (reviewer, session)
    width = int(max(key_sessions.max(initial=0), reviews["session"].max(initial=0))) + 1
    group_key = keys * width + key_sessions
    wanted = reviewer[complete] * width + reviews["session"][complete]
    totals = score_sum[np.searchsorted(group_key, wanted)] if wanted.size else np.zeros(0)
    low, high = np.full(n, np.nan), np.full(n, np.nan)
    np.fmin.at(low, reviewer[complete], totals)
    np.fmax.at(high, reviewer[complete], totals)
    moments = _grouped_double_double(np.column_stack([score_sum, np.nan_to_num(variance)]), keys, n)
    sums = np.column_stack([moments[:, 0], low, high]).reshape(-1, len(REVIEW_SUMS))
    return counts, sums, moments[:, 1]


def _length_sums(cells: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each reviewer's Fisher-z sums (hi, lo) of its per-session correlations of score
    with ln(words), over its non-self cells of sessions with three or more (DuckDB's
    ``corr``: NaN where either variance is zero)."""
    other = ~cells["is_self"]
    keys, _, size, _, (sxx, sxy, _, syy) = _group_moments(
        cells["reviewer"][other], cells["session"][other], cells["x"][other], cells["score"][other]
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((sxx > 0) & (syy > 0), sxy / np.sqrt(sxx * syy), np.nan)
    usable = (size >= 3) & np.isfinite(r)
    terms = fisher_z_terms(r[usable], size[usable])
    sums = _grouped_double_double(terms, keys[usable], n)
    return sums[:, 0], sums[:, 1]


def _pair_sums(cells: dict[str, np.ndarray], n_reviewers: int) -> PairDeviationSums:
    """The pair-deviation sums of every session, built a chunk of sessions at a time
    (answers in the order of the models' names)."""
    total = PairDeviationSums.empty(n_reviewers)
    other = ~cells["is_self"]
    if not other.any():
        return total
    _, session = dense_codes(cells["session"][other])
    reviewer, model = cells["reviewer"][other], cells["model"][other]
    score = cells["score"][other]
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
        # a reviewer id that scored one answer twice (two members under one id): its mean
        cell = (session[start:stop] - low, reviewer[start:stop], model[start:stop])
        sums = np.zeros((size, n_reviewers, n_models))
        counts = np.zeros((size, n_reviewers, n_models))
        np.add.at(sums, cell, score[start:stop])
        np.add.at(counts, cell, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total + pair_deviation_sums(sums / np.where(counts > 0, counts, np.nan))
    return total


def summarize_reviewers(connection: duckdb.DuckDBPyConnection) -> ReviewerSummary:
    """The summary of every session in ``connection``'s tables."""
    names, reviews = _review_counts(connection)
    cells = _scored_rows(connection, names)
    counts, sums, sums_lo = _per_reviewer(reviews, cells, len(names))
    length_sums, length_sums_lo = _length_sums(cells, len(names))
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
        pairs=_pair_sums(cells, len(names)),
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
