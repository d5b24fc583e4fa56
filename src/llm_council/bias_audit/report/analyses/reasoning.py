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
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.bias_effects.reasoning_length import cluster_jackknife_slope
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


def reasoning_by_reviewer(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> list[ReviewerReasoning]:
    """The slope per reviewer from the ``scored`` and ``records`` tables."""
    rows = connection.execute(
        """SELECT s.reviewer, s.session, s.deviation, r.rationale_chars
           FROM scored s JOIN records r USING (session, reviewer, model)
           WHERE NOT s.is_self AND s.deviation IS NOT NULL AND r.rationale_chars > 0
           ORDER BY s.reviewer, s.session"""
    ).fetchnumpy()
    if len(rows["session"]) == 0:
        return []
    reviewer = np.asarray(rows["reviewer"], dtype=object)
    session = np.asarray(rows["session"], dtype=np.int64)
    deviation = nullable_floats(rows["deviation"])
    chars = nullable_floats(rows["rationale_chars"])
    estimates = []
    for name in sorted(set(reviewer.tolist())):
        mine = reviewer == name
        slope = cluster_jackknife_slope(np.log2(chars[mine]), deviation[mine], session[mine])
        estimates.append(
            (
                str(name),
                int(np.unique(session[mine]).size),
                int(mine.sum()),
                float(np.median(chars[mine])),
                slope,
            )
        )
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
