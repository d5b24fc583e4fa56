"""Reasoning-chain bias: how a judge's verdict moves with the length of its own rationale.

Two pure estimators over plain arrays, sessions (or questions) as clusters:

- :func:`cluster_jackknife_slope`: the least-squares slope of ``y`` on ``x`` with a
  delete-one-cluster jackknife interval. The bias report regresses a reviewer's paired
  deviation (its score minus the other reviewers' mean on the same answer, which holds
  the answer's quality fixed) on the log of its rationale's length.
- :func:`logistic_slope`: the slope of a logistic regression of a 0/1 outcome (the judge
  disagreed with the human label) on ``x`` (log rationale length), with a cluster-robust
  sandwich interval; calibrate uses it to ask whether longer rationales are more often wrong.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.inference.pooling import IntervalEstimate
from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf


def _slope_from_sums(sums: np.ndarray) -> np.ndarray:
    """OLS slope from rows of (n, Sx, Sy, Sxx, Sxy)."""
    n, sx, sy, sxx, sxy = (sums[..., i] for i in range(5))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((sxy - sx * sy / n) / (sxx - sx * sx / n))


def _nan(n_clusters: int) -> IntervalEstimate:
    nan = float("nan")
    return IntervalEstimate(nan, nan, nan, nan, nan, n_clusters)


def cluster_jackknife_slope(
    x: ArrayLike, y: ArrayLike, cluster: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    r"""OLS slope of ``y`` on ``x`` with a delete-one-cluster jackknife t interval and test.

    :math:`b = \sum (x - \bar x)(y - \bar y) / \sum (x - \bar x)^2`; with :math:`b_{(-c)}`
    the slope leaving cluster ``c`` out and ``C`` clusters,

    .. math::

        \widehat{se}^2 = \frac{C - 1}{C} \sum_c \bigl(b_{(-c)} - \bar b_{(\cdot)}\bigr)^2,

    the interval is :math:`b \pm t_{C-1}\,\widehat{se}` and the p-value that of
    :math:`b / \widehat{se}` on ``C - 1`` degrees of freedom (Quenouille 1956; Efron &
    Tibshirani 1993, ch. 11). Pairs with a NaN are dropped; fewer than 3 clusters, or an
    ``x`` that does not vary once any cluster is left out, give NaN.

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
        b with its jackknife interval, standard error, p-value and C.
    """
    x_values = np.asarray(x, dtype=float).ravel()
    y_values = np.asarray(y, dtype=float).ravel()
    cluster_ids = np.asarray(cluster).ravel()
    keep = np.isfinite(x_values) & np.isfinite(y_values)
    x_values, y_values, cluster_ids = x_values[keep], y_values[keep], cluster_ids[keep]
    _, index = np.unique(cluster_ids, return_inverse=True)
    n_clusters = int(index.max()) + 1 if index.size else 0
    if n_clusters < 3:
        return _nan(n_clusters)
    terms = np.stack(
        [np.ones_like(x_values), x_values, y_values, x_values**2, x_values * y_values], axis=1
    )
    per_cluster = np.zeros((n_clusters, 5))
    np.add.at(per_cluster, index, terms)
    return jackknife_slope_from_cluster_sums(per_cluster, confidence)


def jackknife_slope_from_cluster_sums(
    per_cluster: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    """:func:`cluster_jackknife_slope` from each cluster's sums ``(n, Sx, Sy, Sxx, Sxy)``
    (one row per cluster): the statistic needs nothing else, so the sums of disjoint
    sets of clusters, concatenated, give the slope of their union."""
    sums = np.asarray(per_cluster, dtype=float).reshape(-1, 5)
    n_clusters = sums.shape[0]
    if n_clusters < 3:
        return _nan(n_clusters)
    total = sums.sum(axis=0)
    slope = float(_slope_from_sums(total))
    leave_out = _slope_from_sums(total[None, :] - sums)
    if not np.isfinite(slope) or not np.all(np.isfinite(leave_out)):
        return _nan(n_clusters)
    se = float(np.sqrt((n_clusters - 1) / n_clusters * np.sum((leave_out - leave_out.mean()) ** 2)))
    if se == 0.0:
        return IntervalEstimate(slope, slope, slope, 0.0, float("nan"), n_clusters)
    t_crit = float(t_ppf(0.5 + confidence / 2, n_clusters - 1))
    p_value = float(2 * t_sf(abs(slope / se), n_clusters - 1))
    return IntervalEstimate(
        slope, slope - t_crit * se, slope + t_crit * se, se, p_value, n_clusters
    )


def _logistic_fit(design: np.ndarray, outcome: np.ndarray) -> np.ndarray | None:
    """Maximum-likelihood coefficients by Newton-Raphson, or None without convergence."""
    beta = np.zeros(design.shape[1])
    for _ in range(50):
        eta = np.clip(design @ beta, -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(-eta))
        gradient = design.T @ (outcome - p)
        hessian = design.T @ (design * (p * (1 - p))[:, None])
        try:
            step = np.linalg.solve(hessian, gradient)
        except np.linalg.LinAlgError:
            return None
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            return beta if np.all(np.abs(beta) < 25) else None  # separated: no finite MLE
    return None


def logistic_slope(
    x: ArrayLike, outcome: ArrayLike, cluster: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    r"""Slope of ``logit P(outcome = 1) = a + b x`` with a cluster-robust interval.

    The maximum-likelihood fit (Newton-Raphson) with the CR1 sandwich covariance

    .. math::

        V = \frac{C}{C - 1} H^{-1} \Bigl(\sum_c s_c s_c^\top\Bigr) H^{-1},
        \quad s_c = \sum_{i \in c} x_i (y_i - p_i),\quad H = X^\top W X,

    (Liang & Zeger 1986; Cameron & Miller 2015, "A Practitioner's Guide to
    Cluster-Robust Inference", J. Human Resources 50(2), section IV) and a t interval on
    ``C - 1`` degrees of freedom. With every cluster of size one this is the HC1 robust
    interval of an ordinary logistic regression. NaN when the fit does not exist (fewer
    than 3 clusters, an outcome with one value, or complete separation).

    Parameters
    ----------
    x : array_like, shape (n,)
        The regressor.
    outcome : array_like, shape (n,)
        0 or 1.
    cluster : array_like of int, shape (n,)
        Each observation's cluster (session).
    confidence : float
        Interval level.

    Returns
    -------
    IntervalEstimate
        b with its interval, CR1 standard error, p-value and C.
    """
    x_values = np.asarray(x, dtype=float).ravel()
    y_values = np.asarray(outcome, dtype=float).ravel()
    cluster_ids = np.asarray(cluster).ravel()
    keep = np.isfinite(x_values) & np.isfinite(y_values)
    x_values, y_values, cluster_ids = x_values[keep], y_values[keep], cluster_ids[keep]
    _, index = np.unique(cluster_ids, return_inverse=True)
    n_clusters = int(index.max()) + 1 if index.size else 0
    if n_clusters < 3 or np.unique(y_values).size < 2 or np.ptp(x_values) == 0:
        return _nan(n_clusters)
    design = np.column_stack([np.ones_like(x_values), x_values])
    beta = _logistic_fit(design, y_values)
    if beta is None:
        return _nan(n_clusters)
    p = 1.0 / (1.0 + np.exp(-(design @ beta)))
    hessian = design.T @ (design * (p * (1 - p))[:, None])
    scores = np.zeros((n_clusters, 2))
    np.add.at(scores, index, design * (y_values - p)[:, None])
    bread = np.linalg.inv(hessian)
    covariance = n_clusters / (n_clusters - 1) * bread @ (scores.T @ scores) @ bread
    se = float(np.sqrt(covariance[1, 1]))
    slope = float(beta[1])
    if not np.isfinite(se) or se == 0.0:
        return _nan(n_clusters)
    t_crit = float(t_ppf(0.5 + confidence / 2, n_clusters - 1))
    p_value = float(2 * t_sf(abs(slope / se), n_clusters - 1))
    return IntervalEstimate(
        slope, slope - t_crit * se, slope + t_crit * se, se, p_value, n_clusters
    )
