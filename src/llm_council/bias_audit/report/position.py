"""Position bias across sessions: scores by display slot and a within-reviewer test.

Each reviewer sees its own shuffled order, so position is randomised against answer
quality. The test uses the *within-reviewer deviation*: the paired deviation (score minus
the others' mean on the same answer, removing answer quality) centred on the reviewer's own
mean in the session (removing its leniency). Per session and slot these are averaged; the
slots' mean profile is tested for equality with Hotelling's T^2 over sessions (sessions
with the most common number of candidates), and the direction read from a per-session
linear trend over slots.
"""

from __future__ import annotations

import duckdb
import numpy as np

from llm_council.bias_audit.report.model import Interval, PositionBias
from llm_council.bias_audit.report.tables import nullable_floats
from llm_council.stats.pooling import hotelling_one_sample, mean_interval_from_moments


def _interval(mean: float | None, sd: float | None, n: int) -> Interval:
    nan = float("nan")
    return Interval.from_estimate(
        mean_interval_from_moments(nan if mean is None else mean, nan if sd is None else sd, n)
    )


def position_bias(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> PositionBias | None:
    """Mean score and within-reviewer deviation per slot, Hotelling test, trend direction."""
    connection.execute(
        """CREATE OR REPLACE TABLE slot_means AS
           WITH within AS (
               SELECT session, position, n_candidates, score,
                      deviation - avg(deviation) OVER (PARTITION BY session, reviewer) AS within
               FROM scored WHERE NOT is_self)
           SELECT session, position, any_value(n_candidates) AS n_candidates,
                  avg(score) AS mean_score, avg(within) AS mean_within
           FROM within GROUP BY session, position"""
    )
    per_slot = connection.execute(
        """SELECT position, count(*), avg(mean_score), stddev_samp(mean_score),
                  avg(mean_within), stddev_samp(mean_within)
           FROM slot_means GROUP BY position ORDER BY position"""
    ).fetchall()
    if not per_slot:
        return None
    mode_row = connection.execute(
        """SELECT n_candidates FROM slot_means GROUP BY n_candidates
           ORDER BY count(DISTINCT session) DESC, n_candidates DESC LIMIT 1"""
    ).fetchone()
    n_candidates = int(mode_row[0]) if mode_row and mode_row[0] is not None else 0
    vectors = connection.execute(
        """SELECT session, position, mean_within FROM slot_means
           WHERE n_candidates = ? ORDER BY session, position""",
        [n_candidates],
    ).fetchnumpy()
    sessions = np.asarray(vectors["session"])
    slots = np.asarray(vectors["position"])
    values = nullable_floats(vectors["mean_within"])
    if sessions.size and n_candidates >= 2:
        _, session_row = np.unique(sessions, return_inverse=True)
        matrix = np.full((int(session_row.max()) + 1, n_candidates), np.nan)
        in_range = slots < n_candidates
        matrix[session_row[in_range], slots[in_range]] = values[in_range]
        # profile test: every slot equals the last one (contrasts need no sum constraint)
        test = hotelling_one_sample(matrix[:, :-1] - matrix[:, -1:])
    else:
        test = hotelling_one_sample(np.empty((0, 1)))
    trend_row = connection.execute(
        """WITH per_session AS (
               SELECT session, regr_slope(mean_within, position) AS slope
               FROM slot_means GROUP BY session)
           SELECT avg(slope), stddev_samp(slope), count(slope) FROM per_session"""
    ).fetchone()
    assert trend_row is not None
    trend = _interval(trend_row[0], trend_row[1], int(trend_row[2]))
    if np.isfinite(test.p_value) and test.p_value < significance_level:
        if trend.ci_high < 0:
            direction = "primacy"
        elif trend.ci_low > 0:
            direction = "recency"
        else:
            direction = "non-monotone"
    else:
        direction = "none detected"
    return PositionBias(
        positions=[int(row[0]) for row in per_slot],
        mean_score=[_interval(row[2], row[3], int(row[1])) for row in per_slot],
        deviation=[_interval(row[4], row[5], int(row[1])) for row in per_slot],
        n_sessions=[int(row[1]) for row in per_slot],
        test_n_candidates=n_candidates,
        test_statistic=test.f_statistic,
        test_df=(test.df_numerator, test.df_denominator),
        test_p_value=test.p_value,
        trend=trend,
        direction=direction,
        significance_level=significance_level,
    )
