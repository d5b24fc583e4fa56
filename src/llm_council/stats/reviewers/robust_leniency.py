"""Reviewer leniency against a reference one outlier cannot move (Holm step-down).

Leniency compares a reviewer's score with the *other* reviewers' mean on the same answer.
Against all the others, one harsh reviewer drags the reference down and makes every
neutral reviewer look generous: with five reviewers, one at -1.5 points, each neutral one
sits at +1.5/4 = +0.375 above "the others", easily significant over 150 sessions.

So the reference is cleaned in a step-down:

1. every reviewer in the reference set ``R`` (at first: all) is compared with the mean of
   the *other members of R* on the same answers; per session the paired deviations are
   averaged, and the mean over sessions gets a Student-t interval (sessions are the unit);
2. Holm's step-down adjusts the ``|R|`` p-values (family-wise error at ``alpha`` under any
   dependence, which matters: these contrasts are correlated by construction);
3. if Holm rejects anything, the reviewer with the largest ``|t|`` leaves ``R`` and is
   flagged, and the comparisons are redone against the smaller ``R``; otherwise stop.
   At most ``(n - 1) // 2`` reviewers ever leave, so the reference is always a majority
   of the council (a breakdown point of one half, like the median).

Every reviewer's reported leniency is then its mean deviation from the final reference
set (the reviewers that were never flagged; itself excluded). A reviewer is labelled when
it was flagged, or rejected by Holm in the last round. With no bias anywhere, some label
appears in a store with probability at most ``alpha`` (Holm's family-wise guarantee for
round 1; later rounds only run after a rejection). Holm (1979), "A simple sequentially
rejective multiple test procedure", Scand. J. Statist. 6(2); the outlier-removal idea is
the forward search / step-down of robust statistics (Hampel et al. 1986, ch. 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.pooling import IntervalEstimate, cluster_mean_interval


@dataclass(frozen=True)
class ReviewerLeniency:
    """One reviewer's offset from the robust reference, and the step-down's verdict."""

    estimate: IntervalEstimate  # mean paired deviation from the reference, t over sessions
    adjusted_p_value: float  # Holm-adjusted, in the round that decided this reviewer
    flagged: bool  # harsh or generous at family-wise level alpha
    in_reference: bool  # part of the final reference set


def paired_deviation_by_session(
    answer_index: ArrayLike,
    session_index: ArrayLike,
    reviewer_index: ArrayLike,
    score: ArrayLike,
    is_self: ArrayLike,
    reference: np.ndarray,
) -> np.ndarray:
    """``(n_reviewers, n_sessions)`` mean of score minus the reference's mean on that answer.

    The reference mean on an answer excludes the reviewer itself and every self-review;
    a reviewer's own-answer scores are not leniency and are left out. NaN where a reviewer
    has no comparable score in a session. ``reference`` is a boolean mask over reviewers.
    """
    answer = np.asarray(answer_index, dtype=np.int64)
    session = np.asarray(session_index, dtype=np.int64)
    reviewer = np.asarray(reviewer_index, dtype=np.int64)
    values = np.asarray(score, dtype=float)
    own = np.asarray(is_self, dtype=bool)
    n_reviewers = reference.size
    n_sessions = int(session.max()) + 1 if session.size else 0
    counts_in_reference = (~own) & reference[reviewer]
    n_answers = int(answer.max()) + 1 if answer.size else 0
    reference_sum = np.bincount(
        answer, weights=np.where(counts_in_reference, values, 0.0), minlength=n_answers
    )
    reference_n = np.bincount(
        answer, weights=counts_in_reference.astype(float), minlength=n_answers
    )
    other_sum = reference_sum[answer] - np.where(counts_in_reference, values, 0.0)
    other_n = reference_n[answer] - counts_in_reference
    usable = (~own) & (other_n >= 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        deviation = values - other_sum / other_n
    cell = reviewer[usable] * n_sessions + session[usable]
    sums = np.bincount(cell, weights=deviation[usable], minlength=n_reviewers * n_sessions)
    sizes = np.bincount(cell, minlength=n_reviewers * n_sessions)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(sizes > 0, sums / np.maximum(sizes, 1), np.nan)
    return means.reshape(n_reviewers, n_sessions)


def step_down_leniency(
    answer_index: ArrayLike,
    session_index: ArrayLike,
    reviewer_index: ArrayLike,
    score: ArrayLike,
    is_self: ArrayLike,
    n_reviewers: int,
    alpha: float = 0.05,
) -> list[ReviewerLeniency]:
    """Each reviewer's leniency against the step-down reference (see the module docstring).

    Arrays hold one scored record each; ``answer_index`` identifies (session, candidate)
    and must be nested in ``session_index``. Returns one entry per reviewer index.

    Parameters
    ----------
    answer_index, session_index, reviewer_index : array_like of int, shape (n,)
        Each scored record's answer, session and reviewer.
    score : array_like, shape (n,)
        The scores.
    is_self : array_like of bool, shape (n,)
        True where the reviewer scored its own answer.
    n_reviewers : int
        R.
    alpha : float
        Family-wise level of the Holm steps.

    Returns
    -------
    list of ReviewerLeniency, length R
        Each reviewer's deviation estimate with its interval, Holm-adjusted p-value,
        ``flagged`` and ``in_reference``.
    """
    args = (answer_index, session_index, reviewer_index, score, is_self)
    return step_down(
        lambda reference: _estimates(paired_deviation_by_session(*args, reference)),
        n_reviewers,
        alpha,
    )


def step_down(
    estimates_against: Callable[[np.ndarray], list[IntervalEstimate]],
    n_reviewers: int,
    alpha: float = 0.05,
) -> list[ReviewerLeniency]:
    """The Holm step-down of the module docstring, for any leniency estimator.

    ``estimates_against(reference)`` gives every reviewer's leniency against the reviewers
    of the boolean mask ``reference`` (itself excluded); the per-session means here,
    per reviewer-pair sums in :mod:`.pairwise_leniency`.
    """
    reference = np.ones(n_reviewers, dtype=bool)
    flagged = np.zeros(n_reviewers, dtype=bool)
    adjusted_at_decision = np.full(n_reviewers, np.nan)
    max_removed = (n_reviewers - 1) // 2
    while True:
        estimates = estimates_against(reference)
        p_members = np.array(
            [estimates[r].p_value if reference[r] else np.nan for r in range(n_reviewers)]
        )
        adjusted = holm_adjusted(p_members)
        adjusted_at_decision[reference] = adjusted[reference]
        rejected = reference & (adjusted < alpha)
        if not rejected.any() or int(flagged.sum()) >= max_removed:
            break
        t_abs = np.array(
            [
                abs(estimates[r].estimate / estimates[r].standard_error)
                if rejected[r] and estimates[r].standard_error > 0
                else (np.inf if rejected[r] else -1.0)
                for r in range(n_reviewers)
            ]
        )
        worst = int(np.argmax(t_abs))
        reference[worst] = False
        flagged[worst] = True
    labelled = flagged | rejected
    return [
        ReviewerLeniency(
            estimate=estimates[r],
            adjusted_p_value=float(adjusted_at_decision[r]),
            flagged=bool(labelled[r]),
            in_reference=bool(reference[r]),
        )
        for r in range(n_reviewers)
    ]


def _estimates(deviation_by_session: np.ndarray) -> list[IntervalEstimate]:
    return [cluster_mean_interval(row) for row in deviation_by_session]
