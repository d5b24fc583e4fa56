"""Least squares with absorbed fixed effects and session-clustered (CR1) standard errors.

The joint bias model regresses each score on reviewer, position, self-review and length
terms with one fixed effect per answer (session, model). The answer effects are absorbed
by demeaning every column within its answer (Frisch-Waugh-Lovell), so a million records
with 200,000 answers need no 200,000-column design. Answers are nested in sessions, and
the errors of one session are correlated, so the covariance is the cluster sandwich.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats


def demean_within_groups(values: ArrayLike, group_index: ArrayLike) -> np.ndarray:
    """Subtract each group's mean from its rows (the within transformation).

    .. math:: \\tilde x_{i} = x_i - \\frac{1}{n_g}\\sum_{j \\in g(i)} x_j

    Frisch & Waugh (1933), Econometrica 1(4); Lovell (1963), JASA 58. ``group_index`` holds
    integer ids ``0..G-1``; ``values`` is a vector or an ``(n, k)`` matrix.
    """
    x = np.asarray(values, dtype=float)
    groups = np.asarray(group_index, dtype=np.int64)
    n_groups = int(groups.max()) + 1 if groups.size else 0
    counts = np.bincount(groups, minlength=n_groups).astype(float)
    if x.ndim == 1:
        return x - (np.bincount(groups, weights=x, minlength=n_groups) / counts)[groups]
    out = np.empty_like(x)
    for column in range(x.shape[1]):
        sums = np.bincount(groups, weights=x[:, column], minlength=n_groups)
        out[:, column] = x[:, column] - (sums / counts)[groups]
    return out


@dataclass(frozen=True)
class ClusteredOlsFit:
    """Coefficients, CR1 covariance and the sizes the degrees of freedom came from."""

    coefficients: np.ndarray
    covariance: np.ndarray
    residuals: np.ndarray
    n_observations: int
    n_clusters: int

    @property
    def standard_errors(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))

    def confidence_intervals(self, confidence: float = 0.95) -> np.ndarray:
        """Intervals from a t distribution on ``C - 1`` degrees of freedom (Cameron & Miller)."""
        t_crit = float(scipy_stats.t.ppf(0.5 + confidence / 2, max(self.n_clusters - 1, 1)))
        half = t_crit * self.standard_errors
        return np.column_stack([self.coefficients - half, self.coefficients + half])


def ols_cluster_robust(
    design: ArrayLike, response: ArrayLike, cluster_index: ArrayLike
) -> ClusteredOlsFit:
    """OLS with the CR1 cluster-robust sandwich covariance.

    .. math::

        \\hat\\beta = (X^\\top X)^{-1} X^\\top y,\\qquad
        \\widehat V = \\frac{C}{C-1}\\frac{N-1}{N-K}(X^\\top X)^{-1}
        \\Big(\\sum_c X_c^\\top \\hat e_c \\hat e_c^\\top X_c\\Big)(X^\\top X)^{-1}

    Liang & Zeger (1986), Biometrika 73(1); small-sample factor CR1 as in Stata and Cameron &
    Miller (2015), J. Human Resources 50(2), eq. (12). When fixed effects were absorbed and
    they are nested within clusters, ``K`` counts only the columns of ``design`` (Cameron &
    Miller, section III.B), which is what is done here.
    """
    x = np.asarray(design, dtype=float)
    y = np.asarray(response, dtype=float)
    clusters = np.asarray(cluster_index, dtype=np.int64)
    n, k = x.shape
    xtx_inverse = np.linalg.pinv(x.T @ x)
    coefficients = xtx_inverse @ (x.T @ y)
    residuals = y - x @ coefficients
    n_clusters = int(clusters.max()) + 1 if clusters.size else 0
    scores = np.zeros((n_clusters, k))
    weighted = x * residuals[:, None]
    for column in range(k):
        scores[:, column] = np.bincount(clusters, weights=weighted[:, column], minlength=n_clusters)
    present = np.bincount(clusters, minlength=n_clusters) > 0
    c = int(present.sum())
    meat = scores.T @ scores
    factor = (c / max(c - 1, 1)) * ((n - 1) / max(n - k, 1))
    covariance = factor * xtx_inverse @ meat @ xtx_inverse
    return ClusteredOlsFit(coefficients, covariance, residuals, n, c)


@dataclass(frozen=True)
class WaldResult:
    """A joint test that a set of linear combinations of the coefficients is zero."""

    f_statistic: float
    df_numerator: int
    df_denominator: int
    p_value: float


def wald_test(coefficients: ArrayLike, covariance: ArrayLike, n_clusters: int) -> WaldResult:
    """Wald F test of ``beta = 0`` for the given sub-vector and its covariance block.

    .. math:: F = \\hat\\beta^\\top \\widehat V^{-1} \\hat\\beta / q \\sim F_{q,\\,C-1}

    The ``C - 1`` denominator degrees of freedom follow Stata's ``test`` after clustered
    regression (Cameron & Miller 2015, section VI.B).
    """
    beta = np.atleast_1d(np.asarray(coefficients, dtype=float))
    v = np.atleast_2d(np.asarray(covariance, dtype=float))
    q = beta.size
    df_den = max(n_clusters - 1, 1)
    f_statistic = float(beta @ np.linalg.pinv(v) @ beta) / q
    return WaldResult(f_statistic, q, df_den, float(scipy_stats.f.sf(f_statistic, q, df_den)))
