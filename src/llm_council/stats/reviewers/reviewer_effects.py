"""Each reviewer's leniency, slot effects and length slope from past scores, shrunk.

The additive model (self-scores left out):

.. math::

    y_{i} = a_{k(i)} + \\beta_{r(i), p(i)} + \\gamma_{r(i)} x_i + \\varepsilon_i

with :math:`a_k` one effect per answer (a session's candidate: its quality as the
reviewers see it on average), :math:`\\beta_{r,p}` reviewer :math:`r`'s mean offset at
display slot :math:`p`, :math:`\\gamma_r` its slope on :math:`x`, the answer's centred
``log2`` length. It is fitted by backfitting (Hastie & Tibshirani 1990, ch. 4): the answer
effects are the mean residual of their scores, each reviewer's coefficients the least
squares fit of its scores minus the answer effects, in turn until nothing moves. Answers
scored by one reviewer only carry no information about reviewers and are left out.

Only differences between reviewers are identified (a bias every reviewer shares is
indistinguishable from the answers' quality), so the leniencies
:math:`\\lambda_r = \\frac{1}{S_r}\\sum_p \\beta_{r,p}` (over the :math:`S_r` slots it
was seen at) and the slopes are centred on their mean over reviewers; the slot effects
are :math:`s_{r,p} = \\beta_{r,p} - \\lambda_r`.

Every estimate :math:`\\hat\\theta` with standard error :math:`se` is then shrunk by the
positive-part James-Stein factor :math:`\\max(0, 1 - se^2/\\hat\\theta^2)` (Efron & Morris
1973): an estimate within its noise is mostly removed, so correcting an unbiased judge
costs little; one many standard errors out is kept almost whole. The standard errors are
the least squares ones of each reviewer's fit, its residual variance inflated by
:math:`n / (n - K)` for the :math:`K` answer effects fitted beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_MAX_ITERATIONS = 200
#: display slots beyond this are not fitted (no council has that many members; a corrupt
#: or hostile store's position of 10**9 must not allocate gigabytes)
MAX_SLOTS = 64
#: backfitting stops when no fitted value moves by more than this many points
_TOLERANCE = 1e-7


@dataclass(frozen=True)
class ReviewerEffects:
    """One reviewer's shrunk effects (points) and the scores behind them."""

    leniency: float
    slot_effects: tuple[float, ...]  # per display slot; 0 where never seen
    length_slope: float  # points per doubling of the answer's characters
    n_scores: int


def james_stein_factor(estimate: np.ndarray, standard_error: np.ndarray) -> np.ndarray:
    """:math:`\\max(0, 1 - se^2/\\hat\\theta^2)`, 0 where the estimate is 0 or not finite."""
    estimate = np.asarray(estimate, dtype=float)
    se2 = np.asarray(standard_error, dtype=float) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = 1.0 - se2 / estimate**2
    return np.where(np.isfinite(factor), np.clip(factor, 0.0, 1.0), 0.0)


def _design(slot: np.ndarray, x: np.ndarray, n_slots: int) -> tuple[np.ndarray, np.ndarray]:
    seen = np.flatnonzero(np.bincount(slot, minlength=n_slots) > 0)
    columns = [(slot == p).astype(float) for p in seen]
    columns.append(x)
    return np.column_stack(columns), seen


def _answer_means(answer_code: np.ndarray, values: np.ndarray, answer_n: np.ndarray) -> np.ndarray:
    totals = np.bincount(answer_code, weights=values, minlength=answer_n.size).astype(float)
    return np.asarray(totals / np.maximum(answer_n, 1.0), dtype=float)


