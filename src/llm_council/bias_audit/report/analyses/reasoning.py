"""Reasoning-chain bias per reviewer: does its score move with the length of its rationale?

For each reviewer, the least-squares slope of its *paired deviation* (its score minus the
other reviewers' mean on the same answer) on ``log2`` of the characters of the rationale
it wrote in that review: points per doubling of the rationale. The paired deviation holds
the answer's quality fixed (every reviewer saw the same answer), so a judge that writes
longer rationales for better answers does not show up here; a judge whose longer
reasoning makes it harsher (or more generous) on the same answers does. Self-reviews are
left out (their deviation carries self-preference).

The interval is a delete-one-session jackknife (sessions as clusters: one rationale is
shared by every score of a review), the p-values are Holm-adjusted across reviewers, and
a reviewer is flagged when its adjusted p is below the significance level. Reviewers whose
records carry no rationale length (older lines, or a council without rationales) are
omitted. The null false-positive rate and power are measured in ``docs/bias-report.md``.

The report computes it from per-session sums (:class:`ReasoningSection`, ADR 0078).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.analyses.session_rows import group_starts, session_ids_of
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.bias_effects.reasoning_length import jackknife_slope_from_cluster_sums
from llm_council.stats.inference.multiplicity import holm_adjusted


@dataclass(frozen=True)
class ReviewerReasoning:
    """One reviewer's score change per doubling of its rationale's length."""

    reviewer: str
    n_sessions: int
    n_scores: int
    median_rationale_chars: float
    points_per_doubling: Interval  # slope of paired deviation on log2(rationale chars)
    holm_p: float
    detected: bool


@dataclass(frozen=True)
class ReasoningSummary:
    """Per (reviewer, session), sorted by reviewer then session id: the sums (n, Sx, Sy,
    Sxx, Sxy) of x = log2(rationale chars), y = paired deviation over its non-self scores;
    per (reviewer, rationale length): how many scores had it (for the exact median)."""

    reviewers: tuple[str, ...]
    row_reviewer: np.ndarray  # codes into ``reviewers``
    row_session: np.ndarray  # session ids
    row_sums: np.ndarray  # (rows, 5)
    length_reviewer: np.ndarray  # codes into ``reviewers``
    length_chars: np.ndarray  # rationale length in characters (int64)
    length_count: np.ndarray  # scores with that length


def _summarize(connection: duckdb.DuckDBPyConnection) -> ReasoningSummary:
    """Per-session sums from the ``scored`` and ``records`` tables, rows in a fixed order."""
    rows = connection.execute(
        """SELECT s.reviewer_index, s.session, s.deviation, r.rationale_chars
           FROM scored s JOIN records r USING (session, reviewer, model)
           WHERE NOT s.is_self AND s.deviation IS NOT NULL AND r.rationale_chars > 0
           ORDER BY s.reviewer_index, s.session, s.model_index"""
    ).fetchnumpy()
    if len(rows["session"]) == 0:
        none = np.zeros(0, dtype=np.int64)
        return ReasoningSummary(
            (), none, np.zeros(0, dtype=str), np.zeros((0, 5)), none, none, none
        )
    name_of = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    present, index = np.unique(np.asarray(rows["reviewer_index"], np.int64), return_inverse=True)
    names = np.asarray([str(name_of[int(code)]) for code in present], dtype=str)
    by_name = np.argsort(names, kind="stable")
    reviewers = names[by_name]
    reviewer = np.argsort(by_name)[index.reshape(-1)]  # codes into the sorted names
    session = np.asarray(rows["session"], dtype=np.int64)
    x = np.log2(np.asarray(rows["rationale_chars"], dtype=float))
    y = np.asarray(rows["deviation"], dtype=float)
    starts = group_starts(reviewer, session)
    terms = np.stack([np.ones_like(x), x, y, x * x, x * y], axis=1)
    sums = np.add.reduceat(terms, starts) if starts.size else np.zeros((0, 5))
    ids = session_ids_of(connection, session[starts])
    order = np.lexsort((ids, reviewer[starts]))
    chars = np.asarray(rows["rationale_chars"], dtype=np.int64)
    # one integer key per (reviewer, length): a 1-D unique, sorted as the pairs are
    span = int(chars.max()) + 1
    length_key, length_count = np.unique(reviewer * span + chars, return_counts=True)
    return ReasoningSummary(
        tuple(reviewers.tolist()),
        reviewer[starts][order],
        ids[order],
        sums[order],
        length_key // span,
        length_key % span,
        length_count.astype(np.int64),
    )


def _recoded(summary: ReasoningSummary, reviewers: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """The summary's reviewer codes into ``reviewers`` (rows, lengths)."""
    mapping = np.searchsorted(np.asarray(reviewers, dtype=str), np.asarray(summary.reviewers))
    mapping = mapping.astype(np.int64) if mapping.size else np.zeros(0, dtype=np.int64)
    return mapping[summary.row_reviewer], mapping[summary.length_reviewer]


