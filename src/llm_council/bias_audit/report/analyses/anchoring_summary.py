"""The anchoring section's per-session summary: each review's values at each display slot.

Per review (a reviewer's review in one session), sorted by reviewer then session id: the
running-mean deviation at each slot (the design correlation's y), the others' consensus
earlier minus the rest (the conditional x) and the paired deviation (its y). Each is
computed within its review, so a merge is a concatenation; the correlations, their
within-slot centring over every session and the jackknife are fitted at finish
(:mod:`.anchoring`, ADR 0078). Three float64 a (review, slot).
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
from llm_council.stats.bias_effects.anchoring import (
    earlier_minus_rest_mean,
    running_mean_deviation,
)

#: display slots at or beyond this (or beyond n_candidates) are malformed records: left out,
#: so one corrupt line cannot make the per-review arrays huge
MAX_SLOTS = 256


@dataclass(frozen=True)
class _ReviewTables:
    """The ``scored`` rows as ``[review, slot]`` tables, one review per (reviewer, session)."""

    in_order: np.ndarray  # the reviewer's score at each slot
    paired: np.ndarray  # its paired deviation there (NaN on its own answer)
    consensus: np.ndarray  # the other judges' mean on the answer at that slot
    review_reviewer: np.ndarray  # reviewer index of each review
    review_session: np.ndarray  # session of each review
    names: dict[int, str]  # reviewer index -> reviewer

    @property
    def n_slots(self) -> int:
        return int(self.in_order.shape[1])


def _review_tables(connection: duckdb.DuckDBPyConnection) -> _ReviewTables | None:
    """Read the scored rows shown at a slot below :data:`MAX_SLOTS`; None without any.

    The per-record arrays live only here: the caller keeps the smaller tables.
    """
    rows = connection.execute(
        f"""SELECT s.reviewer_index, s.session, s.position, s.score, s.deviation, s.is_self
           FROM scored s
           WHERE s.position >= 0 AND s.position < least(s.n_candidates, {MAX_SLOTS})"""
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    if len(rows["session"]) == 0:
        return None
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    session = np.asarray(rows["session"], dtype=np.int64)
    position = np.asarray(rows["position"], dtype=np.int64)
    score = nullable_floats(rows["score"])
    deviation = nullable_floats(rows["deviation"])
    is_self = np.asarray(rows["is_self"], dtype=bool)
    n_slots = int(position.max()) + 1
    review_key = reviewer * (int(session.max()) + 1) + session
    _, review = dense_codes(review_key)  # in (reviewer, session) order, like the sorted keys
    n_reviews = int(review.max()) + 1
    in_order = np.full((n_reviews, n_slots), np.nan)
    paired = np.full((n_reviews, n_slots), np.nan)
    consensus = np.full((n_reviews, n_slots), np.nan)
    cell = review * n_slots + position  # flat (review, slot) index, shared by the tables
    in_order.ravel()[cell] = score
    paired.ravel()[cell] = np.where(is_self, np.nan, deviation)
    consensus.ravel()[cell] = score - deviation  # the others' mean on that answer
    review_reviewer = np.zeros(n_reviews, dtype=np.int64)
    review_session = np.zeros(n_reviews, dtype=np.int64)
    review_reviewer[review] = reviewer
    review_session[review] = session
    return _ReviewTables(in_order, paired, consensus, review_reviewer, review_session, names)


@dataclass(frozen=True)
class AnchoringSummary:
    """Per review (a reviewer's review in one session), sorted by reviewer then session id:
    at each display slot the running-mean deviation (the design correlation's y), the
    others' consensus earlier minus the rest (the conditional x) and the paired deviation
    (its y); NaN where the review showed nothing there. Everything the two correlations
    read, so a merge is a concatenation (ADR 0078)."""

    reviewers: tuple[str, ...]
    review_reviewer: np.ndarray  # codes into ``reviewers``
    review_session: np.ndarray  # session ids
    running: np.ndarray  # (reviews, slots)
    earlier: np.ndarray  # (reviews, slots)
    paired: np.ndarray  # (reviews, slots)


def summarize_anchoring(connection: duckdb.DuckDBPyConnection) -> AnchoringSummary:
    tables = _review_tables(connection)
    if tables is None:
        none = np.zeros(0, dtype=np.int64)
        empty = np.zeros((0, 0))
        return AnchoringSummary((), none, np.zeros(0, dtype=str), empty, empty, empty)
    codes = sorted(tables.names)
    reviewers = tuple(str(tables.names[code]) for code in codes)
    by_name = np.argsort(np.asarray(reviewers, dtype=str), kind="stable")
    reviewers = tuple(reviewers[i] for i in by_name)
    recode = np.zeros(max(codes) + 1, dtype=np.int64)
    recode[np.asarray(codes, dtype=np.int64)[by_name]] = np.arange(len(codes))
    review_reviewer = recode[tables.review_reviewer]
    ids = session_ids_of(connection, tables.review_session)
    order = np.lexsort((ids, review_reviewer))
    return AnchoringSummary(
        reviewers,
        review_reviewer[order],
        ids[order],
        running_mean_deviation(tables.in_order)[order],
        earlier_minus_rest_mean(tables.consensus)[order],
        tables.paired[order],
    )


def _padded(values: np.ndarray, n_slots: int) -> np.ndarray:
    """``values`` (reviews, slots) widened to ``n_slots`` with NaN (no answer shown there)."""
    wide = np.full((values.shape[0], n_slots), np.nan)
    wide[:, : values.shape[1]] = values
    return wide


def merge_anchoring(saved: AnchoringSummary, new: AnchoringSummary) -> AnchoringSummary:
    reviewers = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    names = np.asarray(reviewers, dtype=str)

    def recoded(summary: AnchoringSummary) -> np.ndarray:
        mapping = np.searchsorted(names, np.asarray(summary.reviewers, dtype=str))
        return mapping.astype(np.int64)[summary.review_reviewer]

    review_reviewer = np.concatenate([recoded(saved), recoded(new)])
    review_session = np.concatenate([saved.review_session, new.review_session])
    order = np.lexsort((review_session, review_reviewer))
    review_reviewer, review_session = review_reviewer[order], review_session[order]
    same = (review_reviewer[1:] == review_reviewer[:-1]) & (
        review_session[1:] == review_session[:-1]
    )
    if same.any():
        raise SummaryNotMergeable(
            f"anchoring: session {str(review_session[1:][same][0])!r} is in both summaries"
        )
    n_slots = max(saved.running.shape[1], new.running.shape[1])

    def stacked(field: str) -> np.ndarray:
        parts = [_padded(getattr(summary, field), n_slots) for summary in (saved, new)]
        return np.concatenate(parts)[order]

    return AnchoringSummary(
        reviewers,
        review_reviewer,
        review_session,
        stacked("running"),
        stacked("earlier"),
        stacked("paired"),
    )


def anchoring_payload(summary: AnchoringSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The summary as JSON-safe metadata and named arrays."""
    fields = [name for name in AnchoringSummary.__dataclass_fields__ if name != "reviewers"]
    return {"reviewers": list(summary.reviewers)}, {name: getattr(summary, name) for name in fields}


def anchoring_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> AnchoringSummary:
    """:func:`anchoring_payload`'s output back; ``ValueError`` naming the bad field."""
    read = PayloadReader("anchoring", meta, arrays)
    reviewers = read.names("reviewers")
    if list(reviewers) != sorted(reviewers):
        raise read.fail("reviewers", "are not sorted")
    sessions = arrays.get("review_session")
    if not isinstance(sessions, np.ndarray) or sessions.dtype.kind != "U" or sessions.ndim != 1:
        raise read.fail("review_session", "is not a list of strings")
    n_reviews = sessions.shape[0]
    review_reviewer = read.codes("review_reviewer", n_reviews, max(1, len(reviewers)))
    later = (review_reviewer[1:] > review_reviewer[:-1]) | (
        (review_reviewer[1:] == review_reviewer[:-1]) & (sessions[1:] > sessions[:-1])
    )
    if not later.all():
        raise read.fail("review_session", "is not sorted and distinct within a reviewer")
    running = arrays.get("running")
    n_slots = running.shape[1] if isinstance(running, np.ndarray) and running.ndim == 2 else 0
    if n_slots > MAX_SLOTS:
        raise read.fail("running", f"has more than {MAX_SLOTS} slots")
    return AnchoringSummary(
        reviewers,
        review_reviewer,
        sessions,
        read.finite("running", (n_reviews, n_slots), nan_ok=True),
        read.finite("earlier", (n_reviews, n_slots), nan_ok=True),
        read.finite("paired", (n_reviews, n_slots), nan_ok=True),
    )