def fit_reviewer_effects(
    answer: np.ndarray,
    reviewer: np.ndarray,
    slot: np.ndarray,
    log2_length: np.ndarray,
    score: np.ndarray,
    n_reviewers: int,
    *,
    min_scores: int = 10,
) -> list[ReviewerEffects | None]:
    """The shrunk effects of reviewers ``0..n_reviewers-1`` (module docstring).

    One element per score: ``answer`` (integer id of the session's candidate answer),
    ``reviewer`` (integer id), ``slot`` (display index), ``log2_length`` (centred within its
    session) and ``score``; self-scores must already be left out. A reviewer with fewer than
    ``min_scores`` usable scores gets None. Non-finite scores, and slots outside
    ``0..MAX_SLOTS-1``, are dropped.

    Parameters
    ----------
    answer, reviewer, slot : ndarray of int, shape (n,)
        Each score's answer id, reviewer index and display slot.
    log2_length : ndarray, shape (n,)
        log2 of the answer's length, centred within its session.
    score : ndarray, shape (n,)
        The scores.
    n_reviewers : int
        R.
    min_scores : int
        Fewest usable scores for a reviewer to get effects.

    Returns
    -------
    list of ReviewerEffects or None, length R
        Leniency, per-slot effects, length slope and score count per reviewer.
    """
    keep = np.isfinite(score) & np.isfinite(log2_length) & (slot >= 0) & (slot < MAX_SLOTS)
    answer, reviewer, slot = answer[keep], reviewer[keep], slot[keep].astype(np.intp)
    x, y = log2_length[keep].astype(float), score[keep].astype(float)
    # answers scored by one reviewer only say nothing about reviewers
    _, answer_code, per_answer = np.unique(answer, return_inverse=True, return_counts=True)
    shared = per_answer[answer_code] >= 2
    answer_code, reviewer, slot, x, y = (
        array[shared] for array in (answer_code, reviewer, slot, x, y)
    )
    _, answer_code = np.unique(answer_code, return_inverse=True)
    n_answers = int(answer_code.max()) + 1 if answer_code.size else 0
    n_slots = int(slot.max()) + 1 if slot.size else 0
    counts = np.bincount(reviewer, minlength=n_reviewers)
    fitted_reviewers = [r for r in range(n_reviewers) if counts[r] >= min_scores]
    if not fitted_reviewers or n_answers == 0:
        return [None] * n_reviewers
    rows = {r: np.flatnonzero(reviewer == r) for r in fitted_reviewers}
    designs = {r: _design(slot[rows[r]], x[rows[r]], n_slots) for r in fitted_reviewers}
    in_fit = np.isin(reviewer, fitted_reviewers)
    answer_n = np.bincount(answer_code, minlength=n_answers).astype(float)
    fitted = np.zeros(y.size)
    coefficients: dict[int, np.ndarray] = {}
    # each reviewer's least squares solution is its design's pseudo-inverse times the
    # scores: computed once, each pass is then a product (the same numbers as lstsq)
    solvers = {r: np.linalg.pinv(designs[r][0]) for r in fitted_reviewers}
    for _ in range(_MAX_ITERATIONS):
        answer_effect = _answer_means(answer_code, y - fitted, answer_n)
        z = y - answer_effect[answer_code]
        previous = fitted.copy()
        for r in fitted_reviewers:
            coefficients[r] = solvers[r] @ z[rows[r]]
            fitted[rows[r]] = designs[r][0] @ coefficients[r]
        if np.max(np.abs(fitted - previous)) < _TOLERANCE:
            break
    answer_effect = _answer_means(answer_code, y - fitted, answer_n)
    residual = y - answer_effect[answer_code] - fitted
    n_used = int(in_fit.sum())
    inflation = n_used / max(n_used - n_answers, 1)
    fits: list[ReviewerFit | None] = [None] * n_reviewers
    for r in fitted_reviewers:
        design, seen = designs[r]
        n_r = rows[r].size
        rss = float(residual[rows[r]] @ residual[rows[r]])
        sigma2 = rss / max(n_r - design.shape[1], 1) * inflation
        fits[r] = ReviewerFit(
            coefficients=coefficients[r],
            covariance=sigma2 * np.linalg.pinv(design.T @ design),
            seen_slots=seen,
            n_scores=int(n_r),
        )
    return shrunk_effects(fits, n_slots)


@dataclass(frozen=True)
class ReviewerFit:
    """One reviewer's least squares coefficients before centring and shrinking.

    ``coefficients`` holds the offsets :math:`\\beta_{r,p}` at ``seen_slots`` (ascending)
    then the length slope; ``covariance`` is theirs (module docstring).
    """

    coefficients: np.ndarray
    covariance: np.ndarray
    seen_slots: np.ndarray
    n_scores: int


def shrunk_effects(
    fits: Sequence[ReviewerFit | None], n_slots: int
) -> list[ReviewerEffects | None]:
    """Leniencies, slot effects and slopes from each reviewer's fit, centred over the
    fitted reviewers and shrunk (module docstring); None stays None."""
    raw: dict[int, tuple[float, np.ndarray, float, float, np.ndarray, float]] = {}
    for r, fit in enumerate(fits):
        if fit is None:
            continue
        beta, covariance, k = fit.coefficients, fit.covariance, fit.coefficients.size
        n_seen = fit.seen_slots.size
        to_leniency = np.zeros(k)
        to_leniency[:n_seen] = 1.0 / n_seen
        leniency = float(to_leniency @ beta)
        leniency_se = float(np.sqrt(max(to_leniency @ covariance @ to_leniency, 0.0)))
        to_slots = np.zeros((n_seen, k))
        to_slots[:, :n_seen] = np.eye(n_seen) - 1.0 / n_seen
        slots = to_slots @ beta
        slots_se = np.sqrt(np.clip(np.diag(to_slots @ covariance @ to_slots.T), 0.0, None))
        slope, slope_se = float(beta[-1]), float(np.sqrt(max(covariance[-1, -1], 0.0)))
        raw[r] = (leniency, slots, slope, leniency_se, slots_se, slope_se)
    effects: list[ReviewerEffects | None] = [None] * len(fits)
    if not raw:
        return effects
    # only differences between reviewers are identified: centre before shrinking
    leniency_centre = float(np.mean([values[0] for values in raw.values()]))
    slope_centre = float(np.mean([values[2] for values in raw.values()]))
    for r, (leniency, slots, slope, leniency_se, slots_se, slope_se) in raw.items():
        leniency -= leniency_centre
        slope -= slope_centre
        shrunk_slots = slots * james_stein_factor(slots, slots_se)
        slot_effects = np.zeros(n_slots)
        slot_effects[fits[r].seen_slots] = shrunk_slots  # type: ignore[union-attr]
        leniency_factor = james_stein_factor(np.array(leniency), np.array(leniency_se))
        slope_factor = james_stein_factor(np.array(slope), np.array(slope_se))
        effects[r] = ReviewerEffects(
            leniency=float(leniency * leniency_factor),
            slot_effects=tuple(float(v) for v in slot_effects),
            length_slope=float(slope * slope_factor),
            n_scores=fits[r].n_scores,  # type: ignore[union-attr]
        )
    return effects
