"""Per reviewer: how its reviews were read (refused, unparseable, failed) and how often its
ranking contradicts its own scores (ADR 0027).

Both are descriptions, not tests. A refusal or a discordant pair is a fact read off the
record, not an inference: with no abstentions or mismatches the rates are exactly 0, so
there is no false positive to control and nothing is flagged. The intervals say how well
the rate is known.

- Review outcomes come from ``review_status`` (one review per reviewer and session). Lines
  written before the field existed (null) are not counted: such writers left no records for
  a review without a verdict, so they would understate every rate. Each session's review is
  one trial; the interval is Wilson's.
- Mismatch: a pair of answers one reviewer both scored and ranked, with different scores,
  is discordant when the better-ranked answer has the strictly lower score (ties in score
  are no contradiction). The rate is discordant over comparable pairs, pooled over
  sessions with a cluster-robust interval (:func:`~llm_council.stats.ranking.rank_consistency.
  clustered_rate`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.session_rows import group_starts, session_ids_of
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.ranking.rank_consistency import clustered_rate

#: review_status values that mean no verdict, in the order the report lists them
NO_VERDICT_STATUSES = ("refused", "unparseable", "error", "missing")


@dataclass(frozen=True)
class ReviewerParseOutcomes:
    """One reviewer's review outcomes and score/rank mismatch rate."""

    reviewer: str
    n_reviews: int  # reviews with a known review_status
    n_reviews_unknown: int  # reviews from lines written before review_status existed
    status_counts: dict[str, int]  # review_status -> reviews
    refusal_rate: Interval  # refused / n_reviews (Wilson)
    unparseable_rate: Interval
    failure_rate: Interval  # "error" or "missing": no reply at all
    n_comparable_pairs: int
    n_discordant_pairs: int
    n_mismatch_sessions: int  # sessions with at least one comparable pair
    mismatch_rate: Interval  # discordant / comparable pairs, session-clustered interval


def _rate(events: int, trials: int) -> Interval:
    if trials == 0:
        nan = float("nan")
        return Interval(nan, nan, nan)
    low, high = wilson_interval(events, trials)
    return Interval(events / trials, low, high)


@dataclass(frozen=True)
class ParseOutcomesSummary:
    """Per (reviewer, session): the review's status (``status_known`` False for a null one)
    and, where it scored and ranked, its discordant and comparable pairs; keyed by name and
    ``session_id`` (sorted by reviewer, then session id)."""

    review_reviewer: np.ndarray
    review_session: np.ndarray
    review_status: np.ndarray
    status_known: np.ndarray
    pair_reviewer: np.ndarray
    pair_session: np.ndarray
    discordant: np.ndarray
    comparable: np.ndarray


def _reviews(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, ...]:
    rows = connection.execute(
        """SELECT reviewer, session, any_value(review_status) AS status
           FROM records GROUP BY reviewer, session"""
    ).fetchall()
    reviewer = np.asarray([str(row[0]) for row in rows], dtype=str)
    sessions = np.asarray([int(row[1]) for row in rows], dtype=np.int64)
    known = np.asarray([row[2] is not None for row in rows], dtype=bool)
    status = np.asarray([str(row[2]) if row[2] is not None else "" for row in rows], dtype=str)
    return reviewer, session_ids_of(connection, sessions), status, known


