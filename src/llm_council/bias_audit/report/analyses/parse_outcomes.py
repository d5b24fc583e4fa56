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
  clustered_rate_from_sums`: the same interval from per-reviewer integer sums, so the
  section's summary does not grow with the store, ADR 0092).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.ranking.rank_consistency import ClusterSums, clustered_rate_from_sums

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
    """Per reviewer (sorted names): its reviews by status, one review a (reviewer,
    session) (``status_counts[r, s]`` for ``statuses[s]``, the last column the reviews
    with a null status), and the cluster sums of its comparable and discordant pairs over
    the sessions with a comparable pair (``pair_sums[r]``: :class:`ClusterSums`'s fields
    in order). Integer sums over sessions: a merge adds them exactly, and the summary's
    size does not grow with the store (ADR 0092)."""

    reviewers: tuple[str, ...]
    statuses: tuple[str, ...]
    status_counts: np.ndarray  # (R, S + 1) int64
    pair_sums: np.ndarray  # (R, 6) int64


def _status_rows(connection: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """(reviewer, status or None, reviews) over the (reviewer, session) reviews."""
    return connection.execute(
        """SELECT reviewer, status, count(*) FROM (
               SELECT reviewer, session, any_value(review_status) AS status
               FROM records GROUP BY reviewer, session)
           GROUP BY reviewer, status"""
    ).fetchall()


def _pair_rows(connection: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Per reviewer: the cluster sums of its (discordant y, comparable n) pairs per session.

    ``scored`` holds exactly the records with a score, with integer reviewer indices: the
    self-join and its grouping run on integers. Every (reviewer, session) group has at
    least one comparable pair (the join keeps pairs with different scores only).
    """
    return connection.execute(
        """WITH usable AS (
               SELECT session, reviewer_index, score, rank FROM scored
               WHERE rank IS NOT NULL),
           per_session AS (
               SELECT a.reviewer_index, a.session,
                      count(*) FILTER (WHERE a.score < b.score) AS y,
                      count(*) AS n
               FROM usable a JOIN usable b
                 ON a.session = b.session AND a.reviewer_index = b.reviewer_index
                    AND a.rank < b.rank
               WHERE a.score <> b.score
               GROUP BY a.reviewer_index, a.session)
           SELECT r.reviewer, count(*), sum(y), sum(n), sum(y * y), sum(y * n), sum(n * n)
           FROM per_session p JOIN reviewers r USING (reviewer_index)
           GROUP BY r.reviewer"""
    ).fetchall()


def _summarize(connection: duckdb.DuckDBPyConnection) -> ParseOutcomesSummary:
    status_rows, pair_rows = _status_rows(connection), _pair_rows(connection)
    reviewers = tuple(sorted({str(row[0]) for row in status_rows + pair_rows}))
    statuses = tuple(sorted({str(row[1]) for row in status_rows if row[1] is not None}))
    at_reviewer = {name: index for index, name in enumerate(reviewers)}
    at_status = {name: index for index, name in enumerate(statuses)}
    counts = np.zeros((len(reviewers), len(statuses) + 1), dtype=np.int64)
    for reviewer, status, n in status_rows:
        column = len(statuses) if status is None else at_status[str(status)]
        counts[at_reviewer[str(reviewer)], column] += int(n)
    pair_sums = np.zeros((len(reviewers), 6), dtype=np.int64)
    for reviewer, *sums in pair_rows:
        pair_sums[at_reviewer[str(reviewer)]] = [int(value) for value in sums]
    return ParseOutcomesSummary(reviewers, statuses, counts, pair_sums)


def _placed(
    summary: ParseOutcomesSummary, reviewers: tuple[str, ...], statuses: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``summary``'s counts and sums on the (larger) reviewer and status axes given."""
    rows = np.searchsorted(reviewers, summary.reviewers).astype(np.int64)
    columns = np.append(np.searchsorted(statuses, summary.statuses), len(statuses))
    counts = np.zeros((len(reviewers), len(statuses) + 1), dtype=np.int64)
    counts[np.ix_(rows, columns.astype(np.int64))] = summary.status_counts
    sums = np.zeros((len(reviewers), 6), dtype=np.int64)
    sums[rows] = summary.pair_sums
    return counts, sums


def _merge(saved: ParseOutcomesSummary, new: ParseOutcomesSummary) -> ParseOutcomesSummary:
    reviewers = tuple(sorted(set(saved.reviewers) | set(new.reviewers)))
    statuses = tuple(sorted(set(saved.statuses) | set(new.statuses)))
    saved_counts, saved_sums = _placed(saved, reviewers, statuses)
    new_counts, new_sums = _placed(new, reviewers, statuses)
    return ParseOutcomesSummary(
        reviewers, statuses, saved_counts + new_counts, saved_sums + new_sums
    )


def _from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> ParseOutcomesSummary:
    read = PayloadReader("parse outcomes", meta, arrays)
    reviewers, statuses = read.names("reviewers"), read.names("statuses")
    for field, names in (("reviewers", reviewers), ("statuses", statuses)):
        if list(names) != sorted(names):
            raise read.fail(field, "is not sorted")
    counts = read.array("status_counts", "i", (len(reviewers), len(statuses) + 1))
    sums = read.array("pair_sums", "i", (len(reviewers), 6))
    if (counts < 0).any() or (sums < 0).any():
        raise read.fail("status_counts" if (counts < 0).any() else "pair_sums", "is negative")
    clusters, events, trials = sums[:, 0], sums[:, 1], sums[:, 2]
    if ((events > trials) | (clusters > trials)).any():
        raise read.fail("pair_sums", "counts more events or sessions than pairs")
    return ParseOutcomesSummary(reviewers, statuses, counts, sums)


class ParseOutcomesSection:
    """:func:`parse_outcomes_by_reviewer` as an incremental section (ADR 0073)."""

    name = "parse_outcomes"
    version = 2  # 2: per-reviewer sums, no per-session rows (ADR 0092)

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ParseOutcomesSummary:
        return _summarize(connection)

    def merge(self, saved: ParseOutcomesSummary, new: ParseOutcomesSummary) -> ParseOutcomesSummary:
        return _merge(saved, new)

    def finish(self, summary: ParseOutcomesSummary) -> list[ReviewerParseOutcomes]:
        return _outcomes(summary)

    def to_payload(
        self, summary: ParseOutcomesSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {"reviewers": list(summary.reviewers), "statuses": list(summary.statuses)}
        return meta, {"status_counts": summary.status_counts, "pair_sums": summary.pair_sums}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ParseOutcomesSummary:
        return _from_payload(meta, arrays)


def _outcomes(summary: ParseOutcomesSummary) -> list[ReviewerParseOutcomes]:
    """Every reviewer with a review: its outcomes from the summary of every session."""
    results = []
    for index, reviewer in enumerate(summary.reviewers):
        row = summary.status_counts[index]
        if not row.any():
            continue  # pairs without a review cannot happen (scored is within records)
        known = {
            status: int(n)
            for status, n in zip(summary.statuses, row[:-1].tolist(), strict=True)
            if n
        }
        n_reviews = sum(known.values())
        pairs = ClusterSums(*(int(value) for value in summary.pair_sums[index].tolist()))
        mismatch = clustered_rate_from_sums(pairs)
        results.append(
            ReviewerParseOutcomes(
                reviewer=reviewer,
                n_reviews=n_reviews,
                n_reviews_unknown=int(row[-1]),
                status_counts=dict(sorted(known.items())),
                refusal_rate=_rate(known.get("refused", 0), n_reviews),
                unparseable_rate=_rate(known.get("unparseable", 0), n_reviews),
                failure_rate=_rate(known.get("error", 0) + known.get("missing", 0), n_reviews),
                n_comparable_pairs=pairs.trials,
                n_discordant_pairs=pairs.events,
                n_mismatch_sessions=pairs.clusters,
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
