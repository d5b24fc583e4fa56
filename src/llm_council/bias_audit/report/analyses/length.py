"""Pooled length bias: does a longer answer get a higher score, across sessions?

Each session gives one correlation between ln(words) and the reviewer-centred score (the
score minus that reviewer's mean in the session, so reviewer leniency adds no noise). The
sessions' correlations are pooled on Fisher's z scale with a between-session variance, so
the interval counts sessions, not records: an answer's length repeats once per reviewer,
and an interval built from the record count is far too narrow (see docs/bias-report.md).
"""

from __future__ import annotations

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval, LengthBias
from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.inference.pooling import fisher_z_interval, fisher_z_pooled_correlation

_SCATTER_SAMPLE = 1500
_SAMPLE_SEED = 7


def pooled_length_bias(connection: duckdb.DuckDBPyConnection) -> LengthBias | None:
    """The pooled within-session correlation, the naive record-level one, and plot data."""
    per_session = connection.execute(
        # integer indices, not the id strings: the window and the distinct count hash less
        """WITH centred AS (
               SELECT session, model_index, ln(greatest(words, 1)) AS log_words,
                      score - avg(score) OVER (PARTITION BY session, reviewer_index)
                          AS centred_score
               FROM scored WHERE NOT is_self)
           SELECT corr(centred_score, log_words) AS r, count(DISTINCT model_index) AS n_answers
           FROM centred GROUP BY session HAVING count(DISTINCT model_index) >= 3"""
    ).fetchnumpy()
    r = nullable_floats(per_session["r"])
    weights = np.asarray(per_session["n_answers"], dtype=float)
    pooled = fisher_z_pooled_correlation(r, weights)
    overall = connection.execute(
        """SELECT corr(score, ln(greatest(words, 1))), count(*),
                  regr_intercept(score, ln(greatest(words, 1))),
                  regr_slope(score, ln(greatest(words, 1)))
           FROM scored WHERE NOT is_self"""
    ).fetchone()
    if overall is None or overall[1] == 0:
        return None
    record_r, n_records, intercept, slope = overall
    record_r = float("nan") if record_r is None else float(record_r)
    # the plot's points: the scored cells first in a hash order of their keys, so the same
    # store gives the same points in the same order on every run and every engine (a
    # reservoir sample under DuckDB's parallel scan did neither, and could come back short)
    sample = connection.execute(
        f"""SELECT words, score FROM scored WHERE NOT is_self
            ORDER BY hash(session, reviewer_index, model_index, {_SAMPLE_SEED}),
                     session, reviewer_index, model_index
            LIMIT {_SCATTER_SAMPLE}"""
    ).fetchall()
    return LengthBias(
        pooled=Interval.from_estimate(pooled),
        n_sessions=pooled.n_clusters,
        n_records=int(n_records),
        record_level_r=record_r,
        record_level_ci=fisher_z_interval(record_r, int(n_records)),
        fitted_intercept=float("nan") if intercept is None else float(intercept),
        fitted_slope=float("nan") if slope is None else float(slope),
        sample_words=[float(words) for words, _ in sample],
        sample_scores=[float(score) for _, score in sample],
    )