def _pairs(connection: duckdb.DuckDBPyConnection) -> tuple[np.ndarray, ...]:
    """Per (reviewer, session): (discordant pairs, comparable pairs).

    ``scored`` holds exactly the records with a score, with integer reviewer indices: the
    self-join and its grouping run on integers, and the counts come back as arrays.
    """
    rows = connection.execute(
        """WITH usable AS (
               SELECT session, reviewer_index, score, rank FROM scored
               WHERE rank IS NOT NULL)
           SELECT a.reviewer_index, a.session,
                  count(*) FILTER (WHERE a.score < b.score) AS discordant,
                  count(*) AS comparable
           FROM usable a JOIN usable b
             ON a.session = b.session AND a.reviewer_index = b.reviewer_index
                AND a.rank < b.rank
           WHERE a.score <> b.score
           GROUP BY a.reviewer_index, a.session"""
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    index = np.asarray(rows["reviewer_index"], dtype=np.int64)
    reviewer = np.asarray([str(names[int(i)]) for i in index.tolist()], dtype=str)
    sessions = session_ids_of(connection, np.asarray(rows["session"], dtype=np.int64))
    return (
        reviewer,
        sessions,
        np.asarray(rows["discordant"], dtype=np.int64),
        np.asarray(rows["comparable"], dtype=np.int64),
    )


def _by_reviewer_then_session(reviewer: np.ndarray, session: np.ndarray) -> np.ndarray:
    return np.lexsort((session, reviewer)) if reviewer.size else np.zeros(0, dtype=np.int64)


def _sorted(summary: ParseOutcomesSummary) -> ParseOutcomesSummary:
    reviews = _by_reviewer_then_session(summary.review_reviewer, summary.review_session)
    pairs = _by_reviewer_then_session(summary.pair_reviewer, summary.pair_session)
    return ParseOutcomesSummary(
        summary.review_reviewer[reviews],
        summary.review_session[reviews],
        summary.review_status[reviews],
        summary.status_known[reviews],
        summary.pair_reviewer[pairs],
        summary.pair_session[pairs],
        summary.discordant[pairs],
        summary.comparable[pairs],
    )


class ParseOutcomesSection:
    """:func:`parse_outcomes_by_reviewer` as an incremental section (ADR 0073)."""

    name = "parse_outcomes"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ParseOutcomesSummary:
        return _sorted(ParseOutcomesSummary(*_reviews(connection), *_pairs(connection)))

    def merge(self, saved: ParseOutcomesSummary, new: ParseOutcomesSummary) -> ParseOutcomesSummary:
        fields = ParseOutcomesSummary.__dataclass_fields__
        return _sorted(
            ParseOutcomesSummary(
                **{f: np.concatenate([getattr(saved, f), getattr(new, f)]) for f in fields}
            )
        )

    def finish(self, summary: ParseOutcomesSummary) -> list[ReviewerParseOutcomes]:
        return _outcomes(summary)

    def to_payload(
        self, summary: ParseOutcomesSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        fields = ParseOutcomesSummary.__dataclass_fields__
        return {}, {field: getattr(summary, field) for field in fields}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ParseOutcomesSummary:
        fields = list(ParseOutcomesSummary.__dataclass_fields__)
        missing = sorted(set(fields) - set(arrays))
        if missing:
            raise ValueError(f"parse outcomes summary: no array {missing[0]!r}")
        if (
            len({arrays[f].shape for f in fields[:4]}) != 1
            or len({arrays[f].shape for f in fields[4:]}) != 1
        ):
            raise ValueError("parse outcomes summary: arrays of different lengths")
        return ParseOutcomesSummary(**{field: arrays[field] for field in fields})


def _status_counts(summary: ParseOutcomesSummary) -> dict[str, dict[str | None, int]]:
    """Per reviewer, reviews by status (``None``: unknown), counted over distinct codes."""
    reviewers, reviewer_code = np.unique(summary.review_reviewer, return_inverse=True)
    statuses, status_code = np.unique(summary.review_status, return_inverse=True)
    n_status = max(statuses.size, 1)
    key = (reviewer_code.reshape(-1) * n_status + status_code.reshape(-1)) * 2
    key += summary.status_known.astype(np.int64)
    combos, counts = np.unique(key, return_counts=True)
    found: dict[str, dict[str | None, int]] = {}
    for combo, count in zip(combos.tolist(), counts.tolist(), strict=True):
        pair, known = divmod(combo, 2)
        reviewer, status = divmod(pair, n_status)
        by_status = found.setdefault(str(reviewers[reviewer]), {})
        name = str(statuses[status]) if known else None
        by_status[name] = by_status.get(name, 0) + int(count)
    return found


def _outcomes(summary: ParseOutcomesSummary) -> list[ReviewerParseOutcomes]:
    """Every reviewer's outcomes from the summary of every session."""
    statuses = _status_counts(summary)
    starts = group_starts(summary.pair_reviewer)
    ends = np.append(starts[1:], summary.pair_reviewer.size) if starts.size else starts
    pairs = {
        str(summary.pair_reviewer[start]): (
            summary.discordant[start:end].astype(float),
            summary.comparable[start:end].astype(float),
        )
        for start, end in zip(starts, ends, strict=True)
    }
    results = []
    for reviewer in sorted(statuses):
        counts = statuses[reviewer]
        unknown = counts.get(None, 0)
        known = {str(status): n for status, n in counts.items() if status is not None}
        n_reviews = sum(known.values())
        events, trials = pairs.get(reviewer, (np.zeros(0), np.zeros(0)))
        mismatch = clustered_rate(events, trials)
        results.append(
            ReviewerParseOutcomes(
                reviewer=reviewer,
                n_reviews=n_reviews,
                n_reviews_unknown=unknown,
                status_counts=dict(sorted(known.items())),
                refusal_rate=_rate(known.get("refused", 0), n_reviews),
                unparseable_rate=_rate(known.get("unparseable", 0), n_reviews),
                failure_rate=_rate(known.get("error", 0) + known.get("missing", 0), n_reviews),
                n_comparable_pairs=int(trials.sum()),
                n_discordant_pairs=int(events.sum()),
                n_mismatch_sessions=int(np.count_nonzero(trials)),
                mismatch_rate=Interval(mismatch.estimate, mismatch.ci_low, mismatch.ci_high),
            )
        )
    return results


PARSE_OUTCOMES = ParseOutcomesSection()


def parse_outcomes_by_reviewer(
    connection: duckdb.DuckDBPyConnection,
) -> list[ReviewerParseOutcomes]:
    """Every reviewer's outcomes from ``records`` (observational reviews only; every
    session of ``connection``: :class:`ParseOutcomesSection` with nothing saved)."""
    return PARSE_OUTCOMES.finish(PARSE_OUTCOMES.summarize(connection))
