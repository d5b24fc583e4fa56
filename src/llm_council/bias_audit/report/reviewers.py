"""Reviewer profiles (leniency, spread, reliability) and per-reviewer self-preference.

Leniency is the mean paired deviation (score minus the other reviewers' mean on the same
answer), first averaged within each session, then across sessions: sessions are the unit,
so the interval is a t interval over session means. A reviewer is labelled harsh or
generous only when that 95% interval excludes zero, which fires in 5% of reviewers when
nothing is there (shown in tests/bias_audit/report/test_calibration.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import numpy as np

from llm_council.bias_audit.report.model import (
    Interval,
    JointEffect,
    ReviewerProfile,
    SelfPreference,
    reliability_tier,
)
from llm_council.bias_audit.report.tables import nullable_floats
from llm_council.stats.pooling import fisher_z_pooled_correlation, mean_interval_from_moments

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


def _leniency_label(leniency: Interval) -> str:
    if not np.isfinite(leniency.ci_low):
        return "unknown"
    if leniency.ci_high < 0:
        return "harsh"
    if leniency.ci_low > 0:
        return "generous"
    return "neutral"


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


def reviewer_profiles(connection: duckdb.DuckDBPyConnection) -> list[ReviewerProfile]:
    """One profile per reviewer, sorted by leniency (harshest first)."""
    counts = connection.execute(
        """SELECT reviewer, count(DISTINCT session), count(score), count(*) - count(score),
                  avg(score)
           FROM records GROUP BY reviewer"""
    ).fetchall()
    moments = {
        row[0]: row[1:]
        for row in connection.execute(
            """WITH per_session AS (
                   SELECT reviewer, session,
                          avg(deviation) FILTER (WHERE NOT is_self) AS leniency,
                          var_samp(score) AS score_variance
                   FROM scored GROUP BY reviewer, session)
               SELECT reviewer, count(leniency), avg(leniency), stddev_samp(leniency),
                      sqrt(avg(score_variance))
               FROM per_session GROUP BY reviewer"""
        ).fetchall()
    }
    length_correlations = reviewer_length_correlations(connection)
    spreads = {reviewer: values[3] for reviewer, values in moments.items()}
    finite_spreads = [value for value in spreads.values() if value is not None]
    median_spread = float(np.median(finite_spreads)) if finite_spreads else float("nan")
    nan_interval = Interval(float("nan"), float("nan"), float("nan"))

    profiles = []
    for reviewer, n_sessions, n_scores, n_missing, mean_score in counts:
        n_paired, mean_dev, sd_dev, spread = moments.get(reviewer, (0, None, None, None))
        estimate = mean_interval_from_moments(
            float("nan") if mean_dev is None else mean_dev,
            float("nan") if sd_dev is None else sd_dev,
            int(n_paired),
        )
        leniency = Interval.from_estimate(estimate)
        z = (
            estimate.estimate / estimate.standard_error
            if estimate.standard_error and np.isfinite(estimate.standard_error)
            else float("nan")
        )
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
                leniency_label=_leniency_label(leniency),
                spread=spread_value,
                spread_ratio=float(ratio),
                spread_label=_spread_label(ratio),
                length_correlation=length_correlations.get(reviewer, nan_interval),
                reliability=reliability_tier(int(n_paired)),
            )
        )
    return sorted(
        profiles,
        key=lambda p: (not np.isfinite(p.leniency.estimate), p.leniency.estimate, p.reviewer),
    )


def self_preferences(
    connection: duckdb.DuckDBPyConnection, joint_effects: Sequence[JointEffect]
) -> list[SelfPreference]:
    """Each self-reviewing reviewer's bonus to its own answer.

    ``raw`` is the simple paired contrast per session (own score minus the others' mean on
    its answer; t interval over sessions): it still contains the reviewer's leniency and,
    since an author's own answer has its own typical length, its taste for length.
    ``adjusted`` is the joint model's per-reviewer self-review term, which holds leniency,
    position and differential verbosity fixed; ``detected`` reads the adjusted interval.
    """
    adjusted_by_reviewer = {
        effect.term: Interval(effect.estimate, effect.ci_low, effect.ci_high)
        for effect in joint_effects
        if effect.group == "self_review"
    }
    rows = connection.execute(
        """SELECT reviewer, count(deviation), avg(deviation), stddev_samp(deviation)
           FROM scored WHERE is_self
           GROUP BY reviewer ORDER BY reviewer"""
    ).fetchall()
    nan = float("nan")
    results = []
    for reviewer, n_sessions, mean_raw, sd_raw in rows:
        raw = Interval.from_estimate(
            mean_interval_from_moments(
                nan if mean_raw is None else mean_raw, nan if sd_raw is None else sd_raw, n_sessions
            )
        )
        adjusted = adjusted_by_reviewer.get(reviewer, Interval(nan, nan, nan))
        results.append(
            SelfPreference(
                reviewer=reviewer,
                n_sessions=int(n_sessions),
                adjusted=adjusted,
                raw=raw,
                detected=adjusted.excludes_zero(),
            )
        )
    return results
