"""The favouritism section's per-session summary: two-way residuals, merged by concatenation.

Per session (sorted by id) its pattern of observed reviewer x model cells and the two-way
residuals of the score and of each reviewer's ln(words) covariate
(:func:`~llm_council.stats.bias_effects.favouritism_residuals.two_way_residuals`): the
slopes and the three-way fit are finished from the rows of every session, so merging is a
concatenation and the finished matrix is the one a full computation gives (ADR 0078).
Per (reviewer, model) pair: whether any of its scores was a self-review, and the sessions,
lowest and highest display slot at which the reviewer scored the model (a pair seen at one
slot in two or more sessions is confounded with the slot, ADR 0040).

Reviewers and models are named: a summary saved before a new reviewer or model appeared
is widened (its rows get unobserved cells and zero covariates there, which leave each
session's residuals as they were).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.analyses.session_rows import session_ids_of
from llm_council.bias_audit.report.load.tables import dense_codes, nullable_floats
from llm_council.stats.bias_effects.favouritism_residuals import two_way_residuals

#: past this many floats in the length-control design (sessions x reviewers x models x
#: reviewers, about 8 bytes each) the matrix is fitted without it and its captions drop
#: "length-controlled"; the default five-member council reaches it at 400,000 sessions
LENGTH_CONTROL_MAX_FLOATS = 50_000_000
#: sessions projected at once while summarizing (bounds the design's memory)
_SESSIONS_PER_BLOCK = 20_000
#: the slot bounds of a pair never seen at a display slot
_NO_SLOT_LOW, _NO_SLOT_HIGH = np.iinfo(np.int64).max, -1


@dataclass(frozen=True)
class FavouritismSummary:
    """Sessions sorted by id; ``residuals`` is (sessions, reviewers, models, k), k = 1 + the
    reviewers while length-controlled (:data:`LENGTH_CONTROL_MAX_FLOATS`), else 1."""

    reviewers: tuple[str, ...]
    models: tuple[str, ...]
    session_id: np.ndarray
    observed: np.ndarray  # bool (sessions, reviewers, models)
    residuals: np.ndarray
    self_pairs: np.ndarray  # bool (reviewers, models): some score of the pair was a self-review
    slot_sessions: np.ndarray  # int (reviewers, models): sessions with the pair at a slot
    slot_low: np.ndarray  # lowest display slot of the pair (int64 max: none)
    slot_high: np.ndarray  # highest display slot (-1: none)

    @property
    def length_controlled(self) -> bool:
        return self.residuals.shape[-1] == 1 + len(self.reviewers)


def _length_fits(n_sessions: int, n_reviewers: int, n_models: int) -> bool:
    return n_sessions * n_reviewers * n_models * n_reviewers <= LENGTH_CONTROL_MAX_FLOATS


def _names(connection: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    column = "reviewer" if table == "reviewers" else "model"
    rows = connection.execute(f"SELECT {column} FROM {table} ORDER BY 1").fetchall()
    return tuple(str(name) for (name,) in rows)


def _pair_tables(
    connection: duckdb.DuckDBPyConnection, n_reviewers: int, n_models: int
) -> tuple[np.ndarray, ...]:
    """(self_pairs, slot_sessions, slot_low, slot_high) of the ``scored`` rows."""
    self_pairs = np.zeros((n_reviewers, n_models), dtype=bool)
    for reviewer, model in connection.execute(
        "SELECT DISTINCT reviewer_index, model_index FROM scored WHERE is_self"
    ).fetchall():
        self_pairs[int(reviewer), int(model)] = True
    slot_sessions = np.zeros((n_reviewers, n_models), dtype=np.int64)
    slot_low = np.full((n_reviewers, n_models), _NO_SLOT_LOW, dtype=np.int64)
    slot_high = np.full((n_reviewers, n_models), _NO_SLOT_HIGH, dtype=np.int64)
    for reviewer, model, sessions, low, high in connection.execute(
        """SELECT reviewer_index, model_index, count(DISTINCT session), min(position),
                  max(position)
           FROM scored WHERE position >= 0 GROUP BY reviewer_index, model_index"""
    ).fetchall():
        at = (int(reviewer), int(model))
        slot_sessions[at], slot_low[at], slot_high[at] = int(sessions), int(low), int(high)
    return self_pairs, slot_sessions, slot_low, slot_high


def summarize_favouritism(connection: duckdb.DuckDBPyConnection) -> FavouritismSummary:
    """The summary of every session of ``connection``'s ``scored`` table."""
    reviewers, models = _names(connection, "reviewers"), _names(connection, "models")
    n_reviewers, n_models = len(reviewers), len(models)
    rows = connection.execute(
        "SELECT session, reviewer_index, model_index, score, "
        "ln(greatest(words, 1)) AS log_words FROM scored"
    ).fetchnumpy()
    codes, session = dense_codes(np.asarray(rows["session"], dtype=np.int64))
    n_sessions = int(codes.size)
    scores = np.full((n_sessions, n_reviewers, n_models), np.nan)
    log_words = np.zeros((n_sessions, n_reviewers, n_models))
    cell = (
        session * n_reviewers + np.asarray(rows["reviewer_index"], dtype=np.int64)
    ) * n_models + np.asarray(rows["model_index"], dtype=np.int64)
    scores.ravel()[cell] = nullable_floats(rows["score"])
    log_words.ravel()[cell] = np.asarray(rows["log_words"], dtype=float)
    del rows, cell, session
    ids = session_ids_of(connection, codes)
    order = np.argsort(ids, kind="stable")
    scores, log_words = scores[order], log_words[order]
    keep = 1 + n_reviewers if _length_fits(n_sessions, n_reviewers, n_models) else 1
    residuals = np.zeros((n_sessions, n_reviewers, n_models, keep))
    for first in range(0, n_sessions, _SESSIONS_PER_BLOCK):
        block = slice(first, first + _SESSIONS_PER_BLOCK)
        # always projected with every covariate, so a session's score residual is the same
        # bits whether its summary keeps the covariates or not
        residuals[block] = two_way_residuals(scores[block], log_words[block])[..., :keep]
    return FavouritismSummary(
        reviewers,
        models,
        ids[order],
        np.isfinite(scores),
        residuals,
        *_pair_tables(connection, n_reviewers, n_models),
    )


