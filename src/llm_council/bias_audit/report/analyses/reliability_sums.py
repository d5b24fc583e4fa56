"""Alpha's Poisson-bootstrap pair-count sums of some sessions, per score scale (ADR 0089).

For each score scale, the scored non-self ratings of the reviewers that are not rank-only
become integer pair counts per session (:mod:`~llm_council.stats.reliability.alpha_pair_sums`),
summed over the sessions once unweighted and once per replicate b with the session's
Poisson(1) weight ``w_sb``, which depends only on (seed, session id, b)
(:mod:`~llm_council.stats.inference.poisson_weights`, as the leaderboard's, ADR 0074): for
the whole table and with each reviewer left out. The sums are integers, so two disjoint
sets of sessions add to their union's exactly, on the union of their value grids,
divisors and reviewers (zero-padded): nothing here grows with the number of sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from llm_council.stats.inference.poisson_weights import poisson_weights, unit_keys
from llm_council.stats.reliability.alpha_pair_sums import (
    group_pair_counts,
    triangle_cells,
    weighted_pair_sums,
)

#: ``ScaleSums.counts``: what the section reports beside alpha, each a sum over sessions
COUNTS = ("ratings", "units", "sessions")


@dataclass(frozen=True)
class ScaleSums:
    """One score scale's sums. ``sums[0]`` is the whole table's pair counts and
    ``sums[1 + r]`` the part of them that leaving ``reviewers[r]`` out removes, each with
    the unweighted sums in row 0 and replicate b's weighted sums in row 1 + b:
    shape (1 + R, B + 1, D, V (V + 1) / 2) on the grid ``values`` x ``divisors``."""

    scale: tuple[float, float]
    values: np.ndarray  # (V,) float, sorted: every score given on this scale
    divisors: np.ndarray  # (D,) int, sorted: the d = (ratings of a unit) - 1 present
    reviewers: tuple[str, ...]  # sorted: those with a rating on this scale
    sums: np.ndarray
    counts: np.ndarray  # (3,) int: COUNTS


#: the ratings alpha reads: scored, not of the reviewer's own answer, not a rank-only
#: reviewer's (the list is the query's parameter)
_KEPT = """score IS NOT NULL AND NOT is_self AND NOT list_contains(?::VARCHAR[], reviewer)"""
#: the kept ratings as codes: sessions and units in (session id, model) order, raters in
#: reviewer order (DuckDB's VARCHAR order is UTF-8 byte order, which is Python's code point
#: order); fetched as numpy columns, never as Python tuples
_RATINGS_SQL = f"""
    SELECT scale_low, scale_high,
           (dense_rank() OVER (ORDER BY session_id) - 1)::BIGINT AS session,
           (dense_rank() OVER (ORDER BY session_id, model) - 1)::BIGINT AS unit,
           (dense_rank() OVER (ORDER BY reviewer) - 1)::BIGINT AS rater,
           score
    FROM records WHERE {_KEPT}
"""


def scale_sums(
    connection: duckdb.DuckDBPyConnection,
    left_out: list[str],
    *,
    n_resamples: int,
    seed: int,
) -> tuple[ScaleSums, ...]:
    """The sums of every session in ``connection``'s ``records``, one per scale with a
    rating, leaving out the reviewers ``left_out`` (the rank-only ones)."""
    columns = connection.execute(_RATINGS_SQL, [left_out]).fetchnumpy()
    if not len(columns["score"]):
        return ()
    session_ids = [
        str(row[0])
        for row in connection.execute(
            f"SELECT DISTINCT session_id FROM records WHERE {_KEPT} ORDER BY 1", [left_out]
        ).fetchall()
    ]
    names = [
        str(row[0])
        for row in connection.execute(
            f"SELECT DISTINCT reviewer FROM records WHERE {_KEPT} ORDER BY 1", [left_out]
        ).fetchall()
    ]
    weights = poisson_weights(unit_keys(session_ids, seed), np.arange(n_resamples))
    score = np.asarray(columns["score"], dtype=float)
    low = np.asarray(columns["scale_low"], dtype=float)
    high = np.asarray(columns["scale_high"], dtype=float)
    codes = {name: np.asarray(columns[name], dtype=np.int64) for name in ("session", "unit")}
    rater = np.asarray(columns["rater"], dtype=np.int64)
    group_of_unit = np.zeros(int(codes["unit"].max()) + 1, dtype=np.int64)
    group_of_unit[codes["unit"]] = codes["session"]
    blocks = []
    for scale in sorted(set(zip(low.tolist(), high.tolist(), strict=True))):
        on_scale = (low == scale[0]) & (high == scale[1])
        blocks.append(
            _one_scale(
                scale,
                score[on_scale],
                codes["unit"][on_scale],
                codes["session"][on_scale],
                rater[on_scale],
                group_of_unit,
                names,
                weights,
            )
        )
    return tuple(blocks)


#: sessions whose pair counts are built and weighted at a time: the sums add exactly in
#: any order, so chunks bound the memory without changing a bit (at 1M records one chunk
#: of 10,000 sessions holds about 200,000 ratings)
CHUNK_SESSIONS = 10_000


def _positive(whole: np.ndarray) -> np.ndarray:
    """The divisor grid: the divisors ``d = m_u - 1`` of the units rated twice or more,
    and ``d - 1`` (a unit with one reviewer left out), without 0. Every stack's sums fall
    on it, and the grid of a union of sessions is the union of their grids."""
    grid = np.union1d(whole, whole - 1)
    return grid[grid >= 1].astype(np.int64)


def _chunk_sums(
    rows: np.ndarray,
    ratings: tuple[np.ndarray, np.ndarray, np.ndarray],
    group_of_unit: np.ndarray,
    first_session: int,
    grid: tuple[np.ndarray, int, np.ndarray],
    weights: np.ndarray,
) -> np.ndarray:
    """The sums of the ratings ``rows`` (all of sessions ``first_session`` onwards in one
    chunk): the whole table's, then without each reviewer, shape (1 + R, B + 1, D, T)."""
    unit, value_index, rater = (column[rows] for column in ratings)
    divisors, n_values, raters = grid
    local = group_of_unit - first_session  # the chunk's sessions as groups 0..
    stacks = [group_pair_counts(unit, value_index, local, n_values)]
    for code in raters.tolist():
        kept = rater != code
        stacks.append(group_pair_counts(unit[kept], value_index[kept], local, n_values))
    n_groups = int(local[unit].max()) + 1 if unit.size else 0
    return weighted_pair_sums(
        stacks, weights[:, first_session : first_session + n_groups], divisors,
        n_values * (n_values + 1) // 2,
    )  # fmt: skip


