"""Anchoring per reviewer: does a score lean toward the scores the reviewer gave just before?

Two numbers per reviewer, both pooled over its reviews with sessions as clusters:

- ``design_correlation``: the design's definition, corr(display slot, score minus the
  running mean of the review's earlier scores). It is *not* anchoring alone: a position
  effect (primacy, recency) moves it just as much, because the deviation at a later slot
  carries that slot's bonus. Shown for comparison with the design.
- ``conditional``: the anchoring estimate proper, corr(x, y) within display slot, where for
  the answer at slot ``i`` of reviewer ``r``'s review

  - ``y_i`` = r's paired deviation on it (its score minus the other non-self reviewers'
    mean on the same answer), left out for r's own answer (self-review);
  - ``x_i`` = mean of ``c_j`` over the earlier slots ``j < i`` minus the mean of ``c_j``
    over every other slot ``j != i`` of the review, where ``c_j`` is the *consensus of the
    other reviewers* on answer ``j`` (the mean of the non-self reviewers other than r,
    i.e. score minus paired deviation).

  Both are centred within (reviewer, slot). ``x`` holds no score of r, so nothing of r's
  errors: under no anchoring r's error on answer ``i`` is independent of it. The others'
  session-level shift (their leniency that session, their drift) is in every ``c_j`` and
  cancels in the difference; answer ``i``'s consensus, whose noise ``y_i`` carries with a
  minus sign, is left out of both means; r's drift and leniency are in ``y`` only, and
  self-preference (r's or an author's) enters neither ``y`` (self cells left out) nor
  ``c`` (self reviews are never in a consensus). So conditional r is 0 without anchoring
  under drift, self-preference and the others' drift. An anchored judge is pulled toward
  its earlier scores, which track the earlier answers' quality, which ``c`` measures: r > 0.
  Flags use this one, Holm-corrected across reviewers.

  At the last slot the earlier slots *are* the rest, so ``x`` would be 0 by construction:
  those cells are left out. With two answers per review that leaves none: anchoring is then
  not identified (``identified`` False, estimate NaN, never a flag). The
  previous definition, x = the mean of r's own earlier scores, fired on every reviewer of
  pairwise forced-choice data (r near -0.7) and on drifting judges (see
  ``benchmarks/anchoring_confounds.py``).

The report computes both from per-session summaries (:class:`AnchoringSection`, ADR 0078),
finished once the reviewers whose level the scale fixes are known.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.anchoring_summary import (
    MAX_SLOTS as MAX_SLOTS,  # where amplification reads it
)
from llm_council.bias_audit.report.analyses.anchoring_summary import (
    AnchoringSummary,
    anchoring_from_payload,
    anchoring_payload,
    merge_anchoring,
    summarize_anchoring,
)
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.bias_effects.anchoring import cluster_jackknife_correlation
from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import IntervalEstimate

#: sessions with informative cells (2+ usable answers in one slot) the conditional test
#: needs: the delete-one-session jackknife of a correlation over few sessions rejected far
#: too often on null councils (3 members, 10 sessions, 4-6 informative: 3 of 120 tests
#: below p = 0.002, 0.24 expected; 9 members, 10 sessions: p = 1.3e-5 and 1.5e-4 among
#: 360 tests; ADR 0054). Below it the estimate is shown, untested.
MIN_INFORMATIVE_SESSIONS = 20

#: a jackknife interval narrower than this (in r) has collapsed to rounding error
_COLLAPSED_WIDTH = 1e-9


@dataclass(frozen=True)
class ReviewerAnchoring:
    """One reviewer's anchoring estimates (correlations, session-jackknife intervals)."""

    reviewer: str
    n_sessions: int
    design_correlation: Interval  # corr(slot, score - running mean): anchoring + position
    conditional: Interval  # corr(earlier minus rest of others' consensus, deviation | slot)
    holm_p: float  # conditional's p-value, Holm-adjusted across reviewers
    detected: bool
    identified: bool = True  # False when x is constant (e.g. two answers per review)


