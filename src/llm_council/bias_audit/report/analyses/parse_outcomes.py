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

from dataclasses import dataclass

import duckdb
import numpy as np

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


def _status_counts(connection: duckdb.DuckDBPyConnection) -> dict[str, dict[str | None, int]]:
    rows = connection.execute(
        """WITH reviews AS (
               SELECT reviewer, session, any_value(review_status) AS status
               FROM records GROUP BY reviewer, session)
           SELECT reviewer, status, count(*) FROM reviews GROUP BY reviewer, status"""
    ).fetchall()
    counts: dict[str, dict[str | None, int]] = {}
    for reviewer, status, n in rows:
        counts.setdefault(str(reviewer), {})[status] = int(n)
    return counts


def _pair_counts(connection: duckdb.DuckDBPyConnection) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per reviewer, per session (in session order): (discordant pairs, comparable pairs).

    ``scored`` holds exactly the records with a score, with integer reviewer indices: the
    self-join and its grouping run on integers, and the counts come back as arrays.
    """
    rows = connection.execute(
        """WITH usable AS (
               SELECT session, reviewer_index, score, rank FROM scored
               WHERE rank IS NOT NULL)
           SELECT a.reviewer_index,
                  count(*) FILTER (WHERE a.score < b.score) AS discordant,
                  count(*) AS comparable
           FROM usable a JOIN usable b
             ON a.session = b.session AND a.reviewer_index = b.reviewer_index
                AND a.rank < b.rank
           WHERE a.score <> b.score
           GROUP BY a.reviewer_index, a.session
           ORDER BY a.reviewer_index, a.session"""
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    reviewer_index = np.asarray(rows["reviewer_index"], dtype=np.int64)
    events = np.asarray(rows["discordant"], dtype=float)
    trials = np.asarray(rows["comparable"], dtype=float)
    starts = np.flatnonzero(np.r_[True, reviewer_index[1:] != reviewer_index[:-1]])
    ends = np.r_[starts[1:], reviewer_index.size]
    return {
        str(names[int(reviewer_index[start])]): (events[start:end], trials[start:end])
        for start, end in zip(starts, ends, strict=True)
        if end > start
    }


def parse_outcomes_by_reviewer(
    connection: duckdb.DuckDBPyConnection,
) -> list[ReviewerParseOutcomes]:
    """Every reviewer's outcomes from ``records`` (observational reviews only)."""
    statuses = _status_counts(connection)
    pairs = _pair_counts(connection)
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
