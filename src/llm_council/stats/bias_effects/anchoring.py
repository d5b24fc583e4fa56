"""Anchoring within one review: how a score relates to the scores given before it.

Scores of one review are laid out by display slot (``scores_in_order[review, slot]``,
NaN where the slot holds no scored answer). Two quantities per scored slot ``i >= 1``:

- the *running-mean deviation* ``score_i - mean(score_0..score_{i-1})`` (the design's
  definition of anchoring correlates it with ``i``);
- the *previous mean* ``mean(score_0..score_{i-1})``, which an anchored judge is pulled
  toward.

Both are over the previously *scored* slots only. The anchoring *test* does not use the
reviewer's own earlier scores (they carry its session-level leniency, which its paired
deviation carries too): it uses :func:`earlier_minus_rest_mean` of the *other reviewers'
consensus* on the answers in the review (see ``bias_audit.report.anchoring``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.dense_ids import dense_codes
from llm_council.stats.inference.pooling import IntervalEstimate
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf


def _running_totals(values: np.ndarray) -> np.ndarray:
    """``np.cumsum(values, axis=-1)`` (booleans counted as int64): the same additions in the
    same order, one slot column at a time, several times faster than numpy's accumulate
    along a last axis of a few slots (these tables have one cell per record)."""
    totals = np.empty(values.shape, dtype=np.int64 if values.dtype == bool else values.dtype)
    if values.shape[-1]:
        totals[..., 0] = values[..., 0]
    for slot in range(1, values.shape[-1]):
        np.add(totals[..., slot - 1], values[..., slot], out=totals[..., slot])
    return totals


def previous_scores_mean(scores_in_order: ArrayLike) -> np.ndarray:
    """Mean of the scores at earlier slots of the same review (NaN at the first scored slot)."""
    values = np.asarray(scores_in_order, dtype=float)
    observed = np.isfinite(values)
    filled = np.where(observed, values, 0.0)
    # running sums and counts minus the entry itself, in place (these tables are as large
    # as the store: one cell per record)
    before_sum = _running_totals(filled)
    before_sum -= filled
    del filled
    before_count = _running_totals(observed)
    before_count -= observed
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.divide(before_sum, before_count, out=before_sum)
    return np.where(observed & (before_count > 0), mean, np.nan)


def earlier_minus_rest_mean(values_in_order: ArrayLike) -> np.ndarray:
    r"""Mean of the earlier entries minus the mean of all the other entries of the same row.

    For row values :math:`c_0, \dots, c_{n-1}` (NaN = absent) and an observed slot ``i``
    with at least one observed earlier slot,

    .. math::

        x_i = \frac{1}{|E_i|}\sum_{j \in E_i} c_j
              - \frac{1}{|O_i|}\sum_{j \in O_i} c_j,

    with :math:`E_i` the observed slots before ``i`` and :math:`O_i` every observed slot but
    ``i``. A shift added to the whole row cancels, and :math:`c_i` itself never enters
    :math:`x_i`. NaN where ``i`` is unobserved, has no observed earlier slot, or is the last
    observed slot (there :math:`E_i = O_i` and ``x`` would be 0 by construction; with two
    observed slots that leaves nothing).

    Parameters
    ----------
    values_in_order : array_like, shape (..., n)
        Rows of values in display order, NaN for absent.

    Returns
    -------
    ndarray, same shape
        x_i per entry.
    """
    values = np.asarray(values_in_order, dtype=float)
    observed = np.isfinite(values)
    filled = np.where(observed, values, 0.0)
    rest_sum = filled.sum(axis=-1, keepdims=True) - filled
    del filled
    rest_count = observed.sum(axis=-1, keepdims=True) - observed
    before_count = _running_totals(observed)
    before_count -= observed
    informative = rest_count > before_count
    del before_count, observed
    with np.errstate(invalid="ignore", divide="ignore"):
        rest_mean = np.divide(rest_sum, rest_count, out=rest_sum)
    del rest_count
    difference = previous_scores_mean(values)
    difference -= rest_mean
    return np.where(informative, difference, np.nan)


def running_mean_deviation(scores_in_order: ArrayLike) -> np.ndarray:
    """``score_i - mean(earlier scores of the review)``; NaN where undefined.

    Parameters
    ----------
    scores_in_order : array_like, shape (..., n)
        Each review's scores in display order, NaN for absent.

    Returns
    -------
    ndarray, same shape
        Each score minus the mean of the review's earlier scores.
    """
    values = np.asarray(scores_in_order, dtype=float)
    return values - previous_scores_mean(values)


def _pearson_from_sums(sums: np.ndarray) -> np.ndarray:
    """Pearson r from rows of (n, Sx, Sy, Sxx, Syy, Sxy)."""
    n, sx, sy, sxx, syy, sxy = (sums[..., i] for i in range(6))
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = sxy - sx * sy / n
        var_x = sxx - sx * sx / n
        var_y = syy - sy * sy / n
        return np.asarray(cov / np.sqrt(var_x * var_y))


def cluster_jackknife_correlation(
    x: ArrayLike, y: ArrayLike, cluster: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    r"""Pearson r over all pairs, with a delete-one-cluster jackknife t interval and test.

    With :math:`r_{(-c)}` the correlation leaving cluster ``c`` out and ``C`` clusters,

    .. math::

        \widehat{se}^2 = \frac{C - 1}{C} \sum_c \bigl(r_{(-c)} - \bar r_{(\cdot)}\bigr)^2,

    the interval is :math:`r \pm t_{C-1}\,\widehat{se}` and the p-value that of
    :math:`r / \widehat{se}` on ``C - 1`` degrees of freedom (Quenouille 1956; Efron &
    Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 11). Sessions are the
    clusters: pairs from one session are not independent. Pairs with a NaN are dropped.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        The pairs.
    cluster : array_like of int, shape (n,)
        Each pair's cluster (session).
    confidence : float
        Interval level.

    Returns
    -------
    IntervalEstimate
        r with its jackknife interval, standard error, p-value and C.
    """
    x_values = np.asarray(x, dtype=float).ravel()
    y_values = np.asarray(y, dtype=float).ravel()
    cluster_ids = np.asarray(cluster).ravel()
    keep = np.isfinite(x_values) & np.isfinite(y_values)
    x_values, y_values, cluster_ids = x_values[keep], y_values[keep], cluster_ids[keep]
    nan = float("nan")
    _, index = dense_codes(cluster_ids)
    n_clusters = int(index.max()) + 1 if index.size else 0
    if n_clusters < 3:
        return IntervalEstimate(nan, nan, nan, nan, nan, n_clusters)
    terms = (x_values, y_values, x_values**2, y_values**2, x_values * y_values)
    # one bincount per sum: the same additions, in the same order, as np.add.at
    per_cluster = np.empty((n_clusters, 1 + len(terms)))
    per_cluster[:, 0] = np.bincount(index, minlength=n_clusters)  # n: counted, not summed
    for column, term in enumerate(terms, start=1):
        per_cluster[:, column] = np.bincount(index, weights=term, minlength=n_clusters)
    total = per_cluster.sum(axis=0)
    r = float(_pearson_from_sums(total))
    leave_out = _pearson_from_sums(total[None, :] - per_cluster)
    if not np.isfinite(r) or not np.all(np.isfinite(leave_out)):
        return IntervalEstimate(r, nan, nan, nan, nan, n_clusters)
    se = float(np.sqrt((n_clusters - 1) / n_clusters * np.sum((leave_out - leave_out.mean()) ** 2)))
    if se == 0.0:
        return IntervalEstimate(r, r, r, 0.0, nan, n_clusters)
    t_crit = float(t_ppf(0.5 + confidence / 2, n_clusters - 1))
    p_value = float(2 * t_sf(abs(r / se), n_clusters - 1))
    return IntervalEstimate(
        r, max(-1.0, r - t_crit * se), min(1.0, r + t_crit * se), se, p_value, n_clusters
    )
