"""Pooled length bias: does a longer answer get a higher score, across sessions?

Each session gives one correlation between ln(words) and the reviewer-centred score (the
score minus that reviewer's mean in the session, so reviewer leniency adds no noise). The
sessions' correlations are pooled on Fisher's z scale with a between-session variance, so
the interval counts sessions, not records: an answer's length repeats once per reviewer,
and an interval built from the record count is far too narrow (see docs/bias-report.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.session_rows import (
    group_starts,
    session_ids_of,
    sorted_by_session,
)
from llm_council.bias_audit.report.estimates import Interval, LengthBias
from llm_council.stats.inference.pooling import fisher_z_interval, fisher_z_pooled_correlation

_SCATTER_SAMPLE = 1500
_SAMPLE_SEED = 7


@dataclass(frozen=True)
class LengthSummary:
    """Per session (sorted by id): the record-level moments of (ln words, score), the
    within-session correlation and its weight; and the plot's candidate points.

    ``n, mean_x, mean_y, sxx, syy, sxy`` are each session's count, means and centred sums
    of squares and products of x = ln(words), y = score over its non-self scored cells;
    ``r`` the correlation of x with the reviewer-centred score (NaN when undefined) and
    ``n_answers`` the session's distinct answers. The sample holds the cells first in the
    hash order of (session_id, reviewer, model), at most :data:`_SCATTER_SAMPLE` of them.
    """

    session_id: np.ndarray
    moments: np.ndarray  # (sessions, 6): n, mean_x, mean_y, sxx, syy, sxy
    r: np.ndarray
    n_answers: np.ndarray
    sample_key: np.ndarray  # uint64 hash
    sample_cell: np.ndarray  # (points, 3) strings: session_id, reviewer, model
    sample_point: np.ndarray  # (points, 2): words, score


def _grouped_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.add.reduceat(values, starts) if starts.size else np.zeros(0)


def _per_session(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, ...]:
    """Each session's moments, centred correlation and answers, from rows in a fixed order."""
    rows = connection.execute(
        """SELECT session, reviewer_index, model_index, ln(greatest(words, 1)) AS x, score
           FROM scored WHERE NOT is_self ORDER BY session, reviewer_index, model_index"""
    ).fetchnumpy()
    session = np.asarray(rows["session"], dtype=np.int64)
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    model = np.asarray(rows["model_index"], dtype=np.int64)
    x, y = np.asarray(rows["x"], dtype=float), np.asarray(rows["score"], dtype=float)
    starts = group_starts(session)
    n = np.diff(np.r_[starts, session.size]).astype(float)
    each = np.repeat(np.arange(starts.size), n.astype(np.int64))
    mean_x, mean_y = _grouped_sums(x, starts) / n, _grouped_sums(y, starts) / n
    dx, dy = x - mean_x[each], y - mean_y[each]
    moments = np.column_stack(
        [
            n,
            mean_x,
            mean_y,
            _grouped_sums(dx * dx, starts),
            _grouped_sums(dy * dy, starts),
            _grouped_sums(dx * dy, starts),
        ]
    )
    # the reviewer-centred score: minus the reviewer's mean in the session
    review = group_starts(session, reviewer)
    review_n = np.diff(np.r_[review, session.size])
    centred = y - np.repeat(_grouped_sums(y, review) / review_n, review_n)
    dc = centred - (_grouped_sums(centred, starts) / n)[each]
    with np.errstate(invalid="ignore", divide="ignore"):
        r = _grouped_sums(dx * dc, starts) / np.sqrt(
            _grouped_sums(dx * dx, starts) * _grouped_sums(dc * dc, starts)
        )
    r[~np.isfinite(r)] = np.nan
    n_models = int(model.max()) + 1 if model.size else 1
    answers = np.unique(session * n_models + model)  # each distinct (session, model)
    n_answers = np.bincount(
        np.searchsorted(session[starts], answers // n_models), minlength=starts.size
    )
    return session[starts], moments, r, n_answers.astype(np.int64)


def _sample(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, ...]:
    rows = connection.execute(
        f"""SELECT hash(n.session_id, s.reviewer, s.model, {_SAMPLE_SEED}) AS key,
                   n.session_id, s.reviewer, s.model, s.words::DOUBLE AS words, s.score
            FROM scored s JOIN session_names n USING (session) WHERE NOT s.is_self
            ORDER BY key, n.session_id, s.reviewer, s.model, words, s.score
            LIMIT {_SCATTER_SAMPLE}"""
    ).fetchall()
    key = np.asarray([row[0] for row in rows], dtype=np.uint64)
    cell = np.asarray([[str(v) for v in row[1:4]] for row in rows], dtype=str).reshape(-1, 3)
    point = np.asarray([[row[4], row[5]] for row in rows], dtype=float).reshape(-1, 2)
    return key, cell, point


def _first_points(key: np.ndarray, cell: np.ndarray, point: np.ndarray) -> tuple[np.ndarray, ...]:
    """The :data:`_SCATTER_SAMPLE` first points in (key, cell, point) order."""
    order = np.lexsort((point[:, 1], point[:, 0], cell[:, 2], cell[:, 1], cell[:, 0], key))
    order = order[:_SCATTER_SAMPLE]
    return key[order], cell[order], point[order]


class LengthSection:
    """:func:`pooled_length_bias` as an incremental section (ADR 0073)."""

    name = "length"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> LengthSummary:
        sessions, moments, r, n_answers = _per_session(connection)
        ids = session_ids_of(connection, sessions)
        ids, moments, r, n_answers = sorted_by_session(ids, moments, r, n_answers)
        return LengthSummary(ids, moments, r, n_answers, *_sample(connection))

    def merge(self, saved: LengthSummary, new: LengthSummary) -> LengthSummary:
        ids, moments, r, n_answers = sorted_by_session(
            np.concatenate([saved.session_id, new.session_id]),
            np.concatenate([saved.moments, new.moments]),
            np.concatenate([saved.r, new.r]),
            np.concatenate([saved.n_answers, new.n_answers]),
        )
        points = _first_points(
            np.concatenate([saved.sample_key, new.sample_key]),
            np.concatenate([saved.sample_cell, new.sample_cell]),
            np.concatenate([saved.sample_point, new.sample_point]),
        )
        return LengthSummary(ids, moments, r, n_answers, *points)

    def finish(self, summary: LengthSummary) -> LengthBias | None:
        return _length_bias(summary)

    def to_payload(self, summary: LengthSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {field: getattr(summary, field) for field in LengthSummary.__dataclass_fields__}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> LengthSummary:
        fields = LengthSummary.__dataclass_fields__
        missing = sorted(set(fields) - set(arrays))
        if missing:
            raise ValueError(f"length summary: no array {missing[0]!r}")
        summary = LengthSummary(**{field: arrays[field] for field in fields})
        n = summary.session_id.shape[0]
        if summary.moments.shape != (n, 6) or summary.r.shape != (n,):
            raise ValueError("length summary: arrays of different lengths")
        if summary.sample_cell.shape[1:] != (3,) or summary.sample_point.shape[1:] != (2,):
            raise ValueError("length summary: sample of the wrong shape")
        return summary


def _pooled_moments(moments: np.ndarray) -> tuple[float, float, float, float, float, float]:
    r"""(N, mean x, mean y, Sxx, Syy, Sxy) of all cells from per-session moments.

    The exact pooling of centred sums (Chan, Golub & LeVeque 1979, "Updating formulae and a
    pairwise algorithm for computing sample variances"): with :math:`\bar x = \sum n_s
    \bar x_s / N`, :math:`S_{xy} = \sum_s [S_{xy,s} + n_s (\bar x_s - \bar x)(\bar y_s -
    \bar y)]`.
    """
    n = moments[:, 0]
    total = float(n.sum())
    mean_x = float((n * moments[:, 1]).sum() / total)
    mean_y = float((n * moments[:, 2]).sum() / total)
    ex, ey = moments[:, 1] - mean_x, moments[:, 2] - mean_y
    sxx = float((moments[:, 3] + n * ex * ex).sum())
    syy = float((moments[:, 4] + n * ey * ey).sum())
    sxy = float((moments[:, 5] + n * ex * ey).sum())
    return total, mean_x, mean_y, sxx, syy, sxy


def _length_bias(summary: LengthSummary) -> LengthBias | None:
    """The section's result from the summary of every session."""
    if summary.session_id.size == 0:
        return None
    eligible = summary.n_answers >= 3
    pooled = fisher_z_pooled_correlation(
        summary.r[eligible], summary.n_answers[eligible].astype(float)
    )
    n_records, mean_x, mean_y, sxx, syy, sxy = _pooled_moments(summary.moments)
    nan = float("nan")
    # DuckDB's corr and regr_* give NULL (here NaN) where a variance is zero
    record_r = sxy / np.sqrt(sxx * syy) if sxx > 0 and syy > 0 else nan
    slope = sxy / sxx if sxx > 0 else nan
    intercept = mean_y - slope * mean_x if sxx > 0 else nan
    return LengthBias(
        pooled=Interval.from_estimate(pooled),
        n_sessions=pooled.n_clusters,
        n_records=int(n_records),
        record_level_r=float(record_r),
        record_level_ci=fisher_z_interval(float(record_r), int(n_records)),
        fitted_intercept=float(intercept),
        fitted_slope=float(slope),
        sample_words=[float(words) for words in summary.sample_point[:, 0]],
        sample_scores=[float(score) for score in summary.sample_point[:, 1]],
    )


LENGTH = LengthSection()


def pooled_length_bias(connection: duckdb.DuckDBPyConnection) -> LengthBias | None:
    """The pooled within-session correlation, the naive record-level one, and plot data
    (every session of ``connection``: :class:`LengthSection` with nothing saved)."""
    return LENGTH.finish(LENGTH.summarize(connection))
