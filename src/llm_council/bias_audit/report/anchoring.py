"""Anchoring per reviewer: does a score lean toward the scores the reviewer gave just before?

Two numbers per reviewer, both pooled over its reviews with sessions as clusters:

- ``design_correlation``: the design's definition, corr(display slot, score minus the
  running mean of the review's earlier scores). It is *not* anchoring alone: a position
  effect (primacy, recency) moves it just as much, because the deviation at a later slot
  carries that slot's bonus. Shown for comparison with the design.
- ``conditional``: the anchoring estimate proper, corr(previous-scores mean, paired
  deviation) within display slot. The paired deviation (score minus the other reviewers'
  mean on the same answer) removes the answer's quality; centring both variables within
  (reviewer, slot) removes slot effects and leniency. With no anchoring the earlier answers
  (other answers, shown in random order) say nothing about this reviewer's error on this
  one, so it is zero; an anchored judge, pulled toward its previous scores, makes it
  positive. Flags use this one, Holm-corrected across reviewers.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from llm_council.bias_audit.report.model import Interval
from llm_council.bias_audit.report.tables import dense_codes, nullable_floats
from llm_council.stats.anchoring import (
    cluster_jackknife_correlation,
    previous_scores_mean,
    running_mean_deviation,
)
from llm_council.stats.multiplicity import holm_adjusted

#: display slots at or beyond this (or beyond n_candidates) are malformed records: left out,
#: so one corrupt line cannot make the per-review arrays huge
MAX_SLOTS = 256


@dataclass(frozen=True)
class ReviewerAnchoring:
    """One reviewer's anchoring estimates (correlations, session-jackknife intervals)."""

    reviewer: str
    n_sessions: int
    design_correlation: Interval  # corr(slot, score - running mean): anchoring + position
    conditional: Interval  # corr(earlier scores' mean, paired deviation | slot)
    holm_p: float  # conditional's p-value, Holm-adjusted across reviewers
    detected: bool


def _centred_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``values`` minus the mean of their group (NaN-aware)."""
    finite = np.isfinite(values)
    _, index = dense_codes(groups)
    sums = np.bincount(index[finite], weights=values[finite], minlength=index.max() + 1)
    counts = np.bincount(index[finite], minlength=index.max() + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return values - (sums / counts)[index]


def anchoring_by_reviewer(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> list[ReviewerAnchoring]:
    """Both anchoring correlations per reviewer from the ``scored`` table."""
    rows = connection.execute(
        f"""SELECT s.reviewer_index, s.session, s.position, s.score, s.deviation
           FROM scored s
           WHERE s.position >= 0 AND s.position < least(s.n_candidates, {MAX_SLOTS})"""
    ).fetchnumpy()
    names = dict(connection.execute("SELECT reviewer_index, reviewer FROM reviewers").fetchall())
    if len(rows["session"]) == 0:
        return []
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    session = np.asarray(rows["session"], dtype=np.int64)
    position = np.asarray(rows["position"], dtype=np.int64)
    score = nullable_floats(rows["score"])
    deviation = nullable_floats(rows["deviation"])
    n_slots = int(position.max()) + 1
    review_key = reviewer * (int(session.max()) + 1) + session
    _, review = dense_codes(review_key)
    n_reviews = int(review.max()) + 1
    in_order = np.full((n_reviews, n_slots), np.nan)
    paired = np.full((n_reviews, n_slots), np.nan)
    in_order[review, position] = score
    paired[review, position] = deviation
    review_reviewer = np.zeros(n_reviews, dtype=np.int64)
    review_session = np.zeros(n_reviews, dtype=np.int64)
    review_reviewer[review] = reviewer
    review_session[review] = session
    slot = np.broadcast_to(np.arange(n_slots, dtype=float), in_order.shape)
    running = running_mean_deviation(in_order)
    earlier = previous_scores_mean(in_order)

    results = []
    for r in np.unique(review_reviewer).tolist():
        mine = review_reviewer == r
        clusters = np.broadcast_to(review_session[mine][:, None], (int(mine.sum()), n_slots))
        design = cluster_jackknife_correlation(slot[mine], running[mine], clusters)
        usable = np.isfinite(earlier[mine]) & np.isfinite(paired[mine])
        # integer group ids (unusable cells in group 0) so the grouping needs no sort
        slot_groups = np.where(usable, slot[mine], -1.0).astype(np.int64) + 1
        conditional = cluster_jackknife_correlation(
            _centred_within(np.where(usable, earlier[mine], np.nan).ravel(), slot_groups.ravel()),
            _centred_within(np.where(usable, paired[mine], np.nan).ravel(), slot_groups.ravel()),
            clusters.ravel(),
        )
        results.append((names[r], int(np.unique(review_session[mine]).size), design, conditional))
    holm = holm_adjusted([c.p_value for _, _, _, c in results])
    return [
        ReviewerAnchoring(
            reviewer=name,
            n_sessions=n_sessions,
            design_correlation=Interval.from_estimate(design),
            conditional=Interval.from_estimate(conditional),
            holm_p=float(adjusted),
            detected=bool(np.isfinite(adjusted) and adjusted < significance_level),
        )
        for (name, n_sessions, design, conditional), adjusted in zip(results, holm, strict=True)
    ]
