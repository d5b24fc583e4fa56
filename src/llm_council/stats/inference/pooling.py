"""Pooling statistics across sessions, with sessions (not records) as the unit of analysis.

Within one session a response's length repeats once per reviewer and one reviewer's scores
share its mood, so records are not independent. These functions take one value per
session (cluster) and make their intervals from the spread *between* sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.distribution_functions import f_sf, normal_ppf, t_ppf, t_sf

_R_CLIP = 1.0 - 1e-12  # atanh(+-1) is infinite; a perfectly correlated session is clipped


@dataclass(frozen=True)
class IntervalEstimate:
    """A point estimate with a two-sided interval, its standard error and test against 0."""

    estimate: float
    ci_low: float
    ci_high: float
    standard_error: float
    p_value: float
    n_clusters: int

    def excludes_zero(self) -> bool:
        return bool(self.ci_low > 0.0 or self.ci_high < 0.0)


def _nan_estimate(n_clusters: int) -> IntervalEstimate:
    nan = float("nan")
    return IntervalEstimate(nan, nan, nan, nan, nan, n_clusters)


def cluster_mean_interval(cluster_values: ArrayLike, confidence: float = 0.95) -> IntervalEstimate:
    """Mean of one value per cluster with a Student-t interval on ``C - 1`` degrees of freedom.

    .. math:: \\bar v \\pm t_{1-\\alpha/2,\\,C-1}\\, s / \\sqrt{C}

    Student (1908), "The probable error of a mean", Biometrika 6(1). Equals
    ``scipy.stats.ttest_1samp`` and ``scipy.stats.t.interval`` on the same values.
    """
    values = np.asarray(cluster_values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return _nan_estimate(values.size)
    return mean_interval_from_moments(
        float(values.mean()), float(values.std(ddof=1)), values.size, confidence
    )


def mean_interval_from_moments(
    mean: float, sd: float, n: int, confidence: float = 0.95
) -> IntervalEstimate:
    """The Student-t interval of :func:`cluster_mean_interval` from a mean, sd and count.

    Lets SQL compute the moments (``avg``, ``stddev_samp``, ``count``) over the cluster
    values so only three numbers reach Python.

    Parameters
    ----------
    mean, sd : float
        Mean and sample standard deviation of the n cluster values.
    n : int
        Number of clusters.
    confidence : float
        Interval level.

    Returns
    -------
    IntervalEstimate
        The mean with its t interval (n - 1 df), standard error, p-value of mean = 0 and n.
    """
    if n < 2 or not np.isfinite(mean) or not np.isfinite(sd):
        return _nan_estimate(n)
    se = float(sd / np.sqrt(n))
    if se == 0.0:
        return IntervalEstimate(mean, mean, mean, 0.0, 0.0 if mean != 0 else 1.0, n)
    t_crit = float(t_ppf(0.5 + confidence / 2, n - 1))
    p_value = float(2 * t_sf(abs(mean / se), n - 1))
    return IntervalEstimate(mean, mean - t_crit * se, mean + t_crit * se, se, p_value, n)


def fisher_z_pooled_correlation(
    session_r: ArrayLike, session_weights: ArrayLike, confidence: float = 0.95
) -> IntervalEstimate:
    """Pool per-session correlations on Fisher's z scale with a between-session (robust) variance.

    .. math::

        z_s = \\operatorname{atanh} r_s,\\quad \\bar z = \\frac{\\sum w_s z_s}{\\sum w_s},\\quad
        \\widehat{V}(\\bar z) = \\frac{C}{C-1}\\,\\frac{\\sum w_s^2 (z_s-\\bar z)^2}{(\\sum w_s)^2}

    and the interval :math:`\\tanh(\\bar z \\pm t_{C-1}\\sqrt{\\widehat V})`. Fisher (1921),
    Metron 1; pooling as in Hedges & Olkin (1985), *Statistical Methods for Meta-Analysis*,
    ch. 11; the variance is the cluster sandwich of Cameron & Miller (2015), J. Human Resources
    50(2), so it does not assume the ``n_s - 3`` records of a session are independent.

    Parameters
    ----------
    session_r : array_like, shape (C,)
        One correlation per session.
    session_weights : array_like, shape (C,)
        Each session's weight (e.g. its pair count minus 3).
    confidence : float
        Interval level.

    Returns
    -------
    IntervalEstimate
        Pooled correlation with its interval, the standard error on the z scale, p-value and
        the number of sessions C.
    """
    r = np.asarray(session_r, dtype=float)
    w = np.asarray(session_weights, dtype=float)
    usable = np.isfinite(r) & np.isfinite(w) & (w > 0)
    r, w = r[usable], w[usable]
    n = r.size
    if n < 2:
        return _nan_estimate(n)
    z = np.arctanh(np.clip(r, -_R_CLIP, _R_CLIP))
    w_sum = w.sum()
    z_bar = float((w * z).sum() / w_sum)
    variance = n / (n - 1) * float((w**2 * (z - z_bar) ** 2).sum()) / w_sum**2
    se = float(np.sqrt(variance))
    if se == 0.0:
        value = float(np.tanh(z_bar))
        return IntervalEstimate(value, value, value, 0.0, 1.0 if z_bar == 0 else 0.0, n)
    t_crit = float(t_ppf(0.5 + confidence / 2, n - 1))
    p_value = float(2 * t_sf(abs(z_bar / se), n - 1))
    return IntervalEstimate(
        float(np.tanh(z_bar)),
        float(np.tanh(z_bar - t_crit * se)),
        float(np.tanh(z_bar + t_crit * se)),
        se,
        p_value,
        n,
    )


def fisher_z_interval(r: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Classic interval for one correlation of ``n`` independent pairs (normal on Fisher's z).

    .. math:: \\tanh\\left(\\operatorname{atanh} r \\pm z_{1-\\alpha/2}/\\sqrt{n-3}\\right)

    Fisher (1921). Kept to show what the record-count interval of the reference design does
    when the pairs are not independent; the report does not use it for pooled data.

    Parameters
    ----------
    r : float
        The correlation.
    n : int
        Number of independent pairs it was computed from.
    confidence : float
        Interval level.

    Returns
    -------
    tuple of float
        ``(low, high)``.
    """
    if n <= 3:
        return float("nan"), float("nan")
    z = float(np.arctanh(np.clip(r, -_R_CLIP, _R_CLIP)))
    half = float(normal_ppf(0.5 + confidence / 2)) / np.sqrt(n - 3)
    return float(np.tanh(z - half)), float(np.tanh(z + half))