def _widened(
    summary: FavouritismSummary, reviewers: tuple[str, ...], models: tuple[str, ...]
) -> FavouritismSummary:
    """``summary`` on the (larger) name lists ``reviewers`` and ``models``."""
    if (summary.reviewers, summary.models) == (reviewers, models):
        return summary
    rows = np.searchsorted(reviewers, summary.reviewers)
    columns = np.searchsorted(models, summary.models)
    grid = np.ix_(rows, columns)
    n_sessions = summary.session_id.size
    shape = (len(reviewers), len(models))
    observed = np.zeros((n_sessions, *shape), dtype=bool)
    observed[(slice(None), *grid)] = summary.observed
    lengths = summary.length_controlled
    residuals = np.zeros((n_sessions, *shape, 1 + len(reviewers) if lengths else 1))
    target = residuals[:, rows][:, :, columns]
    target[..., 0] = summary.residuals[..., 0]
    if lengths:  # reviewer j's covariate column moves with it
        target[..., 1 + rows] = summary.residuals[..., 1:]
    residuals[(slice(None), *grid)] = target

    def pairs(values: np.ndarray, fill: Any) -> np.ndarray:
        wide = np.full(shape, fill, dtype=values.dtype)
        wide[grid] = values
        return wide

    return FavouritismSummary(
        reviewers,
        models,
        summary.session_id,
        observed,
        residuals,
        pairs(summary.self_pairs, False),
        pairs(summary.slot_sessions, 0),
        pairs(summary.slot_low, _NO_SLOT_LOW),
        pairs(summary.slot_high, _NO_SLOT_HIGH),
    )


def merge_favouritism(saved: FavouritismSummary, new: FavouritismSummary) -> FavouritismSummary:
    """The summary of the union of two disjoint sets of sessions (rows concatenated and
    sorted by id; covariates dropped once the length-control design would pass its cap)."""
    reviewers = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    models = tuple(sorted(set(saved.models) | set(new.models)))
    first, second = _widened(saved, reviewers, models), _widened(new, reviewers, models)
    ids = np.concatenate([first.session_id, second.session_id])
    order = np.argsort(ids, kind="stable")
    repeated = ids[order][1:][ids[order][1:] == ids[order][:-1]]
    if repeated.size:
        raise SummaryNotMergeable(f"favouritism: session {str(repeated[0])!r} is in both summaries")
    lengths = (
        first.length_controlled
        and second.length_controlled
        and _length_fits(ids.size, len(reviewers), len(models))
    )
    keep = 1 + len(reviewers) if lengths else 1
    residuals = np.concatenate([first.residuals[..., :keep], second.residuals[..., :keep]])
    return FavouritismSummary(
        reviewers,
        models,
        ids[order],
        np.concatenate([first.observed, second.observed])[order],
        residuals[order],
        first.self_pairs | second.self_pairs,
        first.slot_sessions + second.slot_sessions,
        np.minimum(first.slot_low, second.slot_low),
        np.maximum(first.slot_high, second.slot_high),
    )


_ARRAYS = (
    "session_id",
    "observed",
    "residuals",
    "self_pairs",
    "slot_sessions",
    "slot_low",
    "slot_high",
)


def favouritism_payload(
    summary: FavouritismSummary,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The summary as JSON-safe metadata and named arrays."""
    meta = {"reviewers": list(summary.reviewers), "models": list(summary.models)}
    return meta, {name: getattr(summary, name) for name in _ARRAYS}


def favouritism_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> FavouritismSummary:
    """:func:`favouritism_payload`'s output back; ``ValueError`` naming the bad field."""
    read = PayloadReader("favouritism", meta, arrays)
    reviewers, models = read.names("reviewers"), read.names("models")
    if list(reviewers) != sorted(reviewers) or list(models) != sorted(models):
        raise read.fail("reviewers", "or models are not sorted")
    ids = arrays.get("session_id")
    if not isinstance(ids, np.ndarray) or ids.dtype.kind != "U" or ids.ndim != 1:
        raise read.fail("session_id", "is not a list of strings")
    if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise read.fail("session_id", "is not sorted and distinct")
    n_sessions, shape = ids.size, (len(reviewers), len(models))
    observed = read.array("observed", "b", (n_sessions, *shape))
    width = arrays.get("residuals")
    k = width.shape[-1] if isinstance(width, np.ndarray) and width.ndim == 4 else 1
    if k not in (1, 1 + len(reviewers)):
        raise read.fail("residuals", f"has {k} columns, expected 1 or {1 + len(reviewers)}")
    residuals = read.finite("residuals", (n_sessions, *shape, k))
    if np.any(residuals[~observed] != 0.0):
        raise read.fail("residuals", "is non-zero on an unobserved cell")
    low = read.array("slot_low", "i", shape)
    high = read.array("slot_high", "i", shape)
    return FavouritismSummary(
        reviewers,
        models,
        ids,
        observed,
        residuals,
        read.array("self_pairs", "b", shape),
        read.counts("slot_sessions", shape),
        low,
        high,
    )