def _one_scale(
    scale: tuple[float, float],
    score: np.ndarray,
    unit: np.ndarray,
    session: np.ndarray,
    rater: np.ndarray,
    group_of_unit: np.ndarray,
    names: list[str],
    weights: np.ndarray,
) -> ScaleSums:
    """One scale's :class:`ScaleSums` from its ratings (codes into the part's tables),
    summed a chunk of sessions at a time."""
    values, value_index = np.unique(score, return_inverse=True)
    raters = np.unique(rater)
    per_unit = np.bincount(unit)
    divisors = _positive(np.unique(per_unit[per_unit >= 2] - 1))
    grid = (divisors, int(values.size), raters)
    ratings = (unit, value_index.reshape(-1), rater)
    order = np.argsort(session, kind="stable")
    cells = values.size * (values.size + 1) // 2
    summed = np.zeros((1 + raters.size, weights.shape[0] + 1, divisors.size, cells))
    starts = np.arange(0, int(session.max()) + 1, CHUNK_SESSIONS)
    bounds = np.searchsorted(session[order], np.append(starts, int(session.max()) + 1))
    for index, first in enumerate(starts.tolist()):
        rows = order[bounds[index] : bounds[index + 1]]
        if rows.size:
            summed += _chunk_sums(rows, ratings, group_of_unit, first, grid, weights)
    summed[1:] = summed[0][None] - summed[1:]  # the whole minus the sums without each reviewer
    counts = [score.size, int(np.count_nonzero(per_unit >= 2)), np.unique(session).size]
    return ScaleSums(
        scale=scale,
        values=values,
        divisors=divisors,
        reviewers=tuple(names[code] for code in raters.tolist()),
        sums=summed,
        counts=np.asarray(counts, dtype=np.int64),
    )


def _placed(
    part: ScaleSums,
    values: np.ndarray,
    divisors: np.ndarray,
    reviewers: list[str],
    shape: tuple[int, int, int, int],
) -> np.ndarray:
    """``part.sums`` on the union grid (zeros where the part had nothing)."""
    out = np.zeros(shape)
    value_at = np.searchsorted(values, part.values)
    rows, columns = np.triu_indices(part.values.size)
    cell_at = triangle_cells(values.size)[value_at[rows], value_at[columns]]
    stack_at = np.asarray([0] + [1 + reviewers.index(name) for name in part.reviewers])
    divisor_at = np.searchsorted(divisors, part.divisors)
    index = np.ix_(stack_at, np.arange(shape[1]), divisor_at, cell_at)
    out[index] = part.sums
    return out


def merge_scale_sums(saved: ScaleSums, new: ScaleSums) -> ScaleSums:
    """The sums of both sets of sessions (the same scale and replicates): exact integer
    sums on the union of their grids."""
    values = np.union1d(saved.values, new.values)
    divisors = np.union1d(saved.divisors, new.divisors).astype(np.int64)
    reviewers = sorted(set(saved.reviewers) | set(new.reviewers))
    shape = (
        1 + len(reviewers),
        saved.sums.shape[1],
        divisors.size,
        values.size * (values.size + 1) // 2,
    )
    sums = _placed(saved, values, divisors, reviewers, shape)
    sums += _placed(new, values, divisors, reviewers, shape)
    return ScaleSums(
        scale=saved.scale,
        values=values,
        divisors=divisors,
        reviewers=tuple(reviewers),
        sums=sums,
        counts=saved.counts + new.counts,
    )