def _merged(saved: ReasoningSummary, new: ReasoningSummary) -> ReasoningSummary:
    """Rows concatenated in (reviewer, session id) order, length counts added."""
    reviewers = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    (rows_a, lengths_a), (rows_b, lengths_b) = _recoded(saved, reviewers), _recoded(new, reviewers)
    row_reviewer = np.concatenate([rows_a, rows_b])
    row_session = np.concatenate([saved.row_session, new.row_session])
    order = np.lexsort((row_session, row_reviewer))
    row_reviewer, row_session = row_reviewer[order], row_session[order]
    same = (row_reviewer[1:] == row_reviewer[:-1]) & (row_session[1:] == row_session[:-1])
    if same.any():
        raise SummaryNotMergeable(
            f"reasoning: session {str(row_session[1:][same][0])!r} is in both summaries"
        )
    keys = np.concatenate(
        [
            np.stack([lengths_a, saved.length_chars], axis=1),
            np.stack([lengths_b, new.length_chars], axis=1),
        ]
    ).reshape(-1, 2)
    counts = np.concatenate([saved.length_count, new.length_count])
    length_key, inverse = np.unique(keys, axis=0, return_inverse=True)
    length_count = np.bincount(inverse.reshape(-1), weights=counts, minlength=len(length_key))
    return ReasoningSummary(
        reviewers,
        row_reviewer,
        row_session,
        np.concatenate([saved.row_sums, new.row_sums])[order],
        length_key[:, 0],
        length_key[:, 1],
        length_count.astype(np.int64),
    )


def _median_of_counts(values: np.ndarray, counts: np.ndarray) -> float:
    """``np.median`` of ``values`` each repeated ``counts`` times (values sorted)."""
    total = int(counts.sum())
    ends = np.cumsum(counts)
    low = values[np.searchsorted(ends, (total - 1) // 2, side="right")]
    high = values[np.searchsorted(ends, total // 2, side="right")]
    return float(np.mean([float(low), float(high)]))


def _finished(summary: ReasoningSummary, significance_level: float) -> list[ReviewerReasoning]:
    estimates = []
    for code, name in enumerate(summary.reviewers):
        mine = summary.row_reviewer == code
        sums = summary.row_sums[mine]
        if sums.shape[0] == 0:
            continue
        lengths = summary.length_reviewer == code
        median = _median_of_counts(summary.length_chars[lengths], summary.length_count[lengths])
        slope = jackknife_slope_from_cluster_sums(sums)
        estimates.append((name, int(sums.shape[0]), int(sums[:, 0].sum()), median, slope))
    adjusted = holm_adjusted([slope.p_value for *_, slope in estimates])
    return [
        ReviewerReasoning(
            reviewer=name,
            n_sessions=n_sessions,
            n_scores=n_scores,
            median_rationale_chars=median,
            points_per_doubling=Interval.from_estimate(slope),
            holm_p=float(p),
            detected=bool(math.isfinite(p) and p < significance_level),
        )
        for (name, n_sessions, n_scores, median, slope), p in zip(estimates, adjusted, strict=True)
    ]


class ReasoningSection:
    """:func:`reasoning_by_reviewer` as an incremental section (ADR 0078)."""

    name = "reasoning"
    version = 1

    def __init__(self, significance_level: float = 0.05) -> None:
        self.significance_level = significance_level

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ReasoningSummary:
        return _summarize(connection)

    def merge(self, saved: ReasoningSummary, new: ReasoningSummary) -> ReasoningSummary:
        return _merged(saved, new)

    def finish(self, summary: ReasoningSummary) -> list[ReviewerReasoning]:
        return _finished(summary, self.significance_level)

    def to_payload(self, summary: ReasoningSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = [name for name in ReasoningSummary.__dataclass_fields__ if name != "reviewers"]
        return {"reviewers": list(summary.reviewers)}, {
            name: getattr(summary, name) for name in fields
        }

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ReasoningSummary:
        read = PayloadReader("reasoning", meta, arrays)
        reviewers = read.names("reviewers")
        if list(reviewers) != sorted(reviewers):
            raise read.fail("reviewers", "are not sorted")
        sessions = arrays.get("row_session")
        if not isinstance(sessions, np.ndarray) or sessions.dtype.kind != "U":
            raise read.fail("row_session", "is not a list of strings")
        n_rows = sessions.shape[0] if sessions.ndim == 1 else -1
        if n_rows < 0:
            raise read.fail("row_session", "is not a list of strings")
        row_reviewer = read.codes("row_reviewer", n_rows, len(reviewers))
        later = (row_reviewer[1:] > row_reviewer[:-1]) | (
            (row_reviewer[1:] == row_reviewer[:-1]) & (sessions[1:] > sessions[:-1])
        )
        if not later.all():
            raise read.fail("row_session", "is not sorted and distinct within a reviewer")
        lengths = arrays.get("length_chars")
        n_lengths = lengths.shape[0] if isinstance(lengths, np.ndarray) and lengths.ndim else 0
        chars = read.counts("length_chars", (n_lengths,))
        if chars.size and chars.min() < 1:
            raise read.fail("length_chars", "holds a length below 1")
        return ReasoningSummary(
            reviewers,
            row_reviewer,
            sessions,
            read.finite("row_sums", (n_rows, 5)),
            read.codes("length_reviewer", n_lengths, len(reviewers)),
            chars,
            read.counts("length_count", (n_lengths,)),
        )


def reasoning_by_reviewer(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> list[ReviewerReasoning]:
    """The slope per reviewer from the ``scored`` and ``records`` tables (every session of
    ``connection``: :class:`ReasoningSection` with nothing saved)."""
    section = ReasoningSection(significance_level)
    return section.finish(section.summarize(connection))
