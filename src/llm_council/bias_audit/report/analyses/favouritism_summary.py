"""The favouritism section's per-session summary: each session's reviewer x model table.

Per session (sorted by id) its scores (NaN where unobserved) and the ln(words) of each
scored answer: the slopes, the three-way fit and the matrix are finished from the rows of
every session (:mod:`~llm_council.stats.bias_effects.favouritism_residuals`), so merging is
a concatenation and the finished matrix is the one a full computation gives (ADR 0078:
why sums of fixed size cannot hold the slopes' linearisation). Two float64 per scored
cell. Per (reviewer, model) pair: whether any of its scores was a self-review, and the
sessions, lowest and highest display slot at which the reviewer scored the model (a pair
seen at one slot in two or more sessions is confounded with the slot, ADR 0040).

Reviewers and models are named: a summary saved before a new reviewer or model appeared
is widened (unobserved cells there).
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

#: past this many floats in the length-control design (sessions x reviewers x models x
#: reviewers, about 8 bytes each) the matrix is fitted without it and its captions drop
#: "length-controlled"; the default five-member council reaches it at 400,000 sessions
LENGTH_CONTROL_MAX_FLOATS = 50_000_000
#: the slot bounds of a pair never seen at a display slot
_NO_SLOT_LOW, _NO_SLOT_HIGH = np.iinfo(np.int64).max, -1


@dataclass(frozen=True)
class FavouritismSummary:
    """Sessions sorted by id, each with its (reviewers, models) table of scores and
    ln(words); the pair tables are (reviewers, models)."""

    reviewers: tuple[str, ...]
    models: tuple[str, ...]
    session_id: np.ndarray
    scores: np.ndarray  # (sessions, reviewers, models), NaN where unobserved
    log_words: np.ndarray  # ln(max(words, 1)) of each scored answer, 0 where unobserved
    self_pairs: np.ndarray  # bool (reviewers, models): some score of the pair was a self-review
    slot_sessions: np.ndarray  # int (reviewers, models): sessions with the pair at a slot
    slot_low: np.ndarray  # lowest display slot of the pair (int64 max: none)
    slot_high: np.ndarray  # highest display slot (-1: none)

    @property
    def length_controlled(self) -> bool:
        """Whether the finished matrix is length-controlled: while its design
        (sessions x reviewers x models x reviewers floats) is within the cap."""
        n_sessions, n_reviewers, n_models = self.scores.shape
        return n_sessions * n_reviewers * n_models * n_reviewers <= LENGTH_CONTROL_MAX_FLOATS


def _names(connection: duckdb.DuckDBPyConnection, table: str) -> tuple[tuple[str, ...], np.ndarray]:
    """The table's names sorted (as merges sort them), and each index's place among them."""
    column = "reviewer" if table == "reviewers" else "model"
    rows = connection.execute(f"SELECT {column}_index, {column} FROM {table}").fetchall()
    names = tuple(sorted(str(name) for _, name in rows))
    place = {name: at for at, name in enumerate(names)}
    size = max((int(index) for index, _ in rows), default=-1) + 1
    position = np.zeros(size, dtype=np.int64)
    for index, name in rows:
        position[int(index)] = place[str(name)]
    return names, position


def _pair_tables(
    connection: duckdb.DuckDBPyConnection, row_of: np.ndarray, column_of: np.ndarray
) -> tuple[np.ndarray, ...]:
    """(self_pairs, slot_sessions, slot_low, slot_high) of the ``scored`` rows, on the
    sorted names (``row_of``/``column_of``: each reviewer/model index's place)."""
    n_reviewers, n_models = int(row_of.max(initial=-1)) + 1, int(column_of.max(initial=-1)) + 1
    self_pairs = np.zeros((n_reviewers, n_models), dtype=bool)
    for reviewer, model in connection.execute(
        "SELECT DISTINCT reviewer_index, model_index FROM scored WHERE is_self"
    ).fetchall():
        self_pairs[row_of[int(reviewer)], column_of[int(model)]] = True
    slot_sessions = np.zeros((n_reviewers, n_models), dtype=np.int64)
    slot_low = np.full((n_reviewers, n_models), _NO_SLOT_LOW, dtype=np.int64)
    slot_high = np.full((n_reviewers, n_models), _NO_SLOT_HIGH, dtype=np.int64)
    for reviewer, model, sessions, low, high in connection.execute(
        """SELECT reviewer_index, model_index, count(DISTINCT session), min(position),
                  max(position)
           FROM scored WHERE position >= 0 GROUP BY reviewer_index, model_index"""
    ).fetchall():
        at = (row_of[int(reviewer)], column_of[int(model)])
        slot_sessions[at], slot_low[at], slot_high[at] = int(sessions), int(low), int(high)
    return self_pairs, slot_sessions, slot_low, slot_high


def summarize_favouritism(connection: duckdb.DuckDBPyConnection) -> FavouritismSummary:
    """The summary of every session of ``connection``'s ``scored`` table."""
    (reviewers, row_of), (models, column_of) = (
        _names(connection, "reviewers"),
        _names(connection, "models"),
    )
    n_reviewers, n_models = len(reviewers), len(models)
    rows = connection.execute(
        "SELECT session, reviewer_index, model_index, score, "
        "ln(greatest(words, 1)) AS log_words FROM scored"
    ).fetchnumpy()
    codes, session = dense_codes(np.asarray(rows["session"], dtype=np.int64))
    n_sessions = int(codes.size)
    scores = np.full((n_sessions, n_reviewers, n_models), np.nan)
    log_words = np.zeros((n_sessions, n_reviewers, n_models))
    row = row_of[np.asarray(rows["reviewer_index"], dtype=np.int64)]
    column = column_of[np.asarray(rows["model_index"], dtype=np.int64)]
    cell = (session * n_reviewers + row) * n_models + column
    scores.ravel()[cell] = nullable_floats(rows["score"])
    log_words.ravel()[cell] = np.asarray(rows["log_words"], dtype=float)
    del rows, cell, session, row, column
    ids = session_ids_of(connection, codes)
    order = np.argsort(ids, kind="stable")
    return FavouritismSummary(
        reviewers,
        models,
        ids[order],
        scores[order],
        log_words[order],
        *_pair_tables(connection, row_of, column_of),
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
    scores = np.full((n_sessions, *shape), np.nan)
    scores[(slice(None), *grid)] = summary.scores
    log_words = np.zeros((n_sessions, *shape))
    log_words[(slice(None), *grid)] = summary.log_words

    def pairs(values: np.ndarray, fill: Any) -> np.ndarray:
        wide = np.full(shape, fill, dtype=values.dtype)
        wide[grid] = values
        return wide

    return FavouritismSummary(
        reviewers,
        models,
        summary.session_id,
        scores,
        log_words,
        pairs(summary.self_pairs, False),
        pairs(summary.slot_sessions, 0),
        pairs(summary.slot_low, _NO_SLOT_LOW),
        pairs(summary.slot_high, _NO_SLOT_HIGH),
    )


def merge_favouritism(saved: FavouritismSummary, new: FavouritismSummary) -> FavouritismSummary:
    """The summary of the union of two disjoint sets of sessions (rows concatenated and
    sorted by id)."""
    reviewers = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    models = tuple(sorted(set(saved.models) | set(new.models)))
    first, second = _widened(saved, reviewers, models), _widened(new, reviewers, models)
    ids = np.concatenate([first.session_id, second.session_id])
    order = np.argsort(ids, kind="stable")
    repeated = ids[order][1:][ids[order][1:] == ids[order][:-1]]
    if repeated.size:
        raise SummaryNotMergeable(f"favouritism: session {str(repeated[0])!r} is in both summaries")
    return FavouritismSummary(
        reviewers,
        models,
        ids[order],
        np.concatenate([first.scores, second.scores])[order],
        np.concatenate([first.log_words, second.log_words])[order],
        first.self_pairs | second.self_pairs,
        first.slot_sessions + second.slot_sessions,
        np.minimum(first.slot_low, second.slot_low),
        np.maximum(first.slot_high, second.slot_high),
    )


_ARRAYS = (
    "session_id",
    "scores",
    "log_words",
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
    scores = read.finite("scores", (n_sessions, *shape), nan_ok=True)
    log_words = read.finite("log_words", (n_sessions, *shape))
    low = read.array("slot_low", "i", shape)
    high = read.array("slot_high", "i", shape)
    return FavouritismSummary(
        reviewers,
        models,
        ids,
        scores,
        log_words,
        read.array("self_pairs", "b", shape),
        read.counts("slot_sessions", shape),
        low,
        high,
    )