@dataclass(frozen=True)
class HotellingResult:
    """Hotelling's one-sample T^2 test that a mean vector is zero."""

    t_squared: float
    f_statistic: float
    df_numerator: int
    df_denominator: int
    p_value: float


def hotelling_one_sample(cluster_vectors: ArrayLike) -> HotellingResult:
    """Test ``E[x] = 0`` for ``n`` i.i.d. ``p``-vectors (one per cluster).

    .. math::

        T^2 = n\\,\\bar x^\\top S^{-1} \\bar x,\\qquad
        F = \\frac{n-p}{p(n-1)} T^2 \\sim F_{p,\\,n-p}

    Hotelling (1931), Ann. Math. Statist. 2(3). With ``p = 1`` it is the square of the
    one-sample t statistic (same p-value as ``scipy.stats.ttest_1samp``).
    """
    x = np.asarray(cluster_vectors, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    x = x[np.all(np.isfinite(x), axis=1)]
    n, p = x.shape
    if n <= p:
        nan = float("nan")
        return HotellingResult(nan, nan, p, max(n - p, 0), nan)
    mean = x.mean(axis=0)
    covariance = np.atleast_2d(np.cov(x, rowvar=False))
    t_squared = float(n * mean @ np.linalg.pinv(covariance) @ mean)
    f_statistic = (n - p) / (p * (n - 1)) * t_squared
    p_value = float(f_sf(f_statistic, p, n - p))
    return HotellingResult(t_squared, f_statistic, p, n - p, p_value)
