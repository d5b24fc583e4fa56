"""Reviewer profiles (leniency, spread, reliability); self-preference is in :mod:`.self_preference`.

Leniency is the mean paired deviation (score minus the mean of the *reference* reviewers
on the same answer), first averaged within each session, then across sessions: sessions are
the unit, so the interval is a t interval over session means. The reference is robust: a
Holm step-down removes outlying reviewers from it one at a time (at most a minority), so
one harsh judge does not make every other judge look generous
(:mod:`llm_council.stats.reviewers.robust_leniency`). A reviewer is labelled harsh or generous only
when the step-down flags it, which happens in at most 5% of no-bias stores (family-wise,
measured in tests/bias_audit/report/analyses/test_null_calibration.py).
"""

from __future__ import annotations

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import (
    Interval,
    ReviewerProfile,
    reliability_tier,
)
from llm_council.bias_audit.report.load.tables import (
    dense_codes,
    nullable_floats,
    rank_point_reviewers,
    scores_sum_to_a_constant,
)
from llm_council.stats.inference.pooling import (
    fisher_z_pooled_correlation,
    mean_interval_from_moments,
)
from llm_council.stats.reviewers.robust_leniency import ReviewerLeniency, step_down_leniency

#: a reviewer whose within-session score sd is this far above/below the median reviewer's
#: is called discriminating / compressed (descriptive, not a test)
_SPREAD_RATIO_BAND = 0.2


def _spread_label(ratio: float) -> str:
    if not np.isfinite(ratio):
        return "unknown"
    if ratio >= 1 + _SPREAD_RATIO_BAND:
        return "discriminating"
    if ratio <= 1 - _SPREAD_RATIO_BAND:
        return "compressed"
    return "typical"


#: the label when each reviewer's scores in a session add up to the same total (leniency),
#: or are rank points, whose spread is fixed by how many answers were ranked (spread)
NOT_IDENTIFIED = "not identified"


def leniency_fixed_by_the_scale(
    connection: duckdb.DuckDBPyConnection, rank_reviewers: set[str] | None = None
) -> bool:
    """Is every reviewer's level fixed by the scale? Yes when all complete score sets of a
    session add up to one number (:func:`scores_sum_to_a_constant`), or when every
    reviewer gave rank points (:func:`rank_point_reviewers`; ``rank_reviewers`` when the
    caller has them): then leniency is not identified, whatever the design."""
    if scores_sum_to_a_constant(connection):
        return True
    ranks = rank_point_reviewers(connection) if rank_reviewers is None else rank_reviewers
    row = connection.execute("SELECT count(DISTINCT reviewer) FROM scored").fetchone()
    return bool(ranks) and row is not None and len(ranks) == int(row[0])


#: the smallest leniency called harsh/generous, as a share of the score scale's range (0.25
#: points on 1-10): over hundreds of sessions a tenth of a point is "significant", and a user
#: who reads "harsh" would act on a difference no one would notice in a single verdict
MATERIAL_LENIENCY_SHARE = 0.025


def _leniency_label(result: ReviewerLeniency, material: float) -> str:
    """harsh / generous when the step-down flags it AND it is at least ``material`` points;
    a flagged difference smaller than that is "neutral" (the estimate is still printed)."""
    estimate = result.estimate
    if not np.isfinite(estimate.ci_low):
        return "unknown"
    if not result.flagged or abs(estimate.estimate) < material:
        return "neutral"
    return "harsh" if estimate.estimate < 0 else "generous"


def material_leniency(connection: duckdb.DuckDBPyConnection) -> float:
    """:data:`MATERIAL_LENIENCY_SHARE` of the store's median score range, in points."""
    row = connection.execute(
        "SELECT median(scale_high - scale_low) FROM records WHERE score IS NOT NULL"
    ).fetchone()
    scale_range = float(row[0]) if row and row[0] is not None else 9.0
    return MATERIAL_LENIENCY_SHARE * scale_range


