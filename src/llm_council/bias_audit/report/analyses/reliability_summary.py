"""The council's reliability (ADR 0062) as an incremental section (ADRs 0073, 0086).

Alpha's session bootstrap and "alpha without" each reviewer need, per session, the
ratings themselves: a per-session coincidence matrix per left-out reviewer is larger than
the session's few ratings (ADR 0086). So the summary keeps each scored non-self rating as
small codes (session, model, reviewer, scale) and its score, and the per-(reviewer,
scale, score) counts of the resolution. :meth:`ReliabilitySection.finish` rebuilds the
full run's ``(unit, rater, score)`` arrays in its order (sessions by id, models and
reviewers by name) and calls the full run's code, whose bootstrap draws depend only on
the number of sessions and the seed: equal to a full recompute bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.reliability import (
    AlphaRatings,
    CouncilReliability,
    alpha_from_ratings,
    resolution_from_counts,
)


@dataclass(frozen=True)
class ReliabilitySummary:
    """Name tables (sorted) and coded rows: ``cell_*`` one per scored non-self record,
    ``count_*`` one per (reviewer, scale, score) of every scored record, with its count."""

    sessions: np.ndarray  # str
    models: np.ndarray  # str
    reviewers: np.ndarray  # str: every reviewer with a record
    scales: np.ndarray  # (k, 2) float: low, high
    cell_session: np.ndarray
    cell_model: np.ndarray
    cell_reviewer: np.ndarray
    cell_scale: np.ndarray
    cell_score: np.ndarray  # float
    count_reviewer: np.ndarray
    count_scale: np.ndarray
    count_score: np.ndarray  # float
    count_n: np.ndarray


_FIELDS = tuple(ReliabilitySummary.__dataclass_fields__)
#: each coded column and the name table it indexes
_CODES = {
    "cell_session": "sessions",
    "cell_model": "models",
    "cell_reviewer": "reviewers",
    "cell_scale": "scales",
    "count_reviewer": "reviewers",
    "count_scale": "scales",
}


def _codes(values: list[Any], table: list[Any]) -> np.ndarray:
    index = {value: i for i, value in enumerate(table)}
    return np.asarray([index[value] for value in values], dtype=np.int64)


def _strings(values: list[str]) -> np.ndarray:
    return np.asarray(values, dtype=str) if values else np.zeros(0, dtype=str)


#: every scored non-self record as codes into the sorted name tables below (DuckDB's
#: VARCHAR order is byte order, which for UTF-8 is Python's code point order), fetched as
#: numpy columns: 8M Python tuples would hold several GB at 10M records
_CELLS_SQL = """
    WITH cells AS (
        SELECT session_id, model, reviewer, scale_low, scale_high, score FROM records
        WHERE score IS NOT NULL AND NOT is_self),
    session_codes AS (
        SELECT session_id, row_number() OVER (ORDER BY session_id) - 1 AS code
        FROM (SELECT DISTINCT session_id FROM cells)),
    model_codes AS (
        SELECT model, row_number() OVER (ORDER BY model) - 1 AS code
        FROM (SELECT DISTINCT model FROM cells)),
    reviewer_codes AS (
        SELECT reviewer, row_number() OVER (ORDER BY reviewer) - 1 AS code
        FROM (SELECT DISTINCT reviewer FROM records)),
    scale_codes AS (
        SELECT scale_low, scale_high,
               row_number() OVER (ORDER BY scale_low, scale_high) - 1 AS code
        FROM (SELECT DISTINCT scale_low, scale_high FROM records WHERE score IS NOT NULL))
    SELECT s.code AS session, m.code AS model, r.code AS reviewer, k.code AS scale,
           c.score AS score
    FROM cells c JOIN session_codes s USING (session_id) JOIN model_codes m USING (model)
    JOIN reviewer_codes r USING (reviewer) JOIN scale_codes k USING (scale_low, scale_high)
