r"""Reviewer leniency from per reviewer-pair sums, mergeable across sessions (ADR 0079).

The step-down of :mod:`.robust_leniency` compares a reviewer with a reference set that
changes between rounds, so a per-session summary of "the deviation from the reference"
would have to be recomputed for every set. Instead, each session gives every pair of
reviewers one paired difference, and everything else is sums over sessions whose size is
fixed by the council (``R^3`` numbers), not by the sessions:

* :math:`D_{rj,s}`: the mean over the answers of session *s* that both *r* and *j* scored
  (neither scoring its own) of :math:`x_{ra} - x_{ja}`;
* :math:`L_{rj} = \frac{1}{n_{rj}} \sum_s D_{rj,s}` over the :math:`n_{rj}` sessions where
  the pair met;
* the leniency of *r* against a reference set *R* is the mean of :math:`L_{rj}` over the
  *J* members :math:`j \in R \setminus \{r\}` that *r* ever met:
  :math:`\hat\ell_r = \frac1J \sum_j L_{rj}`.

Its variance is the session-clustered (CR1) sandwich of that linear estimator: with
:math:`u_s = \sum_j w_j (D_{rj,s} - L_{rj})` over the pairs defined in *s* and
:math:`w_j = 1/(J\, n_{rj})`,

.. math::

    \widehat V = \frac{G}{G-1} \sum_s u_s^2
    = \frac{G}{G-1} \sum_{j,k} w_j w_k \big[P_{jk} - L_k S_{jk} - L_j S_{kj}
      + L_j L_k N_{jk}\big],

with :math:`P_{jk} = \sum D_{rj,s} D_{rk,s}`, :math:`S_{jk} = \sum D_{rj,s}`,
:math:`N_{jk}` the count, all over the sessions where both pairs met, and *G* the sessions
where *r* met anyone; the interval is Student-t on ``G - 1`` degrees of freedom (Cameron &
Miller 2015, "A practitioner's guide to cluster-robust inference", J. Human Resources
50(2), eq. 11). When every reviewer scores every answer of every session (no self-reviews,
no missing cells), :math:`\hat\ell_r` is the mean over sessions of the per-session mean
deviation from the reference and :math:`\widehat V = s^2/G`: the one-sample t interval of
:func:`~llm_council.stats.inference.pooling.cluster_mean_interval`, the definition of
:mod:`.robust_leniency`. With self-reviews or missing cells the weights differ: each pair
counts once, however many answers it shared (ADR 0079 measures how far).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from llm_council.stats.inference.pooling import IntervalEstimate, mean_interval_from_moments
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf
from llm_council.stats.numerics.double_double_sums import add_double_double, double_double_sum
from llm_council.stats.reviewers.robust_leniency import ReviewerLeniency, step_down

#: a clustered variance this small relative to its largest term is rounding of a zero
#: (a judge whose deviation never varies): the expansion above cancels to ~1e-16, not 0
_ROUNDING_SHARE = 1e-12


@dataclass(frozen=True)
class PairDeviationSums:
    r"""The sums of the module docstring over a set of sessions, for ``R`` reviewers.

    ``cross[r, j, k]`` = :math:`\sum D_{rj,s} D_{rk,s}`, ``first[r, j, k]`` =
    :math:`\sum D_{rj,s}` and ``both[r, j, k]`` the count, each over the sessions where
    *r* met both *j* and *k* (so ``first[r, j, j]`` sums :math:`D_{rj,s}` over the
    ``both[r, j, j]`` sessions where *r* met *j*); ``sessions[r]`` counts the sessions
    where *r* met anyone. The float sums are double-doubles (``cross + cross_lo``,
    :mod:`~llm_council.stats.numerics.double_double_sums`), so adding the sums of two sets
    of sessions gives the bits of summing them together.
    """

    cross: np.ndarray  # (R, R, R) float, the rounded sum
    first: np.ndarray  # (R, R, R) float, the rounded sum
    both: np.ndarray  # (R, R, R) int64
    sessions: np.ndarray  # (R,) int64
    cross_lo: np.ndarray  # (R, R, R) float, the double-double's low part
    first_lo: np.ndarray  # (R, R, R) float

    @classmethod
    def empty(cls, n_reviewers: int) -> PairDeviationSums:
        shape = (n_reviewers,) * 3
        return cls(
            np.zeros(shape),
            np.zeros(shape),
            np.zeros(shape, dtype=np.int64),
            np.zeros(n_reviewers, dtype=np.int64),
            np.zeros(shape),
            np.zeros(shape),
        )

    def __add__(self, other: PairDeviationSums) -> PairDeviationSums:
        cross, cross_lo = add_double_double(self.cross, self.cross_lo, other.cross, other.cross_lo)
        first, first_lo = add_double_double(self.first, self.first_lo, other.first, other.first_lo)
        return PairDeviationSums(
            cross,
            first,
            self.both + other.both,
            self.sessions + other.sessions,
            cross_lo,
            first_lo,
        )

    def take(self, keep: np.ndarray) -> PairDeviationSums:
        """The sums of the reviewers at the indices ``keep`` only (pairs among them)."""
        grid = np.ix_(keep, keep, keep)
        return PairDeviationSums(
            self.cross[grid],
            self.first[grid],
            self.both[grid],
            self.sessions[keep],
            self.cross_lo[grid],
            self.first_lo[grid],
        )


def session_pair_deviations(scores: np.ndarray) -> np.ndarray:
    """``(S, R, R)`` :math:`D_{rj,s}` from a ``(S, R, A)`` cube of scores, NaN where a
    reviewer did not score an answer (or scored its own: pass those as NaN). NaN where the
    pair shared no answer, and on the diagonal.

    Each element is a sum over the answers of its own session only, so a session's values
    do not depend on which other sessions share the cube.
    """
    scored = np.isfinite(scores)
    values = np.where(scored, scores, 0.0)
    mask = scored.astype(float)
    # sum over shared answers of x_r - x_j, elementwise (no BLAS: the same bits whatever S)
    shared = (mask[:, :, None, :] * mask[:, None, :, :]).sum(axis=-1)
    difference = (values[:, :, None, :] * mask[:, None, :, :]).sum(axis=-1) - (
        mask[:, :, None, :] * values[:, None, :, :]
    ).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        deviation = np.where(shared > 0, difference / np.maximum(shared, 1.0), np.nan)
    diagonal = np.arange(scores.shape[1])
    deviation[:, diagonal, diagonal] = np.nan
    return deviation


def pair_deviation_sums(scores: np.ndarray) -> PairDeviationSums:
    """The :class:`PairDeviationSums` of the sessions of a ``(S, R, A)`` score cube."""
    deviation = session_pair_deviations(scores)
    met = np.isfinite(deviation)
    d = np.where(met, deviation, 0.0)
    m = met.astype(float)
    cross, cross_lo = double_double_sum(d[:, :, :, None] * d[:, :, None, :])
    first, first_lo = double_double_sum(d[:, :, :, None] * m[:, :, None, :])
    return PairDeviationSums(
        cross=cross,
        first=first,
        both=(met[:, :, :, None] & met[:, :, None, :]).sum(axis=0).astype(np.int64),
        sessions=met.any(axis=2).sum(axis=0).astype(np.int64),
        cross_lo=cross_lo,
        first_lo=first_lo,
    )


def leniency_from_pair_sums(
    sums: PairDeviationSums, reviewer: int, reference: np.ndarray, confidence: float = 0.95
) -> IntervalEstimate:
    r""":math:`\hat\ell_r` against the boolean mask ``reference`` with its CR1 t interval
    (module docstring); NaN with fewer than two sessions or no reference member met."""
    others = np.flatnonzero(reference)
    others = others[others != reviewer]
    others = others[sums.both[reviewer, others, others] > 0]
    n_sessions = int(sums.sessions[reviewer])
    if others.size == 0 or n_sessions < 2:
        return mean_interval_from_moments(float("nan"), float("nan"), n_sessions)
    grid = np.ix_(others, others)
    n_pair = sums.both[reviewer, others, others].astype(float)
    pair_mean = sums.first[reviewer, others, others] / n_pair
    estimate = float(pair_mean.mean())
    weight = 1.0 / (others.size * n_pair)
    first = sums.first[reviewer][grid]
    terms = (
        sums.cross[reviewer][grid]
        - first * pair_mean[None, :]
        - first.T * pair_mean[:, None]
        + np.outer(pair_mean, pair_mean) * sums.both[reviewer][grid]
    )
    weights = np.outer(weight, weight)
    meat = float((weights * terms).sum())
    scale = float(np.abs(weights * sums.cross[reviewer][grid]).sum())
    if meat <= _ROUNDING_SHARE * scale:
        meat = 0.0
    se = float(np.sqrt(n_sessions / (n_sessions - 1) * meat))
    if se == 0.0:
        p_value = 0.0 if estimate != 0 else 1.0
        return IntervalEstimate(estimate, estimate, estimate, 0.0, p_value, n_sessions)
    t_crit = float(t_ppf(0.5 + confidence / 2, n_sessions - 1))
    p_value = float(2 * t_sf(abs(estimate / se), n_sessions - 1))
    return IntervalEstimate(
        estimate, estimate - t_crit * se, estimate + t_crit * se, se, p_value, n_sessions
    )


def step_down_pair_leniency(sums: PairDeviationSums, alpha: float = 0.05) -> list[ReviewerLeniency]:
    """Each reviewer's leniency against the Holm step-down reference of
    :mod:`.robust_leniency`, every estimate from the pair sums (one per reviewer index)."""
    n_reviewers = int(sums.sessions.size)
    return step_down(
        lambda reference: [leniency_from_pair_sums(sums, r, reference) for r in range(n_reviewers)],
        n_reviewers,
        alpha,
    )