def _centred_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``values`` minus the mean of their group (NaN-aware); ``groups`` are small
    non-negative integers, counted directly (a NaN adds 0 to its group's sum, not a term)."""
    finite = np.isfinite(values)
    sums = np.bincount(groups, weights=np.where(finite, values, 0.0))
    counts = np.bincount(groups, weights=finite)
    with np.errstate(invalid="ignore", divide="ignore"):
        return values - (sums / counts)[groups]


def _reviews_by_reviewer(review_reviewer: np.ndarray) -> list[tuple[int, slice]]:
    """Each reviewer index with the slice of its reviews.

    Reviews are numbered in (reviewer, session) order, so ``review_reviewer`` is sorted and
    each reviewer's reviews are one block: slices are views, where a boolean mask per
    reviewer would copy every table.
    """
    starts = np.flatnonzero(np.diff(review_reviewer)) + 1
    bounds = [0, *starts.tolist(), len(review_reviewer)]
    return [
        (int(review_reviewer[start]), slice(start, stop))
        for start, stop in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def _conditional_correlation(
    earlier: np.ndarray,
    paired: np.ndarray,
    slot: np.ndarray,
    clusters: np.ndarray,
    identified: bool,
) -> IntervalEstimate:
    """The conditional r of one reviewer's ``[review, slot]`` cells, centred within slot.

    Not identified: every field NaN. Too few sessions for a jackknife, or an interval
    collapsed to rounding: the estimate without a test.
    """
    nan = float("nan")
    usable = np.isfinite(earlier) & np.isfinite(paired)
    n_slots = slot.shape[1]
    # integer group ids (unusable cells in group 0) so the grouping needs no sort
    slot_groups = np.where(usable, slot, -1.0).astype(np.int64) + 1
    # a cell alone in its slot is 0 after centring: it carries no information, and a
    # session holding only such cells must not count as a jackknife cluster (with 3
    # members most sessions have one; counted, they collapsed the interval to a point
    # and gave p ~ 1e-30 on null councils)
    in_group = np.bincount(slot_groups.ravel(), minlength=n_slots + 1)
    usable &= in_group[slot_groups] >= 2
    slot_groups = np.where(usable, slot_groups, 0)
    x = _centred_within(np.where(usable, earlier, np.nan).ravel(), slot_groups.ravel())
    conditional = cluster_jackknife_correlation(
        x,
        _centred_within(np.where(usable, paired, np.nan).ravel(), slot_groups.ravel()),
        clusters.ravel(),
    )
    # no slot with earlier answers *and* later ones (two answers a review): x is undefined
    if not identified:
        return IntervalEstimate(nan, nan, nan, nan, nan, conditional.n_clusters)
    if (
        conditional.n_clusters < MIN_INFORMATIVE_SESSIONS
        or not conditional.ci_high - conditional.ci_low > _COLLAPSED_WIDTH
    ):
        # too few sessions for a jackknife, or every leave-one-session-out r equal to
        # rounding: no test (estimate kept)
        return IntervalEstimate(conditional.estimate, nan, nan, nan, nan, conditional.n_clusters)
    return conditional


def _finished(
    summary: AnchoringSummary, significance_level: float, level_fixed: frozenset[str]
) -> list[ReviewerAnchoring]:
    """Both correlations per reviewer from the merged reviews (:func:`anchoring_by_reviewer`)."""
    if summary.review_reviewer.size == 0:
        return []
    n_slots = summary.running.shape[1]
    slot = np.broadcast_to(np.arange(n_slots, dtype=float), summary.running.shape)
    results = []
    for r, mine in _reviews_by_reviewer(summary.review_reviewer):
        # one review per (reviewer, session): the reviewer's sessions are its reviews
        n_sessions = mine.stop - mine.start
        clusters = np.broadcast_to(np.arange(n_sessions)[:, None], (n_sessions, n_slots))
        design = cluster_jackknife_correlation(slot[mine], summary.running[mine], clusters)
        usable = np.isfinite(summary.earlier[mine]) & np.isfinite(summary.paired[mine])
        # one usable answer a review at most (three answers shown: only the middle slot
        # has earlier answers and later ones) is not identified: there the conditional
        # test rejected far too often on null councils (simulator, 3 members, 30
        # sessions: 5 of 120 tests below p = 0.0014; ADR 0054)
        name = summary.reviewers[r]
        identified = bool(usable.sum(axis=1).max(initial=0) >= 2) and name not in level_fixed
        conditional = _conditional_correlation(
            summary.earlier[mine], summary.paired[mine], slot[mine], clusters, identified
        )
        results.append((name, n_sessions, design, conditional, identified))
    holm = holm_adjusted([c.p_value for _, _, _, c, _ in results])
    return [
        ReviewerAnchoring(
            reviewer=name,
            n_sessions=n_sessions,
            design_correlation=Interval.from_estimate(design),
            conditional=Interval.from_estimate(conditional),
            holm_p=float(adjusted),
            detected=bool(identified and np.isfinite(adjusted) and adjusted < significance_level),
            identified=identified,
        )
        for (name, n_sessions, design, conditional, identified), adjusted in zip(
            results, holm, strict=True
        )
    ]


class AnchoringSection:
    """:func:`anchoring_by_reviewer` as an incremental section whose finish needs the
    reviewers whose level the scale fixes (``level_fixed``, known after the profiles):
    a :class:`~.incremental_section.DependentSection` (ADR 0078)."""

    name = "anchoring"
    version = 1
    needs_inputs = True

    def __init__(self, significance_level: float = 0.05) -> None:
        self.significance_level = significance_level

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> AnchoringSummary:
        return summarize_anchoring(connection)

    def merge(self, saved: AnchoringSummary, new: AnchoringSummary) -> AnchoringSummary:
        return merge_anchoring(saved, new)

    def finish(
        self, summary: AnchoringSummary, *, level_fixed: frozenset[str] = frozenset()
    ) -> list[ReviewerAnchoring]:
        return _finished(summary, self.significance_level, level_fixed)

    def to_payload(self, summary: AnchoringSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return anchoring_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> AnchoringSummary:
        return anchoring_from_payload(meta, arrays)


def anchoring_by_reviewer(
    connection: duckdb.DuckDBPyConnection,
    significance_level: float = 0.05,
    level_fixed: frozenset[str] = frozenset(),
) -> list[ReviewerAnchoring]:
    """Both anchoring correlations per reviewer from the ``scored`` table (every session of
    ``connection``: :class:`AnchoringSection` with nothing saved).

    A reviewer none of whose reviews has two usable answers (three answers a review, or
    two) is not identified. ``level_fixed`` reviewers (rank points, or every reviewer on
    a forced-choice scale) are not identified either: each of their scores in a review is
    fixed by the others (the points add up to one total), so the paired deviation is tied
    to the consensus by construction. On rank-only null councils (3 members, fixed
    order, 100 sessions) the conditional test gave p < 0.001 in 3.3% of tests (ADR 0054).
    """
    section = AnchoringSection(significance_level)
    return section.finish(section.summarize(connection), level_fixed=level_fixed)
