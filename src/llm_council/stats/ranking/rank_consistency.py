"""Score/rank mismatch within one review, and rates pooled over sessions as clusters.

A reviewer that both ranks and scores the answers it was shown contradicts itself on a
pair ``(i, j)`` when it ranks ``i`` above ``j`` but scores ``i`` strictly lower. Pairs
with equal scores are not contradictions (a tie in score says nothing about the order),
and pairs where either answer lacks a score or a rank are not comparable. The mismatch
rate of a reviewer is its discordant pairs over its comparable pairs (ADR 0027).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.inference.pooling import IntervalEstimate
from llm_council.stats.inference.proportions import wilson_interval
from llm_council.stats.numerics.distribution_functions import t_ppf


@dataclass(frozen=True)
class PairCounts:
    """Comparable and discordant pairs of one review."""

    comparable: int  # both scored and ranked, scores differ
    discordant: int  # of those, ranked above but scored strictly lower


def score_rank_discordance(scores: ArrayLike, ranks: ArrayLike) -> PairCounts:
    """Count comparable and discordant pairs of one review.

    ``scores[i]`` (NaN = none) and ``ranks[i]`` (1 = best; NaN or 0 = unranked) of the
    answers one reviewer was shown. A pair is comparable when both answers carry a score
    and a rank, the scores differ and the ranks differ; it is discordant when the better
    rank carries the lower score.

    Parameters
    ----------
    scores : array_like, shape (n,)
        The review's score of each answer shown, NaN for none.
    ranks : array_like, shape (n,)
        Its rank of each answer (1 = best), NaN or 0 for unranked.

    Returns
    -------
    PairCounts
        ``comparable`` and ``discordant`` pair counts.
    """
    # plain floats: a review has a handful of answers, where numpy's per-call cost on
    # n x n gap tables was most of the time; None converts to NaN as numpy converts it
    score_list = np.asarray(scores, dtype=float).tolist()
    rank_list = np.asarray(ranks, dtype=float).tolist()
    usable = [
        (score, rank)
        for score, rank in zip(score_list, rank_list, strict=True)
        if math.isfinite(score) and math.isfinite(rank) and rank > 0
    ]
    comparable = discordant = 0
    for index, (score_i, rank_i) in enumerate(usable):
        for score_j, rank_j in usable[index + 1 :]:
            score_gap, rank_gap = score_i - score_j, rank_i - rank_j
            if score_gap != 0 and rank_gap != 0:
                comparable += 1
                # the smaller rank number (better) with the smaller score, or vice versa
                discordant += (score_gap > 0) == (rank_gap > 0)
    return PairCounts(comparable, discordant)


@dataclass(frozen=True)
class ClusterSums:
    """Integer sums over clusters (sessions) of events ``y_c`` and trials ``n_c``, clusters
    with no trial left out: what :func:`clustered_rate_from_sums` needs. Sums over
    disjoint sets of clusters add, field by field, exactly."""

    clusters: int  # C, clusters with n_c > 0
    events: int  # sum y_c
    trials: int  # sum n_c
    events_sq: int  # sum y_c^2
    cross: int  # sum y_c n_c
    trials_sq: int  # sum n_c^2

    @classmethod
    def of(cls, events: ArrayLike, trials: ArrayLike) -> ClusterSums:
        """The sums of whole-number ``events`` and ``trials`` per cluster (int64)."""
        y = np.asarray(events, dtype=np.int64).ravel()
        n = np.asarray(trials, dtype=np.int64).ravel()
        keep = n > 0
        y, n = y[keep], n[keep]
        return cls(
            int(y.size),
            int(y.sum()),
            int(n.sum()),
            int(np.dot(y, y)),
            int(np.dot(y, n)),
            int(np.dot(n, n)),
        )


def clustered_rate_from_sums(sums: ClusterSums, confidence: float = 0.95) -> IntervalEstimate:
    r""":func:`clustered_rate` from the clusters' integer sums alone.

    With :math:`Y = \sum_c y_c`, :math:`N = \sum_c n_c` and :math:`R = Y / N`,

    .. math::

        \sum_c (y_c - R\,n_c)^2
            = \frac{N^2 \sum_c y_c^2 - 2 N Y \sum_c y_c n_c + Y^2 \sum_c n_c^2}{N^2},

    (expand the square and multiply by :math:`N^2`; a hand derivation). The numerator is
    computed in exact integer arithmetic, so the interval is the same as
    :func:`clustered_rate`'s up to the last digits of its floating sum (tested to 1e-12),
    and ``se = 0`` (every cluster's rate equal: Wilson's interval) is decided exactly.
    Sums of disjoint clusters add, so the rate of a grown store needs no per-session rows.
    """
    nan = float("nan")
    if sums.clusters == 0:
        return IntervalEstimate(nan, nan, nan, nan, nan, 0)
    total_y, total_n = int(sums.events), int(sums.trials)
    rate = total_y / total_n
    if sums.clusters < 2:
        return IntervalEstimate(rate, nan, nan, nan, nan, sums.clusters)
    numerator = (
        total_n * total_n * int(sums.events_sq)
        - 2 * total_n * total_y * int(sums.cross)
        + total_y * total_y * int(sums.trials_sq)
    )
    if numerator == 0:
        low, high = wilson_interval(round(rate * sums.clusters), sums.clusters, confidence)
        return IntervalEstimate(rate, low, high, 0.0, nan, sums.clusters)
    squares = numerator / (total_n * total_n)  # sum of squared residuals, one rounding
    se = math.sqrt(sums.clusters / (sums.clusters - 1) * squares) / total_n
    t_crit = float(t_ppf(0.5 + confidence / 2, sums.clusters - 1))
    return IntervalEstimate(
        rate, max(0.0, rate - t_crit * se), min(1.0, rate + t_crit * se), se, nan, sums.clusters
    )


def clustered_rate(
    events: ArrayLike, trials: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    r"""A ratio-of-totals rate with a cluster-robust (linearization) interval.

    With ``y_c`` events in ``n_c`` trials in cluster ``c`` (a session), ``C`` clusters
    with trials, :math:`R = \sum_c y_c / \sum_c n_c` and

    .. math::

        \widehat{se}^2(R) = \frac{C}{C - 1}\,
            \frac{\sum_c (y_c - R\,n_c)^2}{\bigl(\sum_c n_c\bigr)^2},

    the ratio estimator's variance under cluster sampling (Cochran, *Sampling Techniques*,
    3rd ed., 1977, eq. 6.13 with the finite-population factor dropped). The interval is
    :math:`R \pm t_{C-1}\,\widehat{se}` clipped to [0, 1]. When every cluster's rate is
    the same (``se = 0``: most often no events at all), the interval is Wilson's with each
    cluster counted as one trial, a conservative bound that does not collapse to a point.
    The p-value is left NaN: a rate is described here, not tested.

    Parameters
    ----------
    events : array_like, shape (C,)
        Events per cluster.
    trials : array_like, shape (C,)
        Trials per cluster.
    confidence : float
        Interval level.

    Returns
    -------
    IntervalEstimate
        The rate, its interval and standard error, p-value NaN, and the clusters with trials.
    """
    y = np.asarray(events, dtype=float).ravel()
    n = np.asarray(trials, dtype=float).ravel()
    keep = n > 0
    y, n = y[keep], n[keep]
    n_clusters = int(y.size)
    nan = float("nan")
    if n_clusters == 0:
        return IntervalEstimate(nan, nan, nan, nan, nan, 0)
    rate = float(y.sum() / n.sum())
    if n_clusters < 2:
        return IntervalEstimate(rate, nan, nan, nan, nan, n_clusters)
    residual = y - rate * n
    se = float(np.sqrt(n_clusters / (n_clusters - 1) * np.sum(residual**2)) / n.sum())
    if se == 0.0:
        low, high = wilson_interval(round(rate * n_clusters), n_clusters, confidence)
        return IntervalEstimate(rate, low, high, 0.0, nan, n_clusters)
    t_crit = float(t_ppf(0.5 + confidence / 2, n_clusters - 1))
    return IntervalEstimate(
        rate, max(0.0, rate - t_crit * se), min(1.0, rate + t_crit * se), se, nan, n_clusters
    )