def robust_leniencies(
    connection: duckdb.DuckDBPyConnection, excluded: set[str] | None = None
) -> dict[str, ReviewerLeniency]:
    """Each reviewer's leniency against the step-down reference (by reviewer id).

    ``excluded`` reviewers (rank-point reviewers in a store of scorers) are left out of
    the estimation and of the reference: their level is fixed by how many answers they
    ranked, on another scale than the others' scores.
    """
    columns = connection.execute(
        "SELECT session, model_index, reviewer_index, score, is_self FROM scored"
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    session = np.asarray(columns["session"], dtype=np.int64)
    reviewer = np.asarray(columns["reviewer_index"], dtype=np.int64)
    kept_names = names
    if excluded:
        keep = ~np.isin(reviewer, [i for i, name in names.items() if name in excluded])
        columns = {key: np.asarray(value)[keep] for key, value in columns.items()}
        session = session[keep]
        kept_ids, reviewer = dense_codes(reviewer[keep])
        kept_names = {code: names[int(i)] for code, i in enumerate(kept_ids)}
    if session.size == 0:
        return {}
    _, session_index = dense_codes(session)
    del session
    n_models = int(np.asarray(columns["model_index"]).max()) + 1
    answer = session_index * n_models + np.asarray(columns["model_index"], dtype=np.int64)
    score = np.asarray(columns["score"], dtype=float)
    is_self = np.asarray(columns["is_self"], dtype=bool)
    del columns  # the fetched originals, while the step-down holds its own arrays
    results = step_down_leniency(
        answer, session_index, reviewer, score, is_self, n_reviewers=len(kept_names)
    )
    return {kept_names[index]: result for index, result in enumerate(results)}


def reviewer_length_correlations(connection: duckdb.DuckDBPyConnection) -> dict[str, Interval]:
    """Each reviewer's own log-length/score correlation, pooled over sessions (Fisher z)."""
    rows = connection.execute(
        """SELECT reviewer_index, corr(score, ln(greatest(words, 1))) AS r, count(*) AS n
           FROM scored WHERE NOT is_self
           GROUP BY reviewer_index, session HAVING count(*) >= 3"""
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    index = np.asarray(rows["reviewer_index"])
    r = nullable_floats(rows["r"])
    n = np.asarray(rows["n"], dtype=float)
    return {
        names[int(i)]: Interval.from_estimate(
            fisher_z_pooled_correlation(r[index == i], n[index == i])
        )
        for i in np.unique(index)
    }


def reviewer_profiles(
    connection: duckdb.DuckDBPyConnection,
    *,
    forced_choice: bool | None = None,
    rank_reviewers: set[str] | None = None,
) -> list[ReviewerProfile]:
    """One profile per reviewer, sorted by leniency (harshest first).

    ``forced_choice`` is :func:`leniency_fixed_by_the_scale` and ``rank_reviewers``
    :func:`rank_point_reviewers` when the caller has them already. A rank-point
    reviewer's spread is labelled not identified: every complete ranking of N answers
    has the sd of 1..N, so its "spread" measures N, not the judge.
    """
    per_reviewer = connection.execute(
        # one pass over the records, grouped by review first: a session counts when the
        # reviewer scored something in it (a refused or failed review, ADR 0027, leaves null
        # records that must not raise its reliability tier), and the spread is the root mean
        # within-session score variance
        """WITH per_review AS (
               SELECT reviewer, count(score) AS n_scores, count(*) AS n_records,
                      sum(score) AS score_sum, var_samp(score) AS score_variance
               FROM records GROUP BY reviewer, session)
           SELECT reviewer, count(*) FILTER (WHERE n_scores > 0), sum(n_scores),
                  sum(n_records) - sum(n_scores), sum(score_sum) / nullif(sum(n_scores), 0),
                  sqrt(avg(score_variance))
           FROM per_review GROUP BY reviewer"""
    ).fetchall()
    counts = [row[:5] for row in per_reviewer]
    spreads = {row[0]: row[5] for row in per_reviewer}
    # on a forced-choice scale (pairwise 1/0/0.5) a reviewer's level is fixed by the scale:
    # nothing to estimate, and an estimate would only echo its self-reviews
    if rank_reviewers is None:
        rank_reviewers = rank_point_reviewers(connection)
    if forced_choice is None:
        forced_choice = leniency_fixed_by_the_scale(connection, rank_reviewers)
    leniency_identified = not forced_choice
    # in a store of scorers, a rank-point reviewer's level is on another scale
    leniencies = robust_leniencies(connection, rank_reviewers) if leniency_identified else {}
    material = material_leniency(connection)
    length_correlations = reviewer_length_correlations(connection)
    finite_spreads = [value for value in spreads.values() if value is not None]
    median_spread = float(np.median(finite_spreads)) if finite_spreads else float("nan")
    nan = float("nan")
    nan_interval = Interval(nan, nan, nan)

    profiles = []
    for reviewer, n_sessions, n_scores, n_missing, mean_score in counts:
        robust = leniencies.get(reviewer)
        estimate = robust.estimate if robust else mean_interval_from_moments(nan, nan, 0)
        leniency = Interval.from_estimate(estimate)
        z = (
            estimate.estimate / estimate.standard_error
            if estimate.standard_error and np.isfinite(estimate.standard_error)
            else float("nan")
        )
        spread = spreads.get(reviewer)
        spread_value = float("nan") if spread is None else float(spread)
        ratio = spread_value / median_spread if median_spread else float("nan")
        profiles.append(
            ReviewerProfile(
                reviewer=reviewer,
                n_sessions=int(n_sessions),
                n_scores=int(n_scores),
                n_missing_scores=int(n_missing),
                mean_score=float("nan") if mean_score is None else float(mean_score),
                leniency=leniency,
                leniency_z=float(z),
                leniency_label=(
                    _leniency_label(robust, material)
                    if robust
                    else "unknown"
                    if leniency_identified and reviewer not in rank_reviewers
                    else NOT_IDENTIFIED
                ),
                leniency_p_holm=robust.adjusted_p_value if robust else nan,
                in_leniency_reference=(
                    robust.in_reference
                    if robust
                    else not leniency_identified or reviewer not in rank_reviewers
                ),
                spread=spread_value,
                spread_ratio=float(ratio),
                spread_label=(
                    NOT_IDENTIFIED if reviewer in rank_reviewers else _spread_label(ratio)
                ),
                length_correlation=length_correlations.get(reviewer, nan_interval),
                reliability=reliability_tier(
                    estimate.n_clusters
                    if leniency_identified and reviewer not in rank_reviewers
                    else int(n_sessions)
                ),
            )
        )
    return sorted(
        profiles,
        key=lambda p: (not np.isfinite(p.leniency.estimate), p.leniency.estimate, p.reviewer),
    )