"""


def _names(connection: duckdb.DuckDBPyConnection, query: str) -> list[str]:
    return [str(row[0]) for row in connection.execute(query).fetchall()]


def _summarize(connection: duckdb.DuckDBPyConnection) -> ReliabilitySummary:
    cells = connection.execute(_CELLS_SQL).fetchnumpy()
    counts = connection.execute(
        """SELECT reviewer, scale_low, scale_high, score, count(*) FROM records
           WHERE score IS NOT NULL GROUP BY ALL"""
    ).fetchall()
    on_cells = "FROM records WHERE score IS NOT NULL AND NOT is_self"
    sessions = _names(connection, f"SELECT DISTINCT session_id {on_cells} ORDER BY 1")
    models = _names(connection, f"SELECT DISTINCT model {on_cells} ORDER BY 1")
    reviewers = _names(connection, "SELECT DISTINCT reviewer FROM records ORDER BY 1")
    scales = [
        (float(low), float(high))
        for low, high in connection.execute(
            """SELECT DISTINCT scale_low, scale_high FROM records WHERE score IS NOT NULL
               ORDER BY 1, 2"""
        ).fetchall()
    ]

    def codes(name: str) -> np.ndarray:
        return np.asarray(cells[name], dtype=np.int64).reshape(-1)

    return ReliabilitySummary(
        sessions=_strings(sessions),
        models=_strings(models),
        reviewers=_strings(reviewers),
        scales=np.asarray(scales, dtype=float).reshape(-1, 2),
        cell_session=codes("session"),
        cell_model=codes("model"),
        cell_reviewer=codes("reviewer"),
        cell_scale=codes("scale"),
        cell_score=np.asarray(cells["score"], dtype=float).reshape(-1),
        count_reviewer=_codes([str(r[0]) for r in counts], reviewers),
        count_scale=_codes([(float(r[1]), float(r[2])) for r in counts], scales),
        count_score=np.asarray([float(r[3]) for r in counts], dtype=float),
        count_n=np.asarray([int(r[4]) for r in counts], dtype=np.int64),
    )


def _table(summary: ReliabilitySummary, name: str) -> list[Any]:
    values = getattr(summary, name)
    if name == "scales":
        return [(float(low), float(high)) for low, high in values]
    return [str(value) for value in values]


def _merge(saved: ReliabilitySummary, new: ReliabilitySummary) -> ReliabilitySummary:
    tables = {
        name: sorted(set(_table(saved, name)) | set(_table(new, name)))
        for name in ("sessions", "models", "reviewers", "scales")
    }

    def column(field: str) -> np.ndarray:
        parts = []
        for part in (saved, new):
            values = getattr(part, field)
            if field in _CODES:  # old code -> the union table's code
                mapping = _codes(_table(part, _CODES[field]), tables[_CODES[field]])
                values = mapping[values] if values.size else values.astype(np.int64)
            parts.append(values)
        return np.concatenate(parts)

    # one count per (reviewer, scale, score): exact integer sums
    totals: dict[tuple[int, int, float], int] = {}
    for key in zip(
        column("count_reviewer"),
        column("count_scale"),
        column("count_score"),
        column("count_n"),
        strict=True,
    ):
        index = (int(key[0]), int(key[1]), float(key[2]))
        totals[index] = totals.get(index, 0) + int(key[3])
    keys = sorted(totals)
    return ReliabilitySummary(
        sessions=_strings(tables["sessions"]),
        models=_strings(tables["models"]),
        reviewers=_strings(tables["reviewers"]),
        scales=np.asarray(tables["scales"], dtype=float).reshape(-1, 2),
        cell_session=column("cell_session"),
        cell_model=column("cell_model"),
        cell_reviewer=column("cell_reviewer"),
        cell_scale=column("cell_scale"),
        cell_score=column("cell_score"),
        count_reviewer=np.asarray([k[0] for k in keys], dtype=np.int64),
        count_scale=np.asarray([k[1] for k in keys], dtype=np.int64),
        count_score=np.asarray([k[2] for k in keys], dtype=float),
        count_n=np.asarray([totals[k] for k in keys], dtype=np.int64),
    )


def _dense(values: np.ndarray) -> np.ndarray:
    """Each value's rank among the distinct values (``dense_rank() - 1``)."""
    return np.unique(values, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _alpha(
    summary: ReliabilitySummary, rank: set[str], n_resamples: int, seed: int
) -> tuple[Any, ...]:
    """:func:`~.reliability.council_alpha`'s result, the full run's arrays rebuilt."""
    kept = ~np.isin(summary.reviewers[summary.cell_reviewer], sorted(rank))
    if not kept.any():
        return [], [], 0, 0, 0, 0, None, 0
    scale_n = np.bincount(summary.cell_scale[kept], minlength=len(summary.scales))
    # the full run's order: n DESC, scale_low DESC, scale_high DESC
    order = sorted(
        (code for code in range(len(summary.scales)) if scale_n[code]),
        key=lambda c: (-int(scale_n[c]), -summary.scales[c][0], -summary.scales[c][1]),
    )
    chosen = order[0]
    other = int(sum(int(scale_n[c]) for c in order[1:]))
    on_scale = kept & (summary.cell_scale == chosen)
    session = _dense(summary.cell_session[on_scale])  # name tables are sorted: id order
    model = summary.cell_model[on_scale]
    unit = _dense(session * (int(model.max()) + 1) + model)
    rater = _dense(summary.cell_reviewer[on_scale])
    score = summary.cell_score[on_scale]
    rows = np.lexsort((score, rater, unit))
    ratings = AlphaRatings(
        unit=unit[rows],
        rater=rater[rows],
        session=session[rows],
        reviewer=np.asarray(summary.reviewers[summary.cell_reviewer[on_scale]][rows], dtype=object),
        score=score[rows],
    )
    scale = (float(summary.scales[chosen][0]), float(summary.scales[chosen][1]))
    return alpha_from_ratings(ratings, scale, other, n_resamples=n_resamples, seed=seed)


def _checked(summary: ReliabilitySummary) -> ReliabilitySummary:
    """``summary`` if its arrays fit together, else ``ValueError`` naming the field."""
    if summary.scales.ndim != 2 or summary.scales.shape[1:] != (2,):
        raise ValueError("reliability summary: array 'scales' of the wrong shape")
    for prefix in ("cell_", "count_"):
        fields = [f for f in _FIELDS if f.startswith(prefix)]
        for field in fields:
            if getattr(summary, field).shape != getattr(summary, fields[0]).shape:
                raise ValueError(f"reliability summary: array {field!r} of another length")
    for field, table in _CODES.items():
        codes = getattr(summary, field)
        if codes.dtype.kind not in "iu" or (
            codes.size and (codes.min() < 0 or codes.max() >= len(getattr(summary, table)))
        ):
            raise ValueError(f"reliability summary: array {field!r} out of range")
    for field in ("cell_score", "count_score", "scales"):
        values = getattr(summary, field)
        if values.dtype.kind != "f" or not np.all(np.isfinite(values)):
            raise ValueError(f"reliability summary: array {field!r} not finite numbers")
    if summary.count_n.dtype.kind not in "iu" or (
        summary.count_n.size and summary.count_n.min() < 1
    ):
        raise ValueError("reliability summary: array 'count_n' not positive counts")
    return summary


class ReliabilitySection:
    """:func:`~.reliability.council_reliability` as an incremental section (ADR 0086),
    finished with the profiles' rank-only reviewers."""

    name = "reliability"
    version = 1
    needs_inputs = True

    def __init__(self, *, n_resamples: int, seed: int) -> None:
        self.n_resamples = n_resamples
        self.seed = seed

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ReliabilitySummary:
        return _summarize(connection)

    def merge(self, saved: ReliabilitySummary, new: ReliabilitySummary) -> ReliabilitySummary:
        return _merge(saved, new)

    def finish(
        self, summary: ReliabilitySummary, rank_reviewers: frozenset[str] | set[str] = frozenset()
    ) -> CouncilReliability:
        rank = set(rank_reviewers)
        reviewers, alphas, n_units, n_sessions, n_ratings, resamples, scale, other = _alpha(
            summary, rank, self.n_resamples, self.seed
        )
        names = summary.reviewers
        counts = sorted(
            (
                str(names[r]),
                float(summary.scales[s][0]),
                float(summary.scales[s][1]),
                float(v),
                int(n),
            )
            for r, s, v, n in zip(
                summary.count_reviewer,
                summary.count_scale,
                summary.count_score,
                summary.count_n,
                strict=True,
            )
        )
        return CouncilReliability(
            reviewers=reviewers,
            alphas=alphas,
            n_units=n_units,
            n_sessions=n_sessions,
            n_ratings=n_ratings,
            resamples=resamples,
            scale=scale,
            resolution=resolution_from_counts(counts, rank),
            rank_only_reviewers=sorted({str(n) for n in names} & rank),
            other_scale_records=other,
        )

    def to_payload(
        self, summary: ReliabilitySummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {field: getattr(summary, field) for field in _FIELDS}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ReliabilitySummary:
        missing = sorted(set(_FIELDS) - set(arrays))
        if missing:
            raise ValueError(f"reliability summary: no array {missing[0]!r}")
        return _checked(
            ReliabilitySummary(**{field: np.asarray(arrays[field]) for field in _FIELDS})
        )
